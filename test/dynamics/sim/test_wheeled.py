"""A robot on wheels (``ground: wheels``, docs/mfm.md eqs. 415-417): the compiled rate
against Kane's generic recursions (wheeled_snake.kane_rate) with the servo torques; the
simulator against scipy's DOP853 on the same model; the tail's pose against the floating
base's own kinematics (floating.world_poses); the robot file's checks."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from snake_dynamics.errors import ModelError, SimulationError
from snake_dynamics.floating import on_the_ground, world_poses
from snake_dynamics.mfm import recursive
from snake_dynamics.model import SnakeModel
from snake_dynamics.planar import wheeled as ws
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim import InputSource
from snake_dynamics.sim import wheeled as wheeled_module
from snake_dynamics.sim.wheeled import (
    WheeledSimulator,
    wheeled_rate,
    wheeled_snake,
)

ROOT = Path(__file__).resolve().parents[3]
WHEELS = ROOT / "config" / "robot_wheels.yaml"
RNG = np.random.default_rng(415)


@pytest.fixture(scope="module")
def model() -> SnakeModel:
    return SnakeModel.from_yaml(WHEELS)


def test_compiled_rate_is_kanes_recursion_under_the_servo_torques(model: SnakeModel) -> None:
    servo = ServoModel.from_yaml(WHEELS, model.joint_names)
    snake = wheeled_snake(model)
    k_ = snake.constants
    constants = [np.array(x) for x in (k_.half, k_.inverse_half, k_.masses, k_.inertias)]
    n = snake.n
    for _ in range(20):
        z = np.concatenate([RNG.normal(size=2), RNG.uniform(-2, 2, n), RNG.normal(size=2)])
        u = np.concatenate([RNG.normal(size=n - 1), RNG.uniform(-1, 1, n - 1), np.zeros(n - 1)])
        rates = ws.link_speeds(snake, z[2 : n + 2], z[n + 2 :]).rate
        tau = recursive.servo_torque(servo.packed, u, np.diff(z[2 : n + 2]), np.diff(rates))
        expected = ws.kane_derivative(snake, z, tau)
        got = wheeled_rate(*constants, servo.packed, z, u)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-11 * np.abs(expected).max())


class _Torques(InputSource):
    """Table II's torques T_k = sin(t)/(n-k) as tau_ff, no servo feedback."""

    def __init__(self, n: int) -> None:
        self.k = np.arange(1, n)
        self.n = n

    def inputs(self, t: np.ndarray) -> np.ndarray:
        tau = np.sin(t)[:, None] / (self.n - self.k)[None, :]
        return np.hstack([tau, np.zeros_like(tau), np.zeros_like(tau)])


def test_simulator_with_torques_alone_is_kanes_model_integrated_by_dop853() -> None:
    # zero servo gains: the inputs' feed-forward torques drive Kane's model; RK4 at 1 ms
    # against DOP853 at 1e-12 from the same bent, moving start
    model = SnakeModel.uniform(3, 1.0, 0.2, 0.05, axes="z", base="floating")
    model = SnakeModel(
        model.masses, model.lengths, model.radii, model.axes, base="floating", wheels=True
    )
    sim = WheeledSimulator(model, 1e-3)
    q0, qd0 = np.array([0.4, -0.3, 0.2]), np.array([0.5, -0.2, 0.1])
    sim.reset(0.0, q0, qd0, pose=(0.1, -0.2, 0.3))
    z0 = sim.z
    n = 4
    sim.advance(2000, _Torques(n))
    run = ws.simulate(
        wheeled_snake(model), lambda t: np.sin(t) / (n - np.arange(1, n)), z0, 2.0, samples=2
    )
    np.testing.assert_allclose(sim.z, run.z[-1], rtol=0, atol=1e-9 * np.abs(run.z[-1]).max())
    assert np.abs(sim.z - z0).max() > 0.1  # it moved


def test_a_run_that_leaves_the_finite_numbers_stops_at_its_last_finite_step(
    model: SnakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel is compiled with fastmath, where a NaN test may be dropped: the rows are
    checked outside it. The robot's servos with one RK4 step per 20 ms blow up."""
    monkeypatch.setattr(wheeled_module, "wheeled_substeps", lambda *_: 1)
    sim = WheeledSimulator(model, 0.02, servo=ServoModel.from_yaml(WHEELS, model.joint_names))
    target = np.full(model.n_joints, 0.5)

    class Hold(InputSource):
        def inputs(self, t: np.ndarray) -> np.ndarray:
            return np.hstack([np.zeros((t.size, target.size)), np.tile(target, (t.size, 1)),
                              np.zeros((t.size, target.size))])  # fmt: skip

    with pytest.raises(SimulationError, match="left the finite numbers at t = "):
        sim.advance(500, Hold())
    assert 0.0 < sim.time < 10.0
    assert np.all(np.isfinite(sim.z)) and np.all(np.isfinite(sim.q))


def test_reset_meets_two_joint_rates_and_keeps_the_pose() -> None:
    model = SnakeModel(
        np.ones(3), np.full(3, 0.2), np.full(3, 0.02), "zz", base="floating", wheels=True
    )
    sim = WheeledSimulator(model, 1e-3)
    sim.reset(0.0, [0.5, -0.4], [0.3, 0.7], pose=(1.0, 2.0, 0.25))
    np.testing.assert_allclose(sim.q, [0.5, -0.4], atol=1e-15)
    np.testing.assert_allclose(sim.qd, [0.3, 0.7], atol=1e-12)  # 2 velocity DOF: met exactly
    sim.reset(1.0, [0.1, 0.1], [0.0, 0.0])
    np.testing.assert_allclose(sim.z[:3], [1.0, 2.0, 0.25])  # the tail stays
    assert sim.time == 1.0


def test_tail_pose_places_every_body_where_the_floating_base_puts_it(model: SnakeModel) -> None:
    # the odometry's pose (x, y, tail yaw) and joint angles, through the floating base's
    # own forward kinematics, put every body's CM where Kane's positions are
    sim = WheeledSimulator(model, 1e-3)
    sim.reset(0.0, RNG.uniform(-0.8, 0.8, 8), np.zeros(8), pose=(0.3, -0.1, 2.0))
    state = sim.base_state
    _, centres = world_poses(model, state)
    snake = wheeled_snake(model)
    z = sim.z
    kane = ws.link_positions(snake, np.concatenate([z[2:-2], z[:2]]))
    np.testing.assert_allclose(centres[:, :2], kane, atol=1e-12)
    np.testing.assert_allclose(centres[:, 2], np.max(model.radii), atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(state.quaternion), 1.0, atol=1e-15)


def test_robot_file_checks_for_wheels(model: SnakeModel, tmp_path: Path) -> None:
    assert model.wheels and model.ground is None and model.base == "floating"
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        f"base: {ROOT / 'config' / 'robot.yaml'}\nmodel: {{base: floating, ground: wheels}}\n"
    )
    with pytest.raises(ModelError, match=r"needs every joint axis z.*joint_1"):
        SnakeModel.from_yaml(bad)
    fixed = tmp_path / "fixed.yaml"
    fixed.write_text(f"base: {WHEELS}\nmodel: {{base: fixed}}\n")
    with pytest.raises(ModelError, match="needs base: floating"):
        SnakeModel.from_yaml(fixed)
    with pytest.raises(ModelError, match="rolls on wheels"):
        on_the_ground(model)
    with pytest.raises(ModelError, match="has no wheels"):
        wheeled_snake(SnakeModel.from_yaml(ROOT / "config" / "robot_ground.yaml"))
    assert math.isclose(wheeled_snake(model).inertias[0], model.inertias[0][2, 2])
