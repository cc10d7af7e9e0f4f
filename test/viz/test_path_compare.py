"""The comparison on the floor (snake_viz.path_compare), on synthetic paths with exact answers.

References: closed-form geometry. On a straight line linear interpolation is exact, so the
path error equals the formula to rounding; on a circle the measured stamps are a subset of the
predicted ones (no interpolation), so the error is the radial offset and the path length the
sum of chords, exactly. Validation: counts by reason of a hand-made sequence of bad poses.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from snake_viz.compare import CompareError, JointSeries
from snake_viz.path_compare import (
    AHEAD,
    DEFAULT_MAX_AHEAD_S,
    NOT_FINITE,
    NOT_NEWER,
    NOT_UNIT,
    POSE_FIELDS,
    REASONS,
    SIM_CLOCK_MAX_AHEAD_S,
    WRONG_FRAME,
    PoseSample,
    PoseValidator,
    compare_paths,
    latest_path_error,
    pose_series,
    validated_series,
    wrap_angle,
)


def yaw_quaternion(yaw: np.ndarray) -> np.ndarray:
    """Rotations about z by ``yaw`` [rad] as (x, y, z, w), shape (N, 4)."""
    yaw = np.asarray(yaw, dtype=float)
    zero = np.zeros_like(yaw)
    return np.column_stack([zero, zero, np.sin(yaw / 2), np.cos(yaw / 2)])


def poses(t: np.ndarray, x: np.ndarray, y: np.ndarray, heading: np.ndarray) -> JointSeries:
    """A pose series on the ground; ``heading`` is the tail's long axis e2's angle [rad]
    (e2 = R (0, 1, 0): a rotation about z by yaw points it at yaw + pi/2)."""
    q = yaw_quaternion(heading - math.pi / 2)
    rows = np.column_stack([x, y, np.full_like(t, 0.03), q])
    return JointSeries.from_samples(POSE_FIELDS, t, rows)


def test_straight_line_error_travel_and_speed() -> None:
    """Prediction along x at 10 cm/s (100 Hz); the robot at 8 cm/s, 1 cm to the side, sampled
    at 30 Hz on stamps between the predicted ones: error sqrt((0.02 t)^2 + 0.01^2)."""
    t_p = np.arange(0.0, 4.0 + 1e-9, 0.01)
    predicted = poses(t_p, 0.1 * t_p, 0.0 * t_p, np.zeros_like(t_p))
    t_m = 0.013 + np.arange(0, 110) / 30.0
    measured = poses(t_m, 0.08 * t_m, np.full_like(t_m, 0.01), np.zeros_like(t_m))
    cmp = compare_paths(predicted, measured)
    m = cmp.metrics
    expected = np.hypot(0.02 * t_m, 0.01)
    assert m.samples == t_m.size and m.duration == pytest.approx(t_m[-1] - t_m[0], abs=1e-12)
    np.testing.assert_allclose(cmp.error, expected, rtol=0, atol=1e-12)
    assert m.rms_error == pytest.approx(float(np.sqrt(np.mean(expected**2))), abs=1e-12)
    assert m.max_error == pytest.approx(expected[-1], abs=1e-12)
    assert m.final_error == pytest.approx(expected[-1], abs=1e-12)
    span = t_m[-1] - t_m[0]
    assert m.predicted.displacement == pytest.approx(0.1 * span, abs=1e-12)
    assert m.measured.displacement == pytest.approx(0.08 * span, abs=1e-12)
    assert m.predicted.length == pytest.approx(m.predicted.displacement, abs=1e-12)
    assert m.measured.length == pytest.approx(m.measured.displacement, abs=1e-12)
    assert m.predicted.speed == pytest.approx(0.1, abs=1e-12)
    assert m.measured.speed == pytest.approx(0.08, abs=1e-12)
    assert m.speed_error == pytest.approx(-0.02, abs=1e-12)
    assert m.heading_drift == pytest.approx(0.0, abs=1e-12)
    assert latest_path_error(predicted, measured) == pytest.approx((t_m[-1], expected[-1]))


CIRCLE_R, CIRCLE_W, CIRCLE_T, OFFSET = 0.5, 0.5, 10.0, 0.01  # m, rad/s, s, m


def circle(t: np.ndarray, radius: float, heading_rate: float) -> JointSeries:
    """Counter-clockwise around the origin at CIRCLE_W; heading = tangent + extra turning."""
    angle = CIRCLE_W * t
    heading = angle + math.pi / 2 + (heading_rate - CIRCLE_W) * t
    return poses(t, radius * np.cos(angle), radius * np.sin(angle), heading)


@pytest.mark.parametrize(
    ("extra_turn", "drift"),
    [(0.0, 0.0), (0.5, 0.5), (2 * math.pi + 0.3, 0.3), (-2 * math.pi - 0.3, -0.3)],
)
def test_circle_offset_path_length_and_wrapped_heading_drift(
    extra_turn: float, drift: float
) -> None:
    """A circle of 0.5 m at 0.5 rad/s for 10 s (5 rad); the robot 1 cm further out at the same
    angle (error 1 cm everywhere), turning ``extra_turn`` more over the run (drift wrapped)."""
    t_p = np.linspace(0.0, CIRCLE_T, 1001)
    t_m = t_p[::4]  # 25 Hz, on predicted stamps: no interpolation
    predicted = circle(t_p, CIRCLE_R, CIRCLE_W)
    measured = circle(t_m, CIRCLE_R + OFFSET, CIRCLE_W + extra_turn / CIRCLE_T)
    m = compare_paths(predicted, measured).metrics
    assert (m.rms_error, m.max_error, m.final_error) == pytest.approx((OFFSET,) * 3, abs=1e-12)
    sweep = CIRCLE_W * CIRCLE_T
    step = CIRCLE_W * (t_m[1] - t_m[0])
    chords = (t_m.size - 1) * 2 * np.sin(step / 2)
    assert m.predicted.length == pytest.approx(CIRCLE_R * chords, abs=1e-12)
    assert m.measured.length == pytest.approx((CIRCLE_R + OFFSET) * chords, abs=1e-12)
    assert m.measured.displacement == pytest.approx(
        2 * (CIRCLE_R + OFFSET) * math.sin(sweep / 2), abs=1e-12
    )
    assert m.predicted.speed == pytest.approx(
        2 * CIRCLE_R * math.sin(sweep / 2) / CIRCLE_T, abs=1e-12
    )
    assert m.speed_error == pytest.approx(2 * OFFSET * math.sin(sweep / 2) / CIRCLE_T, abs=1e-12)
    assert m.predicted.heading_change == pytest.approx(sweep, abs=1e-9)
    assert m.measured.heading_change == pytest.approx(sweep + extra_turn, abs=1e-9)
    assert m.heading_drift == pytest.approx(drift, abs=1e-9)


def test_order_of_arrival_does_not_matter_and_gaps_are_not_bridged() -> None:
    """Predicted poses shuffled give the same result; measured stamps inside a predicted gap
    longer than max_gap (0.25 s) and outside the predicted span count in no statistic."""
    rng = np.random.default_rng(3)
    t_p = np.arange(0.0, 3.0 + 1e-9, 0.01)
    t_p = t_p[(t_p < 1.0) | (t_p > 1.5)]  # a 0.5 s gap
    predicted = poses(t_p, 0.1 * t_p, 0 * t_p, 0 * t_p)
    order = rng.permutation(t_p.size)
    shuffled = JointSeries.from_samples(POSE_FIELDS, predicted.t[order], predicted.q[order])
    t_m = np.arange(-0.5, 3.5, 0.05) + 0.001
    measured = poses(t_m, 0.1 * t_m + 0.002, 0 * t_m, 0 * t_m)
    a, b = compare_paths(predicted, measured), compare_paths(shuffled, measured)
    np.testing.assert_array_equal(a.t, b.t)
    gap = (t_m > t_p[t_p < 1.0][-1]) & (t_m < t_p[t_p > 1.5][0])
    inside = (t_m >= 0) & (t_m <= t_p[-1]) & ~gap
    np.testing.assert_allclose(a.t, t_m[inside], rtol=0, atol=0)
    assert a.metrics.samples == int(inside.sum())
    np.testing.assert_allclose(a.error, 0.002, rtol=0, atol=1e-12)


def test_no_overlap_is_a_one_line_error() -> None:
    t = np.arange(0.0, 1.0, 0.1)
    with pytest.raises(CompareError, match="overlap in 0 sample"):
        compare_paths(poses(t, t, t, t), poses(t + 5.0, t, t, t))


def test_bad_poses_are_rejected_and_counted_by_reason() -> None:
    """Every kind of bad pose, in arrival order; none of them reaches the series."""
    unit = (0.0, 0.0, 0.0, 1.0)
    samples = [
        PoseSample(1.0, "world", (0.0, 0.0, 0.0), unit),  # accepted
        PoseSample(1.1, "world", (math.nan, 0.0, 0.0), unit),
        PoseSample(1.2, "world", (0.0, math.inf, 0.0), unit),
        PoseSample(math.nan, "world", (0.0, 0.0, 0.0), unit),
        PoseSample(1.3, "world", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0)),  # lost tracking
        PoseSample(1.4, "world", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.01)),
        PoseSample(1.5, "map", (0.0, 0.0, 0.0), unit),
        PoseSample(1.6, "", (0.0, 0.0, 0.0), unit),
        PoseSample(1.0, "world", (9.0, 0.0, 0.0), unit),  # the same stamp again
        PoseSample(0.9, "world", (9.0, 0.0, 0.0), unit),  # older
        PoseSample(2.0, "world", (0.2, 0.0, 0.0), unit),  # accepted
        PoseSample(1.9, "world", (9.0, 0.0, 0.0), unit),  # older than the last accepted
    ]
    series, validator = validated_series(samples)
    assert validator.accepted == 2
    assert validator.rejected == {
        NOT_FINITE: 3,
        NOT_UNIT: 2,
        WRONG_FRAME: 2,
        AHEAD: 0,
        NOT_NEWER: 3,
    }
    assert set(validator.rejected) == set(REASONS)
    np.testing.assert_array_equal(series.t, [1.0, 2.0])
    np.testing.assert_array_equal(series.q[:, 0], [0.0, 0.2])
    assert validator.last_stamp == 2.0
    other = PoseValidator(frame="mocap")
    assert other.check(1.0, "world", (0, 0, 0), unit) == (
        WRONG_FRAME,
        "frame 'world', expected 'mocap'",
    )
    assert other.check(1.0, "mocap", (0, 0, 0), unit) is None
    # the series of unchecked samples sorts by stamp
    assert list(pose_series(samples[:1] + samples[10:11]).t) == [1.0, 2.0]


@pytest.mark.parametrize(
    ("angle", "wrapped"),
    [(0.0, 0.0), (math.pi, -math.pi), (-math.pi, -math.pi), (3 * math.pi / 2, -math.pi / 2)],
)
def test_wrap_angle(angle: float, wrapped: float) -> None:
    assert wrap_angle(angle) == pytest.approx(wrapped, abs=1e-15)


def arriving(t: np.ndarray, latency: float, x: np.ndarray) -> list[PoseSample]:
    """Poses along x stamped at ``t``, each arriving ``latency`` after its stamp [s]."""
    unit = (0.0, 0.0, 0.0, 1.0)
    return [
        PoseSample(float(s), "world", (float(xi), 0.0, 0.03), unit, float(s) + latency)
        for s, xi in zip(t, x, strict=True)
    ]


@pytest.mark.parametrize("ahead", [3.0, 2 * DEFAULT_MAX_AHEAD_S, 1e6])
def test_a_pose_from_the_future_is_rejected_alone_and_leaves_the_path_error(ahead: float) -> None:
    """The campaign's attack: one pose stamped ``ahead`` of its arrival among 100 Hz genuine
    ones (latency 20 ms). Reference: the same comparison without it (identical to the bit);
    the counts: one rejection "ahead of the clock", no genuine pose "not newer" (before the
    clock check, the 3 s one made the next 300 "not newer")."""
    t = np.arange(0.0, 6.0, 0.01)
    genuine = arriving(t, 0.02, 0.08 * t)
    spoof = PoseSample(2.0 + ahead, "world", (5.0, 5.0, 0.03), (0.0, 0.0, 0.0, 1.0), 2.02)
    attacked = [*genuine[:201], spoof, *genuine[201:]]
    t_p = np.arange(0.0, 6.0 + 1e-9, 0.01)
    predicted = poses(t_p, 0.1 * t_p, 0.0 * t_p, np.full_like(t_p, math.pi / 2))
    clean, clean_check = validated_series(genuine)
    series, check = validated_series(attacked)
    assert check.rejected[AHEAD] == 1 and sum(check.rejected.values()) == 1
    assert check.accepted == clean_check.accepted == t.size
    np.testing.assert_array_equal(series.t, clean.t)
    np.testing.assert_array_equal(series.q, clean.q)
    before, after = compare_paths(predicted, clean), compare_paths(predicted, series)
    assert after.metrics == before.metrics
    assert latest_path_error(predicted, series) == latest_path_error(predicted, clean)


def test_poses_within_a_sensor_period_or_two_ahead_are_accepted() -> None:
    """A sender whose clock runs up to ``max_ahead`` ahead (clock steps, sync error) is
    accepted; a pose without an arrival time (an old bag) is not checked against a clock."""
    check = PoseValidator()
    unit = (0.0, 0.0, 0.0, 1.0)
    assert check.check(1.0, "world", (0, 0, 0), unit, 1.0 - 0.9 * DEFAULT_MAX_AHEAD_S) is None
    assert check.check(2.0, "world", (0, 0, 0), unit) is None
    late = check.check(3.0, "world", (0, 0, 0), unit, 2.5)
    assert late is not None and late.reason == AHEAD
    assert "0.500 s ahead of its arrival" in late.detail
    assert check.rejected[AHEAD] == 1 and check.last_stamp == 2.0


def test_poses_arriving_on_a_lagging_simulated_clock_pass_its_allowance() -> None:
    """A recorder on a robot's /clock that lags the poses by 0.1 s (measured in a demo with
    both cores busy): with the wall-clock bound every pose is "ahead of the clock"; with
    :data:`SIM_CLOCK_MAX_AHEAD_S` every one is accepted, and a spoof 3 s ahead still is not."""
    t = np.arange(0.0, 2.0, 0.01)
    lagging = arriving(t, -0.1, 0.08 * t)
    spoof = PoseSample(1.0 + 3.0, "world", (5.0, 5.0, 0.03), (0.0, 0.0, 0.0, 1.0), 0.9)
    _, strict = validated_series(lagging)
    assert strict.rejected[AHEAD] == t.size and strict.accepted == 0
    series, allowed = validated_series([*lagging, spoof], max_ahead=SIM_CLOCK_MAX_AHEAD_S)
    assert allowed.accepted == t.size and allowed.rejected[AHEAD] == 1
    np.testing.assert_array_equal(series.t, t)
