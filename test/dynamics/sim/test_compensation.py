"""Commands that compensate (docs/mfm.md, eqs. 211-215).

References: the servo law itself, the compiled kernel ``recursive.servo_torque`` (eqs.
202-205), which the inversion must reproduce; and the servo-driven fixed-tail robot,
:class:`Simulator` (RK4 under eqs. 201-205), fed 100 Hz commands as dynamics_node feeds it
gait_node's, against which the compensated commands must track the desired gait.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from snake_dynamics import SnakeModel, make_gait
from snake_dynamics.floating import lying_state, on_the_ground, simulate_prescribed_fast
from snake_dynamics.gaits import Gait, PeriodicGait, Transition
from snake_dynamics.mfm import recursive
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim import CommandReference, InputSource, PrescribedInput, Simulator, load_plant
from snake_dynamics.sim.compensation import (
    SATURATED_SHARE,
    SaturationError,
    check_crawl,
    check_feasible,
    compensated_command,
    crawl_saturation,
    fixed_tail_load,
    ground_load,
    period_times,
    saturation,
    servo_demand,
    servo_error,
)
from snake_dynamics.sim.crawler import BASE, CrawlingSimulator, simulate_crawling
from snake_dynamics.sim.identification import SampledReference

ROOT = Path(__file__).resolve().parents[3]
DT = 1e-3  # the dynamics node's step [s]
COMMAND_PERIOD = 0.01  # gait_node's 100 Hz [s]


@pytest.fixture(scope="module")
def robot() -> SnakeModel:
    return SnakeModel.from_yaml(ROOT / "config" / "robot.yaml")


def _servos(robot: SnakeModel) -> dict[str, ServoModel]:
    """The datasheet servo of robot.yaml and the plant's (later, weaker, joint_1 weakest)."""
    plant = load_plant(ROOT / "config" / "plant.yaml", robot.joint_names)
    return {
        "datasheet": ServoModel.from_yaml(ROOT / "config" / "robot.yaml", robot.joint_names),
        "plant": plant.servo,
    }


def _ramped(gait: PeriodicGait, ramp: float = 1.0) -> Gait:
    """gait_node's start: from rest into ``gait`` over ``ramp`` [s] (a pure function of t)."""
    rest = np.zeros(gait.n_joints)
    return Transition(PeriodicGait(rest, rest, rest, 0.0, "rest"), gait, 0.0, ramp)


def test_servo_error_makes_the_servo_deliver_the_torque(robot: SnakeModel) -> None:
    """Eq. 212 inverts eqs. 202-205: the compiled servo law, told the angle plus that error
    (no rate reference), gives the torque back to rounding outside the deadband, and at
    most K e_0 short of it inside."""
    servo = _servos(robot)["plant"]
    rng = np.random.default_rng(3)
    n = robot.n_joints
    for _ in range(200):
        q = rng.uniform(-1.0, 1.0, n)
        qd = rng.uniform(-3.0, 3.0, n)
        tau = rng.uniform(-0.5, 0.5, n) * servo.column("stall_torque")
        e = servo_error(servo, tau, qd)
        low, high = (  # within the torque-speed line: the clamp does not bind
            -servo.column("stall_torque") * np.minimum(1, 1 + qd / servo.column("no_load_speed")),
            servo.column("stall_torque") * np.minimum(1, 1 - qd / servo.column("no_load_speed")),
        )
        inside = (tau > low) & (tau < high)
        u = np.concatenate([np.zeros(n), q + e, np.zeros(n)])
        given = np.asarray(recursive.servo_torque(servo.packed, u, q, qd))
        e_db = (tau + servo.column("damping") * qd) / servo.column("stiffness")
        outside_band = np.abs(e_db) >= servo.column("deadband")
        exact = inside & outside_band
        assert np.allclose(given[exact], tau[exact], rtol=1e-12, atol=1e-12)
        band = inside & ~outside_band
        short = np.abs(given[band] - tau[band])
        assert np.all(short <= (servo.column("stiffness") * servo.column("deadband"))[band] + 1e-12)


def _run(
    robot: SnakeModel, servo: ServoModel, motion: Gait, duration: float, compensate: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The servo-driven robot fed 100 Hz commands (the gait, or eq. 213 on it) through the
    dynamics node's reference (cubic Hermite between samples, each servo T_d late, no
    feed-forward, no rate reference); returns the times and joint angles at every step."""
    load = fixed_tail_load(robot)
    reference = CommandReference(np.zeros(robot.n_joints), timeout=duration + 2.0)  # keeps all
    for t in np.arange(-COMMAND_PERIOD, duration + 1.0, COMMAND_PERIOD):
        when = max(float(t), 0.0)
        if compensate:
            q, qd = compensated_command(lambda s: motion(max(s, 0.0)), load, servo, when)
        else:
            q, qd = motion(when).q, motion(when).qd
        reference.push(float(t), q, qd)
    sim = Simulator(robot, DT, servo=servo)
    source = PrescribedInput(sim.fast_model, reference, servo.dead_times, feed_forward=False)
    qs, _ = sim.advance(round(duration / DT), source)
    return DT * np.arange(1, len(qs) + 1), qs


@pytest.mark.parametrize("which", ["datasheet", "plant"])
def test_compensated_commands_track_the_gait(robot: SnakeModel, which: str) -> None:
    """The serpenoid gait ramped in from rest over 1 s, 3 s on the servo-driven robot: told
    the gait, the yaw joints trail it by degrees; told eq. 213, they follow it at least 3x
    closer (RMS over the run, every moving joint)."""
    servo = _servos(robot)[which]
    gait = make_gait("serpenoid", robot)
    check_feasible(gait, fixed_tail_load(robot), servo, robot.joint_names)
    motion = _ramped(gait)
    rms = {}
    for compensate in (False, True):
        t, q = _run(robot, servo, motion, 3.0, compensate)
        desired = np.array([motion(s).q for s in t])
        rms[compensate] = np.sqrt(np.mean((q - desired) ** 2, axis=0))
    moving = gait.amplitudes > 0
    print(
        f"{which}: RMS vs the gait [deg], raw {np.degrees(rms[False][moving]).round(3)}, "
        f"compensated {np.degrees(rms[True][moving]).round(3)}"
    )
    assert np.all(rms[False][moving] > np.radians(1.0))  # the raw command does trail
    assert np.all(rms[True][moving] * 3.0 <= rms[False][moving])


def _one_joint(robot: SnakeModel, k: int, amplitude: float, frequency: float) -> PeriodicGait:
    n = robot.n_joints
    amplitudes = np.zeros(n)
    amplitudes[k] = amplitude
    return PeriodicGait(np.zeros(n), amplitudes, np.zeros(n), frequency, "one joint")


@pytest.mark.parametrize("k", [1, 3, 6])
def test_a_joint_beyond_its_no_load_speed_is_named(robot: SnakeModel, k: int) -> None:
    """Joint k alone at 1 rad and 2 Hz turns at 4 pi = 12.6 rad/s, beyond the datasheet's
    7.48 rad/s: the refusal names joint k, a speed and its limit."""
    servo = _servos(robot)["datasheet"]
    gait = _one_joint(robot, k, 1.0, 2.0)
    with pytest.raises(SaturationError) as error:
        check_feasible(gait, fixed_tail_load(robot), servo, robot.joint_names)
    message = str(error.value)
    assert "\n" not in message
    assert f"{robot.joint_names[k]} would turn at 12.57 rad/s at t = 0.000 s" in message
    assert "no-load speed 7.48 rad/s" in message


@pytest.mark.parametrize("k", [1, 3, 5])
def test_a_joint_beyond_its_torque_speed_line_is_named(robot: SnakeModel, k: int) -> None:
    """The serpenoid gait with yaw joint k's servo at half the torque joint k needs (a torque
    beyond a joint alone loads the joints nearer the fixed tail too, so the servo is what
    differs): the refusal names joint k, the inverse dynamics' torque at that sample and
    eq. 204's bound at its speed."""
    datasheet = _servos(robot)["datasheet"]
    load = fixed_tail_load(robot)
    gait = make_gait("serpenoid", robot)
    demand = servo_demand(gait, load, period_times(gait))
    stall = 0.5 * float(np.max(np.abs(demand.tau[:, k])))
    weak = replace(datasheet.joints[k], stall_torque=stall)
    servo = ServoModel((*datasheet.joints[:k], weak, *datasheet.joints[k + 1 :]), "test")
    worst = saturation(demand, servo)
    assert worst is not None and worst.joint == k and worst.quantity == "torque"
    i = int(np.flatnonzero(demand.t == worst.t)[0])
    assert worst.demand == demand.tau[i, k]
    qd = demand.qd[i, k]
    line = stall * min(1.0, 1.0 - np.sign(worst.demand) * qd / weak.no_load_speed)
    assert worst.limit == pytest.approx(np.sign(worst.demand) * line, rel=1e-12)
    assert abs(worst.demand) > line
    with pytest.raises(SaturationError) as error:
        check_feasible(gait, load, servo, robot.joint_names)
    assert str(error.value) == (
        f"gait serpenoid: joint_{k + 1} needs {worst.demand:+.3f} N m at t = {worst.t:.3f} s, "
        f"beyond the {worst.limit:+.3f} N m its servo gives at {qd:+.2f} rad/s "
        "(torque-speed line)"
    )


def test_the_default_gaits_fit_the_datasheet_servo(robot: SnakeModel) -> None:
    """config/gaits.yaml's defaults on robot.yaml: nothing to refuse."""
    servo = _servos(robot)["datasheet"]
    for name in ("serpenoid", "sidewinding", "rolling"):
        check_feasible(make_gait(name, robot), fixed_tail_load(robot), servo, robot.joint_names)


def test_a_servo_without_stiffness_cannot_be_compensated(robot: SnakeModel) -> None:
    servo = ServoModel.pd(0.0, 0.5, robot.n_joints)
    gait = make_gait("serpenoid", robot)
    with pytest.raises(SaturationError, match="joint 1's servo has stiffness 0"):
        compensated_command(gait, fixed_tail_load(robot), servo, 0.0)


# ------------------------------------------------------------------ on the ground (216, 217)
GROUND_ROBOT = ROOT / "config" / "robot_ground.yaml"


class _Seen(InputSource):
    """What the servos see at t: ``seen(t)`` as the target, no rate reference."""

    def __init__(self, n: int, seen: Callable[[float], np.ndarray]) -> None:
        self.n, self.seen = n, seen

    def inputs(self, t: np.ndarray) -> np.ndarray:
        out = np.zeros((t.size, 3 * self.n))
        for i, ti in enumerate(t):
            out[i, self.n : 2 * self.n] = self.seen(float(ti))
        return out


def test_the_ground_load_is_the_prescribed_torque_averaged_per_phase() -> None:
    model = on_the_ground(SnakeModel.from_yaml(GROUND_ROBOT))
    gait = make_gait("sidewinding", model)
    load = ground_load(model, gait)
    period = 1.0 / gait.frequency
    still = gait(0.0)
    for t in (0.0, 0.123, 1.7):  # periodic in the gait's own time
        np.testing.assert_array_equal(load(t, still), load(t + 3 * period, still))
    exact = simulate_prescribed_fast(model, gait, 3 * period, 0.001, lying_state(model))
    steps = round(period / 0.001)
    last = exact.tau[-steps - 1 : -1]  # the third period's steps
    phases = np.arange(0.0, period, 0.001)
    averaged = np.array([load(float(t), still) for t in phases])
    np.testing.assert_allclose(averaged.mean(axis=0), last.mean(axis=0), atol=1e-12)
    for k in (500, 1234):  # the 40 samples about each phase
        np.testing.assert_allclose(averaged[k], last[k - 20 : k + 20].mean(axis=0), atol=1e-12)
    assert np.abs(averaged).max() < 0.5 * np.abs(last).max()  # the landings' spikes spread


@pytest.mark.slow  # tens of seconds: make test runs it, make unit does not
def test_on_the_ground_compensation_with_the_ground_load_tracks_the_gait() -> None:
    """The servos on the free body (eq. 240) told the gait trail it; told eq. 213 with the
    ground's load (eq. 216) they follow it, better than with the body's inertia alone."""
    model = on_the_ground(SnakeModel.from_yaml(GROUND_ROBOT))
    servo = ServoModel.from_yaml(GROUND_ROBOT, model.joint_names)
    gait = make_gait("sidewinding", model)
    dead = servo.dead_times
    n = model.n_joints
    told = _Seen(n, lambda t: np.array([gait(t - dead[k]).q[k] for k in range(n)]))
    loads = {
        "ground": ground_load(model, gait),
        "inertia": fixed_tail_load(replace(model, base="fixed", ground=None, gravity=np.zeros(3))),
    }
    runs = {"told": simulate_crawling(model, gait, 6.0, DT, servo, every=10, source=told)}
    for name, load in loads.items():
        seen = _Seen(n, lambda t, ld=load: compensated_command(gait, ld, servo, t - dead[0])[0])
        runs[name] = simulate_crawling(model, gait, 6.0, DT, servo, every=10, source=seen)
    desired = np.array([gait(float(t)).q for t in runs["told"].t])
    rms = {k: float(np.sqrt(np.mean((r.q - desired)[200:] ** 2))) for k, r in runs.items()}
    assert rms["told"] > 3.0 * rms["ground"], rms
    assert rms["inertia"] > 2.0 * rms["ground"], rms


def test_on_the_ground_the_servos_judge_the_gait() -> None:
    model = SnakeModel.from_yaml(GROUND_ROBOT)
    servo = ServoModel.from_yaml(GROUND_ROBOT, model.joint_names)
    share = crawl_saturation(model, make_gait("sidewinding", model), servo)
    assert share.max() < SATURATED_SHARE
    check_crawl(model, make_gait("sidewinding", model), servo)
    fast = make_gait("serpenoid", model, amplitude=1.2, frequency=1.5)
    with pytest.raises(SaturationError, match=r"joint_\d's servo is at its torque-speed limit"):
        check_crawl(model, fast, servo)


def test_on_the_ground_a_command_carries_its_own_slope() -> None:
    """The rate gait_node publishes with a compensated command is the command's own slope.

    The servos get the angles alone (the driver sends targets), while dynamics_node
    interpolates /joint_commands with their rates (cubic Hermite, :class:`CommandReference`):
    a rate that is not the commands' slope bends the prediction's reference away from the
    robot's between commands, by up to rate error x period / 4, more when commands come late.
    With the ground's load looked up at the nearest row of its 1 ms table, a step between
    rows over RATE_STEP_S (0.1 ms) gave rates 0.13-0.7 rad/s RMS (up to 7.9) off the slope on
    the demo's table, as the ticks fell between the rows, and the compensated demo's
    predicted path 1.5x further from the robot's with half the commands missing
    (bench/notes/2026-12-07-compensated-prediction.md).

    Reference: the central difference of the commands over 2 ms. Its truncation, h^2 / 24
    |q'''| with |q'''| ~ A (2 pi f)^3 = 43 rad/s^3, is 7e-6 rad/s; where it straddles a kink
    of the servo's deadband (eq. 212) it averages the two sides (up to 0.25 rad/s at a few
    samples, 0.009 rad/s RMS): the bound, 2 % of the slope's RMS (0.03 rad/s), leaves 3x.
    """
    config = ROOT / "config" / "robot_table_true.yaml"  # the demo's table as it really is
    model = on_the_ground(SnakeModel.from_yaml(config))
    servo = ServoModel.from_yaml(config, model.joint_names)
    gait = make_gait("serpenoid", model, amplitude=0.8, frequency=0.6)  # the demo's
    assert isinstance(gait, PeriodicGait)
    load = ground_load(model, gait)
    h, delay = 0.002, 0.028  # the reference's step; gait_node's command_delay in the demo
    times = np.arange(0.0, 1.0 / gait.frequency, COMMAND_PERIOD) + 3.7e-4  # off the table's rows
    rate = np.array([compensated_command(gait, load, servo, t, delay)[1] for t in times])
    up, down = (
        np.array([compensated_command(gait, load, servo, t + s, delay)[0] for t in times])
        for s in (h / 2, -h / 2)
    )
    slope = (up - down) / h
    rms = float(np.sqrt(np.mean((rate - slope) ** 2)))
    assert rms < 0.02 * float(np.sqrt(np.mean(slope**2))), rms


def _table_crawl(config: Path, t: np.ndarray, commands: np.ndarray, source: str) -> np.ndarray:
    """The tail's x, y [m] and the joints [rad] every 10 ms of a crawl of ``config`` on its
    floor from lying straight, its servos told ``commands`` (angles at ``t`` [s], shape (m, n)
    ; "linear": between them, as the firmware's interpolation; "hermite": with their slopes,
    as dynamics_node's CommandReference), shape (k, 2 + n)."""
    model = on_the_ground(SnakeModel.from_yaml(config))
    servo = ServoModel.from_yaml(config, model.joint_names)
    sim = CrawlingSimulator(model, DT, servo=servo)
    n = model.n_joints
    sim.reset(0.0, commands[0], np.zeros(n), sim.resting_base(commands[0]))
    inputs: InputSource
    if source == "linear":
        inputs = SampledReference(t, commands, float(servo.dead_times[0]))
    else:
        reference = CommandReference(np.zeros(n), COMMAND_PERIOD, history=t[-1] - t[0])
        for ti, q, qd in zip(t, commands, np.gradient(commands, t, axis=0), strict=True):
            reference.push(float(ti), q, qd)
        inputs = PrescribedInput(sim.fast_model, reference, servo.dead_times, False)
    states = sim.run(round((t[-1] - t[0] - 0.1) / DT), inputs)[9::10]
    return np.column_stack([states[:, :2], states[:, BASE : BASE + n]])


@pytest.mark.slow
def test_on_the_table_compensation_keeps_the_path_predictable(tmp_path: Path) -> None:
    """Issue 37's check on the model (no ROS): the demo's table as it really is
    (robot_table_true), its commands 28 ms late as through the driver (linear between them),
    predicted by an overlay as `snake identify` fits it (one servo for every joint, the
    tour's stiffness and floor on robot_table's body) fed the commands at their stamps.
    Compensated commands (eq. 213 with the overlay's servo and ground load) cut the robot's
    RMS against the gait at least 3x (8.9 -> 0.6 deg over these 10 s), and the predicted
    path stays within 1.5x the uncompensated run's error from the robot's (0.59 against 1.21
    cm RMS; bench/notes/2026-12-07-compensated-prediction.md). A guard of the mechanism: the
    live tour's figures add the graph's timing (the notes)."""
    overlay = tmp_path / "robot_identified.yaml"
    overlay.write_text(
        f"base: {ROOT / 'config' / 'robot_table.yaml'}\n"
        "model: {ground: {width: 0.05, mu_along: 0.0996, mu_across: 0.418}}\n"
        "servo: {defaults: {dead_time: 0.0195, deadband: 0.006, stiffness: 10.53, "
        "damping: 0.545, stall_torque: 0.78, no_load_speed: 6.36}}\n"
    )
    predicting = on_the_ground(SnakeModel.from_yaml(overlay))
    servo = ServoModel.from_yaml(overlay, predicting.joint_names)
    gait = make_gait("serpenoid", predicting, amplitude=0.8, frequency=0.6)  # the demo's
    assert isinstance(gait, PeriodicGait)
    motion = _ramped(gait, 2.0)  # gait_node's ramp
    t = np.arange(0.0, 10.0, COMMAND_PERIOD)
    desired = np.array([motion(float(ti)).q for ti in t])
    load = ground_load(predicting, gait)
    shaped = np.array([compensated_command(motion, load, servo, float(ti), 0.028)[0] for ti in t])
    rms, path = {}, {}
    for name, commands in (("told", desired), ("compensated", shaped)):
        robot = _table_crawl(
            ROOT / "config" / "robot_table_true.yaml", t + 0.028, commands, "linear"
        )
        predicted = _table_crawl(overlay, t, commands, "hermite")
        k = len(robot)
        rms[name] = float(np.sqrt(np.mean((robot[:, 2:] - desired[1 : k + 1]) ** 2)))
        path[name] = float(np.sqrt(np.mean(np.sum((robot[:, :2] - predicted[:, :2]) ** 2, axis=1))))
    print(
        f"robot vs gait {np.degrees(rms['told']):.2f} -> {np.degrees(rms['compensated']):.2f} "
        f"deg; path RMS {path['told'] * 100:.2f} -> {path['compensated'] * 100:.2f} cm"
    )
    assert rms["told"] >= 3.0 * rms["compensated"], rms
    assert path["compensated"] <= 1.5 * path["told"], path
