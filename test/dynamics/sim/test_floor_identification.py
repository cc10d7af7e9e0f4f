"""Floor identification (docs/mfm.md eqs. 243-246): the path prediction starts at the first
measured pose and follows the crawler; the fit recovers a floor from paths (and joints) the
crawler made on it (with the pose sensor's and the pots' noise) and says why it cannot fit."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest

from snake_bringup.identification.floor import CRAWLS, crawl
from snake_dynamics.errors import IdentificationError
from snake_dynamics.gaits import make_gait
from snake_dynamics.ground import Ground
from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import NOMINAL, ServoModel
from snake_dynamics.sim import random_plant
from snake_dynamics.sim.floor_identification import (
    PathRecording,
    aligned_error,
    aligned_path,
    coarse_search,
    fit_ground,
    joint_error,
    level_search,
    path_error,
    predict_crawl,
    predict_path,
    robust_cost,
)
from snake_dynamics.sim.identification import in_parallel, seen_from_the_command
from snake_dynamics.sim.plant import RANDOM_POSE_SENSOR, Potentiometer, plant_from_dict
from snake_ros.paths import robot_config

MODEL = SnakeModel.uniform(4, 0.1, 0.1, 0.02, axes="xz")
SERVO = ServoModel.uniform(NOMINAL, 4)
TRUE = Ground(mu_along=0.13, mu_across=0.42)


def take(gait: str, floor: Ground, noise: float, seed: int, yaw: float = 0.0) -> PathRecording:
    """A 3 s crawl of ``gait`` on ``floor``: the reference at 50 Hz, the marker at 100 Hz."""
    trajectory = make_gait(gait, MODEL, amplitude=0.6, frequency=1.0)
    t = np.arange(0.0, 3.0 + 1e-9, 0.02)
    reference = np.array([trajectory(float(x)).q for x in t])
    pose_t = np.arange(0.0, 2.95, 0.01)
    start = np.array([[0.3, -0.2]])
    blank = PathRecording(
        t, reference, pose_t, np.repeat(start, pose_t.size, 0), np.full(pose_t.size, yaw)
    )
    xy = predict_path(MODEL, SERVO, floor, blank)
    rng = np.random.default_rng(seed)
    return dataclasses.replace(blank, xy=xy + rng.normal(0.0, noise, xy.shape))


def test_the_prediction_starts_at_the_measured_pose_and_turns_with_its_heading() -> None:
    straight = take("sidewinding", TRUE, 0.0, 0)
    turned = take("sidewinding", TRUE, 0.0, 0, yaw=np.pi / 2)
    np.testing.assert_allclose(straight.xy[0], [0.3, -0.2], atol=1e-12)
    d0, d1 = straight.xy - straight.xy[0], turned.xy - turned.xy[0]
    rotated = np.column_stack([-d0[:, 1], d0[:, 0]])  # the same crawl turned 90 deg
    np.testing.assert_allclose(d1, rotated, atol=1e-9)
    assert np.linalg.norm(d0[-1]) > 0.05  # it crawls
    assert path_error(straight.xy, straight).max() == 0.0


@pytest.mark.slow  # tens of seconds: make test runs it, make unit does not
def test_the_fit_recovers_the_floor_from_noisy_paths() -> None:
    takes = [take("sidewinding", TRUE, 5e-4, 1), take("serpenoid", TRUE, 5e-4, 2)]
    fit = fit_ground(MODEL, SERVO, takes, Ground())
    assert fit.ground.mu_along == pytest.approx(TRUE.mu_along, rel=0.05)
    assert fit.ground.mu_across == pytest.approx(TRUE.mu_across, rel=0.05)
    assert fit.ground.stiffness == Ground().stiffness  # the others are kept
    assert np.all(fit.rms_after < 1e-3) and np.all(fit.rms_after < fit.rms_before)
    assert set(fit.stderr) == {"mu_along", "mu_across"}


def with_joints(recording: PathRecording, noise: float, seed: int) -> PathRecording:
    """The take with its joints as the crawler moved them on :data:`TRUE`, each pot off by
    its own constant and ``noise`` [rad] RMS."""
    q = predict_crawl(MODEL, SERVO, TRUE, recording).q
    rng = np.random.default_rng(seed)
    offsets = rng.normal(0.0, 0.02, q.shape[1])
    return dataclasses.replace(recording, measured=q + offsets + rng.normal(0.0, noise, q.shape))


def test_the_joint_error_is_a_length_with_each_pot_s_offset_removed() -> None:
    """Eq. 246: L̄ (q_m - q̂) with each joint's mean removed; the prediction's path is
    predict_path's."""
    one = take("serpenoid", TRUE, 0.0, 0)
    predicted = predict_crawl(MODEL, SERVO, TRUE, one)
    np.testing.assert_array_equal(predicted.xy, predict_path(MODEL, SERVO, TRUE, one))
    assert predicted.q.shape == one.reference.shape
    offset = dataclasses.replace(one, measured=predicted.q + np.array([0.01, -0.02, 0.0, 0.3]))
    assert np.abs(joint_error(MODEL, predicted.q, offset)).max() < 1e-12
    step = predicted.q.copy()
    step[one.t >= 1.5, 2] += 0.01  # joint 3 off by 10 mrad for the second half
    error = joint_error(MODEL, predicted.q, dataclasses.replace(one, measured=step))
    assert error.shape == (step.size,)
    assert np.sqrt(np.mean(error**2)) == pytest.approx(0.1 * 0.005 / np.sqrt(4), rel=0.02)
    assert joint_error(MODEL, predicted.q, one).size == 0  # no pots: the path alone
    with pytest.raises(IdentificationError, match="measured joints must be finite"):
        dataclasses.replace(one, measured=predicted.q[:, :3])


@pytest.mark.slow  # tens of seconds: make test runs it, make unit does not
def test_the_fit_recovers_the_floor_from_noisy_paths_and_joints() -> None:
    takes = [
        with_joints(take("sidewinding", TRUE, 5e-4, 1), 2e-3, 3),
        with_joints(take("serpenoid", TRUE, 5e-4, 2), 2e-3, 4),
    ]
    fit = fit_ground(MODEL, SERVO, takes, Ground())
    assert fit.ground.mu_along == pytest.approx(TRUE.mu_along, rel=0.05)
    assert fit.ground.mu_across == pytest.approx(TRUE.mu_across, rel=0.05)
    assert np.all(fit.rms_after < 1e-3) and np.all(fit.rms_after < fit.rms_before)
    assert np.all(fit.joint_rms_after < 2.2e-3)  # down to the pots' noise
    assert np.all(fit.joint_rms_after < fit.joint_rms_before)


def test_the_robust_cost_is_quadratic_near_zero_and_linear_far_off() -> None:
    """Eq. 245's soft-L1 loss: r^2 for r << s, 2 s |r| - 2 s^2 for r >> s; plain squares
    for s = inf."""
    small, large = np.array([1e-5, -2e-5]), np.array([1.0, -2.0])
    assert robust_cost(small, 0.005) == pytest.approx(float(np.sum(small**2)), rel=1e-4)
    expected = float(np.sum(2 * 0.005 * np.abs(large) - 2 * 0.005**2))
    assert robust_cost(large, 0.005) == pytest.approx(expected, rel=1e-4)
    assert robust_cost(large, np.inf) == 5.0


def test_bad_fits_are_refused_with_a_reason() -> None:
    one = take("serpenoid", TRUE, 0.0, 0)
    with pytest.raises(IdentificationError, match="fit some of"):
        fit_ground(MODEL, SERVO, [one], Ground(), fitted=("stiffness",))
    with pytest.raises(IdentificationError, match="at least one crawling take"):
        fit_ground(MODEL, SERVO, [], Ground())
    with pytest.raises(IdentificationError, match="must lie within the reference"):
        dataclasses.replace(one, pose_t=one.pose_t + 1.0)


def test_a_take_may_start_rolled_about_the_body() -> None:
    """A straight chain of cylinders rests at any roll about its length; rolled half a turn
    its yaw joints bend the other way, and the serpenoid's path is the flat one mirrored
    across the body's axis (e2, the world's y at yaw 0): x - x_0 changes sign."""
    flat = take("serpenoid", TRUE, 0.0, 0)
    half = dataclasses.replace(flat, orientation=np.array([0.0, 1.0, 0.0, 0.0]))
    mirrored = predict_path(MODEL, SERVO, TRUE, half)
    d_flat, d_half = flat.xy - flat.xy[0], mirrored - mirrored[0]
    np.testing.assert_allclose(d_half, d_flat * [-1.0, 1.0], atol=1e-9)
    assert np.abs(d_flat[:, 0]).max() > 1e-3  # it sways: the mirror is not trivial
    with pytest.raises(IdentificationError, match="unit quaternion"):
        dataclasses.replace(flat, orientation=np.array([0.0, 0.0, 0.0, 2.0]))


def test_the_aligned_path_undoes_a_rigid_motion_of_the_start() -> None:
    one = take("sidewinding", TRUE, 0.0, 0)
    measured = one.xy
    c, s = np.cos(0.3), np.sin(0.3)
    moved = measured @ np.array([[c, s], [-s, c]]) + [0.1, -0.4]
    np.testing.assert_allclose(aligned_path(moved, measured), measured, atol=1e-12)
    assert aligned_error(moved, one).max() < 1e-12 < path_error(moved, one).min()


def test_the_level_search_walks_the_valley_the_least_squares_stops_in() -> None:
    """Eq. 262 on a cost with the fit's shape: a shallow valley along ln mu_across - ln
    mu_along = ln 3 with its floor at mu_along 0.2, and a steep kinked wall across it.
    From a point on the valley 25 % low the search lands on the level within its
    tolerance; from the minimum it stays put."""
    truth = np.log([0.2, 0.6])

    def fun(x: np.ndarray) -> np.ndarray:
        level, ratio = 0.5 * (x[0] + x[1] - truth.sum()), x[1] - x[0] - (truth[1] - truth[0])
        return np.array([1e-3 * level, 0.05 * np.sqrt(abs(ratio))])

    found = level_search(fun, truth + np.log(0.75))
    np.testing.assert_allclose(found, truth, atol=2e-3)
    assert np.array_equal(level_search(fun, truth), truth)


@pytest.mark.parametrize("truth", [(0.1, 0.4), (0.04, 1.1), (0.3, 0.35), (0.9, 1.0)])
def test_the_coarse_search_finds_the_whole_grid_s_best_point_with_fewer_costs(
    truth: tuple[float, float],
) -> None:
    """Eq. 247 coarse to fine on a cost with the fit's valley (the level shallow, the ratio
    steep; its floor anywhere on the grid's span, the edges too): the point it returns is
    the best of the whole grid and the start, counted against every grid point's cost, and
    it evaluates fewer than the grid's 36 points."""
    centre = np.log(truth)
    calls: list[tuple[float, ...]] = []

    def fun(x: np.ndarray) -> np.ndarray:
        calls.append(tuple(x))
        level, ratio = 0.5 * (x[0] + x[1] - centre.sum()), x[1] - x[0] - (centre[1] - centre[0])
        return np.array([1e-3 * level, 0.05 * ratio])

    x0 = np.log([0.1, 0.5])
    found = coarse_search(fun, x0, ("mu_along", "mu_across"))
    axis = np.log(np.geomspace(0.03, 1.2, 8))
    grid = [np.array([a, c]) for a in axis for c in axis[axis >= a]]
    best = min([x0, *grid], key=lambda x: robust_cost(fun(x), 0.005))
    assert np.array_equal(found, best)
    assert len(set(calls[: -len(grid) - 1])) < len(grid)


#: Random plants (servos, mass scale, floor) no other test draws: seeds of random_plant.
UNSEEN_SEEDS = (103, 105)


def crawls_on_a_random_plant(
    seed: int,
) -> tuple[SnakeModel, ServoModel, Ground, list[PathRecording]]:
    """``snake identify``'s two fitted crawls (3 s, ramped from rest) of the table robot on
    the plant ``random_plant(seed, floor=True)`` draws, as the crawler moves its body (the
    table's times the plant's mass scale) with its servos seen from the command (eq. 210),
    each from its own start pose; measured as the plant's pose sensor (its position and
    heading noise, its share of dropped samples) and pots (their noise, each off by a
    constant) would: the body, servos and measurements the floor fit gets from a perfect
    servo stage."""
    table = SnakeModel.from_yaml(robot_config("robot_table"))
    params = plant_from_dict(
        random_plant(np.random.default_rng(seed), floor=True), table.joint_names, f"seed {seed}"
    )
    assert params.ground is not None
    body = dataclasses.replace(
        table, masses=table.masses * params.mass_scale, inertias=table.inertias * params.mass_scale
    )
    servo = seen_from_the_command(params.servo)
    pot = Potentiometer()
    sensor = RANDOM_POSE_SENSOR
    rng = np.random.default_rng(seed)
    takes = []
    for _, gait, gait_params in CRAWLS:
        trajectory = crawl(table, gait, gait_params, 3.0)
        t = np.arange(0.0, 3.0 + 1e-9, 0.02)  # the telemetry's reports
        reference = np.array([trajectory.evaluate(float(x)).q for x in t])
        pose_t = np.arange(0.01, 2.99, 1.0 / float(sensor["rate"]))
        start, yaw = rng.uniform(-0.5, 0.5, 2), float(rng.uniform(-np.pi, np.pi))
        blank = PathRecording(
            t, reference, pose_t, np.tile(start, (pose_t.size, 1)), np.full(pose_t.size, yaw)
        )
        truth = predict_crawl(body, servo, params.ground, blank)
        kept = rng.random(pose_t.size) >= float(sensor["dropout"])
        kept[0] = True
        xy = truth.xy + rng.normal(0.0, float(sensor["position_noise"]), truth.xy.shape)
        headings = yaw + rng.normal(0.0, float(sensor["yaw_noise"]), pose_t.size)
        noise = pot.noise_mv / pot.mv_per_rad
        measured = (
            truth.q + rng.normal(0.0, 0.02, table.n_joints) + rng.normal(0.0, noise, truth.q.shape)
        )
        takes.append(
            PathRecording(t, reference, pose_t[kept], xy[kept], headings[kept], measured=measured)
        )
    return body, servo, params.ground, takes


@pytest.mark.slow  # 30-60 s a seed: make test runs it, make unit does not
@pytest.mark.parametrize("seed", UNSEEN_SEEDS)
def test_the_fit_recovers_a_random_floor_under_random_servos(seed: int) -> None:
    """The floor fit from the table robot's config floor (0.1, 0.5) recovers both
    coefficients of a floor drawn within random_plant's ranges within 10 % (issue 37's
    check; within 1.7 % on the eight seeds of bench/notes/2026-12-07-floor-fit-bias.md,
    where the first-pose anchoring and the least squares' early stop left them between 19 %
    low and 24 % high), and the aligned path error comes down to the sensor's noise."""
    body, servo, floor, takes = crawls_on_a_random_plant(seed)
    start = SnakeModel.from_yaml(robot_config("robot_table")).ground
    assert start is not None
    fit = fit_ground(body, servo, takes, start)
    assert fit.ground.mu_along == pytest.approx(floor.mu_along, rel=0.10)
    assert fit.ground.mu_across == pytest.approx(floor.mu_across, rel=0.10)
    assert np.all(fit.rms_after < 3.0 * np.sqrt(2.0) * float(RANDOM_POSE_SENSOR["position_noise"]))


@pytest.mark.parametrize("cores", [{0}, {0, 1}])
def test_predictions_on_threads_equal_those_made_one_at_a_time(
    cores: set[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fits run their independent predictions on a thread per core (in_parallel): the
    paths are bit for bit those of one prediction at a time, in order, and with one core
    nothing leaves the calling thread."""
    floors = [dataclasses.replace(TRUE, mu_across=m) for m in (0.3, 0.42, 0.6)]
    blank = take("serpenoid", TRUE, 0.0, 0)
    alone = [predict_path(MODEL, SERVO, floor, blank) for floor in floors]
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: cores)
    threads: list[int] = []

    def one(floor: Ground) -> np.ndarray:
        threads.append(threading.get_ident())
        return predict_path(MODEL, SERVO, floor, blank)

    together = in_parallel(one, floors)
    assert all(np.array_equal(a, b) for a, b in zip(alone, together, strict=True))
    assert (threading.get_ident() in threads) == (len(cores) == 1)
