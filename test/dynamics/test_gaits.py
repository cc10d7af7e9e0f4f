"""Gaits: analytic derivatives against finite differences, roles, transitions, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

import snake_dynamics as sd
from snake_dynamics.gaits import (
    PeriodicGait,
    Transition,
    gait_parameters,
    joint_roles,
    quintic_blend,
)
from snake_dynamics.mfm.integrators import motion_samples

MODEL = sd.SnakeModel.uniform(8, 0.1, 0.1, 0.02)


def all_gaits() -> list[tuple[str, sd.Gait]]:
    gaits: list[tuple[str, sd.Gait]] = [(name, sd.make_gait(name, MODEL)) for name in sd.GAITS]
    gaits.append(("quintic", sd.staggered_quintic(8, amplitude=0.6, duration=0.7, stagger=0.1)))
    gaits.append(("transition", Transition(gaits[0][1], gaits[1][1], t_start=0.3, duration=0.8)))
    return gaits


@pytest.mark.parametrize(
    ("name", "gait"), all_gaits(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_rates_and_accelerations_are_the_derivatives_of_the_angles(name, gait) -> None:
    h = 1e-5
    for t in np.linspace(0.01, 2.0, 23):
        point = gait(t)
        plus, minus = gait(t + h), gait(t - h)
        np.testing.assert_allclose(point.qd, (plus.q - minus.q) / (2 * h), atol=1e-7, err_msg=name)
        np.testing.assert_allclose(
            point.qdd, (plus.qd - minus.qd) / (2 * h), atol=1e-6, err_msg=name
        )
        assert np.all(np.abs(point.q) <= math.pi)


@pytest.mark.parametrize(
    ("name", "gait"), all_gaits(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_a_gait_samples_a_column_of_times_as_one_call_per_time(name, gait) -> None:
    """Reference: ``evaluate`` at each time, one call each (what ``motion_samples`` did for
    any gait but a PeriodicGait): equal bit for bit, the periodic gaits broadcasting, the
    quintic and the transition looping; motion_samples takes the gait's own sampling."""
    times = 0.123 + 0.00025 * np.arange(4001)  # across the transition's blend
    got = gait.samples(times)
    assert got.q.shape == (times.size, MODEL.n_joints), name
    for whole, fields in zip(got, zip(*(gait(float(t)) for t in times), strict=True), strict=True):
        assert np.array_equal(whole, np.array(fields)), name
    for whole, again in zip(motion_samples(gait, times), got, strict=True):
        assert np.array_equal(whole, again), name
    assert np.ptp(got.q) > 0.1, name  # the gait moved over the times


def test_joint_roles_follow_the_axes() -> None:
    pitch, yaw = joint_roles(MODEL.axes)
    assert pitch.tolist() == [0, 2, 4, 6] and yaw.tolist() == [1, 3, 5, 7]


def test_serpenoid_moves_only_yaw_joints_as_a_travelling_wave() -> None:
    gait = sd.make_gait("serpenoid", MODEL, amplitude=0.4, frequency=1.0, phase_lag=0.5)
    q = np.array([gait(t).q for t in np.linspace(0, 1, 101)])
    pitch, yaw = joint_roles(MODEL.axes)
    assert np.all(q[:, pitch] == 0.0)
    np.testing.assert_allclose(q[:, yaw].max(axis=0), 0.4, atol=1e-3)
    assert isinstance(gait, PeriodicGait)
    np.testing.assert_allclose(np.diff(gait.phases[yaw]), 0.5)


def test_cobra_raises_the_head() -> None:
    gait = sd.make_gait("cobra", MODEL, head_lift=0.7, head_joints=2)
    q0 = gait(0.0).q
    pitch, _ = joint_roles(MODEL.axes)
    assert q0[pitch[-2]] == pytest.approx(0.7) and q0[pitch[-1]] == pytest.approx(-0.7)
    poses = sd.link_poses(MODEL, q0)
    # the head's CM is lifted above the ground plane (z), the tail's is not
    assert poses[-1, 2, 3] > 0.05 and poses[0, 2, 3] == 0.0


def test_spiral_is_three_dimensional() -> None:
    gait = sd.make_gait("spiral", MODEL)
    poses = sd.link_poses(MODEL, gait(0.3).q)
    assert np.ptp(poses[:, 0, 3]) > 0.01 and np.ptp(poses[:, 2, 3]) > 0.01


def test_transition_is_smooth_and_ends_on_the_new_gait() -> None:
    a, b = sd.make_gait("serpenoid", MODEL), sd.make_gait("rolling", MODEL)
    blend = Transition(a, b, t_start=1.0, duration=2.0)
    for t in (0.5, 1.0):
        np.testing.assert_array_equal(blend(t).q, a(t).q)
    for t in (3.0, 4.0):
        np.testing.assert_array_equal(blend(t).q, b(t).q)
    # continuity of q, qd, qdd across the blend's ends
    for edge in (1.0, 3.0):
        for k in range(3):
            np.testing.assert_allclose(blend(edge - 1e-9)[k], blend(edge + 1e-9)[k], atol=1e-6)


def test_quintic_blend_endpoints() -> None:
    assert quintic_blend(0.0) == (0.0, 0.0, 0.0) and quintic_blend(1.0) == (1.0, 0.0, 0.0)
    assert quintic_blend(0.5)[0] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("slither", {}, "unknown gait 'slither'"),
        ("serpenoid", {"amplitud": 0.3}, r"has no parameter\(s\) \['amplitud'\]"),
        ("serpenoid", {"amplitude": 2.0}, r"serpenoid.amplitude must be in \[0, 1.5\] rad"),
        ("serpenoid", {"frequency": float("nan")}, "serpenoid.frequency must be in"),
        ("rolling", {"frequency": -1.0}, "rolling.frequency must be in"),
        ("serpenoid", {"amplitude": "big"}, "must be a number"),
        ("cobra", {"head_joints": 2.5}, "cobra.head_joints must be a whole number of joints"),
    ],
)
def test_bad_gait_parameters_are_refused_with_the_field_named(name, params, message) -> None:
    with pytest.raises(sd.GaitError, match=message):
        sd.make_gait(name, MODEL, **params)


def test_every_gait_documents_defaults_inside_their_ranges() -> None:
    for name in sd.GAITS:
        for key, (default, low, high, unit) in gait_parameters(name).items():
            assert low <= default <= high, (name, key)
            assert unit


def test_transition_refuses_mismatched_gaits() -> None:
    small = sd.make_gait("serpenoid", sd.SnakeModel.uniform(4, 0.1, 0.1, 0.02))
    with pytest.raises(sd.GaitError, match="cannot blend"):
        Transition(small, sd.make_gait("serpenoid", MODEL), 0.0, 1.0)


@pytest.mark.parametrize(
    ("axes", "name", "message"),
    [
        ("xy", "serpenoid", r"moves the yaw \(e3\) joints, and this snake has none"),
        ("xy", "accordion", r"moves the yaw \(e3\)"),
        ("zy", "sidewinding", r"moves the pitch \(e1\) joints"),
        ("yy", "spiral", r"moves the pitch \(e1\) and yaw \(e3\) joints"),
    ],
)
def test_a_gait_refuses_a_snake_without_the_joints_it_moves(axes, name, message) -> None:
    model = sd.SnakeModel.uniform(6, 0.1, 0.08, 0.02, axes=axes)
    with pytest.raises(sd.GaitError, match=message):
        sd.make_gait(name, model)
