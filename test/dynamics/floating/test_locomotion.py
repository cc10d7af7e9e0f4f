"""The snake on the ground: the floating-base MFM (docs/mfm.md eqs. 221-230) and the ground
(eqs. 231-237), against the fixed-tail MFM, conservation laws, the planar reference snake
of Liljebaeck et al. (test/support/planar_snake.py, written on its own from the book's equations)
and the laws of snake locomotion."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from support.models import random_floating_state, random_model, undulation
from support.planar_snake import PlanarSnake, lateral_undulation, simulate

import snake_dynamics as sd
from snake_dynamics.errors import ModelError, SimulationError
from snake_dynamics.floating import literal as fl
from snake_dynamics.floating import simulate_prescribed_fast
from snake_dynamics.floating import state as fs
from snake_dynamics.ground import Ground, stable_step
from snake_dynamics.model import SnakeModel

G = (0.0, 0.0, -9.81)
CONFIG = Path(__file__).resolve().parents[3] / "config"


def test_the_floating_terms_reduce_to_the_fixed_tail(rng: np.random.Generator) -> None:
    """With the tail held (its rows dropped, its velocity zero) M*, N* nu and F* are the
    fixed-tail ones; joint torques put nothing on the base rows (internal forces); B_dot
    is the rate of B along the motion (central differences)."""
    model = random_model(rng, 5, random_axes=True)
    state = random_floating_state(rng, model)
    terms = fl.floating_terms(model, state.rotation, state.q, state.nu)
    np.testing.assert_allclose(terms.m_star[6:, 6:], sd.mass_matrix(model, state.q), atol=1e-14)
    still = state.nu.copy()
    still[:6] = 0.0
    held = fl.floating_terms(model, state.rotation, state.q, still)
    np.testing.assert_allclose(held.bias[6:], sd.bias_forces(model, state.q, still[6:]), atol=1e-13)
    tau = rng.normal(size=5)
    f_star = terms.b.T @ fl.floating_force_list(model, tau)
    weight = model.masses.sum() * model.gravity
    np.testing.assert_allclose(f_star[:3], state.rotation.T @ weight, atol=1e-12)
    tail_gravity = dataclasses.replace(model, gravity=state.rotation.T @ model.gravity)
    np.testing.assert_allclose(
        f_star[6:], sd.generalized_forces(tail_gravity, state.q, tau), atol=1e-12
    )
    h = 1e-6
    zero = lambda t, s: np.zeros(11)  # noqa: E731  (constant nu: the pose moves along it)
    ahead, behind = (fl.rk4_floating_step(zero, state, 0.0, dt) for dt in (h, -h))
    rate = (
        fl.floating_b_matrix(model, ahead.rotation, ahead.q)
        - fl.floating_b_matrix(model, behind.rotation, behind.q)
    ) / (2 * h)
    np.testing.assert_allclose(rate, terms.b_dot, atol=1e-8)


def _free_run(
    model: SnakeModel,
    state: fs.FloatingState,
    tau: Callable[[float], np.ndarray],
    t_end: float,
    dt: float,
) -> fs.FloatingState:
    def accel(t: float, s: fs.FloatingState) -> np.ndarray:
        return fl.floating_forward_dynamics(model, s.rotation, s.q, s.nu, tau(t))

    for i in range(round(t_end / dt)):
        state = fl.rk4_floating_step(accel, state, i * dt, dt)
    return state


@pytest.mark.slow
def test_a_free_chain_conserves_momentum_and_energy(rng: np.random.Generator) -> None:
    """No ground, no gravity (reference check (a)): under joint torques, linear and angular
    momentum (about the origin) stay constant to 1e-9 relative over 10 s; with no torque
    the energy does too over 2 s, to what RK4 at 4 ms allows."""
    model = dataclasses.replace(random_model(rng, 4, gravity=False), base="floating")
    start = random_floating_state(rng, model)
    p0, l0 = fl.momentum(model, start)
    torques = lambda t: 1e-3 * np.sin(3.0 * t + np.arange(4))  # noqa: E731
    end = _free_run(model, start, torques, 10.0, 4e-3)
    p1, l1 = fl.momentum(model, end)
    assert np.max(np.abs(p1 - p0)) / np.max(np.abs(p0)) < 1e-9
    assert np.max(np.abs(l1 - l0)) / np.max(np.abs(l0)) < 1e-9
    assert np.linalg.norm(end.position - start.position) > 0.5  # it went somewhere
    e0 = fl.floating_energy(model, start)
    coasting = _free_run(model, start, lambda t: np.zeros(4), 2.0, 4e-3)
    assert abs(fl.floating_energy(model, coasting) - e0) / e0 < 1e-8
    assert abs(np.linalg.norm(coasting.quaternion) - 1.0) < 1e-15


def test_the_quaternion_rk4_is_fourth_order(rng: np.random.Generator) -> None:
    """Halving the step divides the error of a tumbling chain's pose and velocities by 16
    (RK4 on the quaternion, renormalised after each step: still order 4)."""
    model = dataclasses.replace(random_model(rng, 3, gravity=False), base="floating")
    start = random_floating_state(rng, model, scale=1.0)
    none = lambda t: np.zeros(3)  # noqa: E731

    def flat(s: fs.FloatingState) -> np.ndarray:
        return np.concatenate([s.position, s.quaternion, s.q, s.nu])

    exact = flat(_free_run(model, start, none, 0.8, 0.0025))
    errors = [
        np.max(np.abs(flat(_free_run(model, start, none, 0.8, dt)) - exact)) for dt in (0.04, 0.02)
    ]
    assert 13.0 < errors[0] / errors[1] < 19.0, errors


def planar_twin(ground: Ground, n_links: int = 10) -> SnakeModel:
    """The reference's snake in 3D (N = 10, l = 0.07 m, m = 1 kg, J = 0.0016 kg m^2 about
    the vertical): all joints yaw, cylinders of 2 cm lying on the ground under gravity."""
    radius, inertia = 0.02, 0.0016
    model = SnakeModel.uniform(
        n_links - 1, 1.0, 0.14, radius, axes="z", gravity=G, base="floating", ground=ground
    )
    spin = np.diag([inertia, 0.5 * radius**2, inertia])
    return dataclasses.replace(model, inertias=np.array([spin] * n_links))


def test_on_the_ground_the_3d_snake_moves_as_the_planar_reference() -> None:
    """Reference check (c): viscous friction c_t = 1, c_n = 10 N s/m at the link centres,
    lateral undulation (30 deg, 120 deg/s, 40 deg); the 3D MFM snake, resting on the ground
    on its contact springs, travels as the planar model of Liljebaeck et al. (the issue
    asks for 2 %; measured 3e-9 relative), head first, and stays planar. The run is the
    literal equations' compiled twin (equal to them: test_recursive.py), 1/50 of the CPU."""
    alpha, omega, delta = math.radians(30), math.radians(120), math.radians(40)
    reference = simulate(
        PlanarSnake(10, 0.07, 1.0, 0.0016, c_t=1.0, c_n=10.0),
        lateral_undulation(alpha, omega, delta, n_links=10),
        9.0,
        0.01,
    )
    ground = Ground(mu_along=0.0, mu_across=0.0, viscous_along=1.0, viscous_across=10.0)
    model = planar_twin(ground)
    run = simulate_prescribed_fast(
        model,
        undulation(9, alpha, omega, delta),
        9.0,
        4e-3,
        fs.rest_state(model, (0, 0, 0.02)),
        every=5,
    )
    speed = np.linalg.norm(run.mean_velocity(6.0, 9.0)[:2])
    expected = np.linalg.norm(reference.mean_velocity(6.0, 9.0))
    assert expected > 0.2
    assert speed == pytest.approx(expected, rel=1e-6)
    assert run.forward_speed(6.0, 9.0) == pytest.approx(reference.forward_speed(6.0, 9.0), rel=1e-6)
    assert np.max(np.abs(run.position[:, 2] - 0.02)) < 1e-3  # on the ground: sunk < 1 mm
    assert np.max(np.abs(run.com[:, 2] - run.com[0, 2])) < 1e-3


def _coulomb_speed(mu_along: float, mu_across: float, delta: float) -> float:
    """Forward speed of a 7-body all-yaw snake on Coulomb friction, 1 Hz undulation (the
    compiled twin of the literal equations)."""
    ground = Ground(mu_along=mu_along, mu_across=mu_across)
    model = SnakeModel.uniform(
        6, 0.3, 0.1, 0.02, axes="z", gravity=G, base="floating", ground=ground
    )
    motion = undulation(6, math.radians(30), 2 * math.pi, delta)
    run = simulate_prescribed_fast(
        model, motion, 3.0, 2e-3, fs.rest_state(model, (0, 0, 0.02)), every=5
    )
    return run.forward_speed(1.0, 3.0)


def test_the_laws_of_snake_locomotion() -> None:
    """Reference check (d) on the 3D model: isotropic viscous friction gives no net travel;
    on Coulomb friction the travel reverses with the wave and grows with mu_across / mu_along.
    The runs are the literal equations' compiled twin (equal to them: test_recursive.py):
    0.4 CPU s instead of 45."""
    isotropic = Ground(mu_along=0.0, mu_across=0.0, viscous_along=5.0, viscous_across=5.0)
    model = planar_twin(isotropic, n_links=6)
    motion = undulation(5, math.radians(30), math.radians(120), math.radians(40))
    run = simulate_prescribed_fast(model, motion, 3.0, 4e-3, fs.rest_state(model, (0, 0, 0.02)))
    assert np.linalg.norm(run.com[-1, :2] - run.com[0, :2]) < 1e-6  # RK4's error: 4e-9 m
    forward = _coulomb_speed(0.05, 0.5, 0.7)
    backward = _coulomb_speed(0.05, 0.5, -0.7)
    assert forward > 0.2 and backward == pytest.approx(-forward, rel=0.05)
    speeds = [_coulomb_speed(0.05, ratio * 0.05, 0.7) for ratio in (2.0, 5.0)]
    assert speeds[0] < speeds[1] < forward


def test_resting_on_the_ground_the_contacts_carry_the_weight() -> None:
    """A straight snake lowered onto the ground settles with its contact springs carrying
    its weight, each point sunk m g / (contacts k), and does not slide. The run is the
    literal equations' compiled twin (equal to them: test_recursive.py)."""
    ground = Ground()
    model = SnakeModel.uniform(
        4, 0.3, 0.1, 0.02, axes="xz", gravity=G, base="floating", ground=ground
    )
    still = lambda t: (np.zeros(4), np.zeros(4), np.zeros(4))  # noqa: E731
    run = simulate_prescribed_fast(model, still, 1.0, 2e-3, fs.rest_state(model, (0, 0, 0.021)))
    end = fs.FloatingState(run.position[-1], run.quaternion[-1], run.q[-1], run.nu[-1])
    wrenches = fl.ground_force_list(model, ground, end)
    assert wrenches[:, 2].sum() == pytest.approx(model.masses.sum() * 9.81, rel=1e-6)
    sink = 0.3 * 9.81 / (3 * ground.stiffness)
    assert end.position[2] == pytest.approx(0.02 - sink, rel=1e-6)
    assert np.max(np.abs(run.com[:, :2] - run.com[0, :2])) < 1e-12


def test_ground_parameters_and_the_step_rule_are_checked() -> None:
    """Robot YAML ``base:`` and ``ground:``; one-line errors; a step over eq. (237)'s bound
    is refused before the run."""
    spec = {
        "base": "floating",
        "gravity": list(G),
        "tail": {"mass": 0.3, "length": 0.1},
        "links": [{"mass": 0.3, "length": 0.1}],
        "ground": {"mu_along": 0.1, "mu_across": 0.6, "mu_backward": 0.3},
    }
    model = SnakeModel.from_dict(spec)
    assert model.base == "floating" and model.ground == Ground(
        mu_along=0.1, mu_across=0.6, mu_backward=0.3
    )
    assert SnakeModel.from_dict({**spec, "ground": None, "base": "fixed"}).ground is None
    with pytest.raises(ModelError, match="base must be one of fixed, floating"):
        SnakeModel.from_dict({**spec, "base": "wobbly"})
    with pytest.raises(ModelError, match=r"ground: unknown keys \['mu'\]"):
        SnakeModel.from_dict({**spec, "ground": {"mu": 0.3}})
    with pytest.raises(ModelError, match=r"ground\.stiffness must be finite and > 0"):
        Ground(stiffness=-1.0)
    with pytest.raises(ModelError, match=r"ground\.contacts must be an integer 1\.\.16"):
        Ground(contacts=0)
    for robot in ("robot", "paper_planar", "paper_3d", "snake20"):  # the shipped robots
        masses = SnakeModel.from_yaml(CONFIG / f"{robot}.yaml").masses
        assert stable_step(Ground(), masses, 9.81) >= 1e-3, robot  # RK4 at 1 ms: stable
    limit = stable_step(model.ground, model.masses, 9.81)
    assert limit == pytest.approx(math.sqrt(0.3 / (3 * 2.0e4)))
    still = lambda t: (np.zeros(1), np.zeros(1), np.zeros(1))  # noqa: E731
    with pytest.raises(SimulationError, match=r"over the 2\.24 ms the ground allows"):
        fl.simulate_prescribed(model, still, 0.1, 3e-3)


def test_the_travel_of_a_run_by_hand() -> None:
    """eq. (238) on a made-up run: 0.2 m along x in 2 s while the heading turns from 179 to
    -179 deg (2 deg through the wrap), joint 1 working at 3 W and joint 2 braking."""
    model = SnakeModel.uniform(2, 0.5, 0.1, 0.02, axes="z", gravity=G, base="floating")
    t = np.linspace(0.0, 2.0, 201)
    com = np.zeros((t.size, 3))
    com[:, 0] = 0.1 * t
    heading = np.radians(179.0 + t)
    heading = np.where(heading > math.pi, heading - 2 * math.pi, heading)
    nu = np.zeros((t.size, 8))
    nu[:, 6:] = [1.0, 1.0]
    tau = np.tile([3.0, -5.0], (t.size, 1))
    run = fs.FloatingRun(
        t, com, np.tile([0, 0, 0, 1.0], (t.size, 1)), np.zeros((t.size, 2)), nu, com, heading, tau
    )
    travel = fs.locomotion(model, run)
    assert travel.distance == pytest.approx(0.2) and travel.mean_speed == pytest.approx(0.1)
    assert travel.heading_drift == pytest.approx(math.radians(2.0))
    assert travel.positive_work == pytest.approx(6.0)
    assert travel.cost_of_transport == pytest.approx(6.0 / (1.5 * 9.81 * 0.2))
    assert travel.forward_speed == pytest.approx(-0.1, rel=1e-3)  # heading about -x


def test_step_samples_drive_the_base_as_the_motion_does(rng: np.random.Generator) -> None:
    """eq. (239): the cubic through a step's end samples is a cubic motion itself, so the base
    stepped from the joints' samples alone (as the dynamics node steps it) is the base of
    the exact motion, to rounding."""
    coefficients = rng.normal(scale=0.3, size=(4, 3))

    def cubic(t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a, b, c, d = coefficients
        return a + b * t + c * t**2 + d * t**3, b + 2 * c * t + 3 * d * t**2, 2 * c + 6 * d * t

    for t in (0.2, 0.23, 0.25):
        for got, want in zip(
            fl.hermite_motion(0.2, 0.05, *cubic(0.2)[:2], *cubic(0.25)[:2])(t),
            cubic(t),
            strict=True,
        ):
            np.testing.assert_allclose(got, want, atol=1e-12)
    ground = Ground(mu_along=0.1, mu_across=0.5)
    model = SnakeModel.uniform(
        3, 0.3, 0.1, 0.02, axes="z", gravity=G, base="floating", ground=ground
    )
    dt = 2e-3
    exact = fl.simulate_prescribed(model, cubic, 0.2, dt, fs.rest_state(model, (0, 0, 0.02)))
    state = fs.FloatingState(exact.position[0], exact.quaternion[0], exact.q[0], exact.nu[0])
    for i in range(100):
        t = i * dt
        q0, qd0, _ = cubic(t)
        q1, qd1, _ = cubic(t + dt)
        state = fl.prescribed_base_step(
            model, fl.hermite_motion(t, dt, q0, qd0, q1, qd1), state, t, dt
        )
    np.testing.assert_allclose(state.position, exact.position[-1], atol=1e-12)
    np.testing.assert_allclose(state.nu, exact.nu[-1], atol=1e-10)
    assert np.linalg.norm(exact.com[-1, :2] - exact.com[0, :2]) > 1e-4  # it moved (0.5 mm)
