"""The fast (recursive, compiled) floating-base MFM against the literal one
(snake_dynamics.floating.literal, docs/mfm.md eqs. 221-237), quantity by quantity and over a whole
run of a snake on the ground."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from support.models import MODEL_CASES, random_floating_state, random_model, rel_err, undulation

from snake_dynamics import ground as gr
from snake_dynamics.errors import SimulationError, StateError
from snake_dynamics.floating import FastBaseTracker, body_pose
from snake_dynamics.floating import literal as fl
from snake_dynamics.floating import recursive as ff
from snake_dynamics.floating import state as fs
from snake_dynamics.ground.kernel import fast_ground_wrenches
from snake_dynamics.model import SnakeModel

TOL = 1e-10  # relative, one evaluation
RUN_TOL = 1e-9  # relative, every field of a run


@pytest.mark.parametrize(("n", "gravity", "random_axes"), MODEL_CASES)
def test_forward_and_prescribed_dynamics_equal_the_literal_forms(
    rng: np.random.Generator, n: int, gravity: bool, random_axes: bool
) -> None:
    model = random_model(rng, n, gravity, random_axes)
    for trial in range(3):
        s = random_floating_state(rng, model, scale=0.5, near_ground=True)
        r0 = s.rotation
        tau = rng.uniform(-0.5, 0.5, n)
        qdd = rng.uniform(-2.0, 2.0, n)
        wrenches = None if trial == 0 else rng.normal(scale=0.3, size=(n + 1, 6))
        fast = ff.floating_forward_dynamics(model, r0, s.q, s.nu, tau, wrenches)
        literal = fl.floating_forward_dynamics(model, r0, s.q, s.nu, tau, wrenches)
        assert rel_err(fast, literal) < TOL
        a_fast, tau_fast = ff.prescribed_joint_dynamics(model, r0, s.q, s.nu, qdd, wrenches)
        a_lit, tau_lit = fl.prescribed_joint_dynamics(model, r0, s.q, s.nu, qdd, wrenches)
        assert rel_err(a_fast, a_lit) < TOL
        assert rel_err(tau_fast, tau_lit) < TOL
        # the two agree with each other too: the prescribed torques give back qdd and a
        nu_dot = ff.floating_forward_dynamics(model, r0, s.q, s.nu, tau_fast, wrenches)
        assert rel_err(nu_dot, np.concatenate([a_fast, qdd])) < 1e-9


@pytest.mark.parametrize(("n", "gravity", "random_axes"), MODEL_CASES)
def test_body_pose_equals_the_literal_world_poses(
    rng: np.random.Generator, n: int, gravity: bool, random_axes: bool
) -> None:
    model = random_model(rng, n, gravity, random_axes)
    params = ff.FastFloatingModel(model).params
    s = random_floating_state(rng, model, scale=0.5)
    rotations, centres = fs.world_poses(model, s)
    for body in range(n + 1):
        rotation, centre = body_pose(params, s.position, s.quaternion, s.q, body)
        assert rel_err(rotation, rotations[body]) < TOL
        assert rel_err(centre, centres[body]) < TOL


GROUNDS = [
    gr.Ground(),
    gr.Ground(contacts=1, viscous_along=0.5, viscous_across=2.0),
    gr.Ground(contacts=4, mu_backward=0.3, damping=0.0, velocity_scale=0.05),
    gr.Ground(width=0.05),
    gr.Ground(contacts=1, width=0.03, viscous_across=1.0),
]


@pytest.mark.parametrize("ground", GROUNDS)
def test_ground_wrenches_equal_the_literal_form(
    rng: np.random.Generator, ground: gr.Ground
) -> None:
    count = 12
    lengths, radii = rng.uniform(0.04, 0.2, count), rng.uniform(0.01, 0.05, count)
    rotations = Rotation.random(count, random_state=int(rng.integers(1 << 31))).as_matrix()
    rotations[0] = Rotation.from_rotvec([math.pi / 2, 0.0, 0.0]).as_matrix()  # e2 -> e3
    rotations[1] = np.eye(3)  # lying flat along e2
    centres = np.column_stack([rng.normal(size=(count, 2)), rng.uniform(-0.04, 0.12, count)])
    velocities, omegas = rng.normal(scale=0.3, size=(count, 3)), rng.normal(size=(count, 3))
    args = (lengths, radii, rotations, centres, velocities, omegas)
    literal = gr.ground_wrenches(ground, *args)
    touching = np.count_nonzero(literal[:, 2])
    assert 3 <= touching <= count - 3  # partly below the ground
    assert rel_err(fast_ground_wrenches(ground, *args), literal) < TOL


@pytest.mark.parametrize("ground", GROUNDS)
def test_the_ground_force_list_equals_the_literal_one(
    rng: np.random.Generator, ground: gr.Ground
) -> None:
    model = random_model(rng, 9, random_axes=True)
    seen = 0
    for _ in range(4):
        s = random_floating_state(rng, model, scale=0.5, near_ground=True)
        literal = fl.ground_force_list(model, ground, s)
        seen += np.count_nonzero(literal[:, 2])
        assert rel_err(ff.ground_force_list(model, ground, s), literal) < TOL
    assert seen > 0


def ground_snake() -> SnakeModel:
    return SnakeModel.uniform(
        6, 0.3, 0.1, 0.02, axes="z", gravity=(0, 0, -9.81), base="floating", ground=gr.Ground()
    )


def assert_runs_agree(fast: fs.FloatingRun, literal: fs.FloatingRun) -> None:
    for name in fs.FloatingRun._fields:
        a, b = getattr(fast, name), getattr(literal, name)
        assert a.shape == b.shape, name
        assert rel_err(a, b) < RUN_TOL, name


def test_a_run_on_the_ground_equals_the_literal_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """0.5 s of a snake undulating on the ground, over several compiled chunks."""
    monkeypatch.setattr(ff, "CHUNK", 128)
    model = ground_snake()
    motion = undulation(6, math.radians(30), 2 * math.pi, math.radians(40))
    start = fs.lying_state(model)
    done: list[list[float]] = [[], []]
    fast = ff.simulate_prescribed_fast(model, motion, 0.5, 1e-3, start, progress=done[0].append)
    literal = fl.simulate_prescribed(model, motion, 0.5, 1e-3, start, progress=done[1].append)
    assert_runs_agree(fast, literal)
    assert done[0] == done[1]
    assert fs.locomotion(model, fast).distance > 0.01  # it moved: the ground acted


def test_a_run_from_a_turned_pose_keeping_every_fourth_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """every > 1 with a last step that is not kept, a start turned and off the ground."""
    monkeypatch.setattr(ff, "CHUNK", 16)
    model = ground_snake()
    motion = undulation(6, math.radians(40), 3.0, math.radians(60))
    quat = Rotation.from_rotvec([0.1, -0.2, 2.0]).as_quat()
    start = fs.FloatingState(np.array([0.3, -0.1, 0.025]), quat, np.zeros(6), np.zeros(12))
    for t_end in (0.05, 0.052):
        fast = ff.simulate_prescribed_fast(model, motion, t_end, 1e-3, start, every=4)
        literal = fl.simulate_prescribed(model, motion, t_end, 1e-3, start, every=4)
        assert_runs_agree(fast, literal)


def test_a_run_checks_its_step_and_its_motion() -> None:
    model = ground_snake()
    motion = undulation(6, 0.3, 3.0, 0.5)
    messages = []
    for simulate in (ff.simulate_prescribed_fast, fl.simulate_prescribed):
        with pytest.raises(SimulationError, match=r"eq\. 237") as err:
            simulate(model, motion, 0.1, 0.01)
        messages.append(str(err.value))
    assert messages[0] == messages[1]

    def broken(t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        q, qd, qdd = motion(t)
        return q, qd * (math.nan if t > 0.0104 else 1.0), qdd

    for simulate in (ff.simulate_prescribed_fast, fl.simulate_prescribed):
        with pytest.raises(StateError, match="finite"):
            simulate(model, broken, 0.03, 1e-3)


def test_the_fast_base_tracker_is_the_literal_one(rng: np.random.Generator) -> None:
    """FastBaseTracker == floating.BaseTracker step for step over joint samples (eq. 239),
    across a reset (the dynamics node's use)."""
    model = SnakeModel.uniform(
        4, 0.3, 0.1, 0.02, axes="xz", gravity=(0, 0, -9.81), base="floating", ground=gr.Ground()
    )
    dt = 1e-3
    t = np.arange(1, 61) * dt
    qs = 0.4 * np.sin(3 * t[:, None] + np.arange(4))
    qds = 1.2 * np.cos(3 * t[:, None] + np.arange(4))
    literal, fast = fl.BaseTracker(model, dt), FastBaseTracker(model, dt)
    for tracker in (literal, fast):
        tracker.reset(np.zeros(4), 1.2 * np.cos(np.arange(4.0)))
        tracker.advance(0.0, qs[:30], qds[:30])
        tracker.reset(qs[29], qds[29])
        tracker.advance(0.03, qs[30:], qds[30:])
    for got, want in zip(fast.state, literal.state, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert np.linalg.norm(fast.state.nu[:6]) > 1e-3  # the base moved
