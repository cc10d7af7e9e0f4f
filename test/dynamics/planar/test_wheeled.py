"""The wheeled n-link snake (docs/mfm.md, "The wheeled snake: Kane's recursive model").

References: the two formulations against each other (Kane's recursions against Lagrange's
equations with multipliers, which shares no code with them but the model's numbers; its
admissible velocities come from a linear solve of the constraints, not the recursions);
central finite differences of the link speeds for the paper's ∂/∂θ recursion; the
work-energy theorem (the torques' work integrated beside the state); the wheel
constraints evaluated from the constraint matrix; and a hand derivation for the straight
snake at rest, where u̇ = (0, 2 Σ_k T_k (-1)^k / Σ_k I_k) for equal links.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from snake_dynamics.errors import ModelError, SimulationError, StateError
from snake_dynamics.planar import OperationCount
from snake_dynamics.planar import wheeled as ws

RNG = np.random.default_rng(20050518)
EPS = np.finfo(float).eps


def random_snake(n: int) -> ws.WheeledSnake:
    return ws.WheeledSnake(
        RNG.uniform(0.5, 2.0, n), RNG.uniform(0.1, 0.4, n), RNG.uniform(0.002, 0.02, n)
    )


def table_ii_torque(n: int) -> Callable[[float], np.ndarray]:
    k = np.arange(1, n)
    return lambda t: np.sin(t) / (n - k)


def table_ii_start(snake: ws.WheeledSnake) -> np.ndarray:
    k = np.arange(1, snake.n + 1)
    return ws.initial_state(snake, math.pi * (-1.0) ** k / 6.0)


# ----------------------------------------------------------- state derivatives agree
@pytest.mark.parametrize("n", [2, 3, 8, 30])
def test_kane_and_lagrange_state_derivatives_agree_at_random_states(n: int) -> None:
    snake = random_snake(n)
    for _ in range(5):
        theta = RNG.uniform(-math.pi, math.pi, n)
        u = RNG.normal(size=2) * (1.0, 5.0)
        tau = RNG.normal(size=n - 1)
        z = ws.initial_state(snake, theta, u, RNG.normal(size=2))
        dz = ws.kane_derivative(snake, z, tau)
        acc = ws.kane_accelerations(snake, theta, u, tau)
        s = ws.full_state(snake, z)
        ds = ws.lagrange_derivative(snake, s, tau)
        q_dot, q_ddot = ds[: n + 2], ds[n + 2 :]
        # velocities: Kane's recursion against the constraint solve
        np.testing.assert_allclose(
            dz[2 : n + 2], q_dot[:n], rtol=0, atol=1e-12 * np.abs(q_dot).max()
        )
        np.testing.assert_allclose(dz[:2], q_dot[n:], rtol=0, atol=1e-12 * np.abs(q_dot).max())
        # accelerations: θ̈_k = ω̇_k, and (ẍ, ÿ) = V̇_1 e_1 + V_1 ω_1 n_1
        e1 = np.array([math.cos(theta[0]), math.sin(theta[0])])
        n1 = np.array([-e1[1], e1[0]])
        kane_xy = acc.u_dot[0] * e1 + u[0] * u[1] * n1
        kane_q_ddot = np.concatenate([acc.rate_dot, kane_xy])
        scale = np.abs(q_ddot).max()
        np.testing.assert_allclose(kane_q_ddot, q_ddot, rtol=0, atol=1e-10 * scale)
        assert dz[-1] == pytest.approx(q_ddot[0], rel=1e-10, abs=1e-10 * scale)


def test_the_papers_literal_n_matrix_matches_the_recursive_bias_and_finite_differences() -> None:
    n = 7
    snake = random_snake(n)
    theta = RNG.uniform(-2.0, 2.0, n)
    u = np.array([0.7, -1.9])
    tau = RNG.normal(size=n - 1)
    mass, bias, forces = ws.kane_matrices(snake, theta, u, tau)
    acc = ws.kane_accelerations(snake, theta, u, tau)
    # M u̇ + N ω = F with the O(n²) N of the paper and the O(n) u̇
    np.testing.assert_allclose(mass @ acc.u_dot + bias @ acc.speeds.rate, forces, atol=1e-12)
    dv, dw = ws.angle_partials(snake, theta, u)
    assert np.all(np.triu(dv, 1) == 0) and np.all(np.triu(dw, 1) == 0)  # eq. (21) corrected
    step = 1e-6
    for j in range(n):
        plus, minus = theta.copy(), theta.copy()
        plus[j] += step
        minus[j] -= step
        sp_p, sp_m = ws.link_speeds(snake, plus, u), ws.link_speeds(snake, minus, u)
        np.testing.assert_allclose(dv[:, j], (sp_p.speed - sp_m.speed) / (2 * step), atol=1e-7)
        np.testing.assert_allclose(dw[:, j], (sp_p.rate - sp_m.rate) / (2 * step), atol=1e-6)
    # M is symmetric positive definite
    np.testing.assert_allclose(mass, mass.T, atol=0)
    assert np.all(np.linalg.eigvalsh(mass) > 0)


def test_straight_snake_at_rest_accelerates_as_derived_by_hand() -> None:
    # straight, equal links: V_k = V_1, ω_k = (-1)^(k-1) ω_1, so M = diag(Σ m, Σ I) and
    # F = (0, 2 Σ_k T_k (-1)^k); with T_k = 1 and n - 1 = 29 joints F_2 = -2.
    n = 30
    snake = ws.WheeledSnake.uniform(n)
    tau = np.ones(n - 1)
    expected = np.array([0.0, -2.0 / (n * 0.005)])
    acc = ws.kane_accelerations(snake, np.zeros(n), np.zeros(2), tau)
    np.testing.assert_allclose(acc.u_dot, expected, rtol=1e-13, atol=1e-13)
    z = ws.initial_state(snake, np.zeros(n))
    ds = ws.lagrange_derivative(snake, ws.full_state(snake, z), tau)
    np.testing.assert_allclose(
        ds[n + 2 : 2 * n + 2], expected[1] * (-1.0) ** np.arange(n), rtol=1e-12
    )
    np.testing.assert_allclose(ds[2 * n + 2 :], 0.0, atol=1e-12)


# ------------------------------------------------------------------- trajectories
@pytest.fixture(scope="module")
def table_ii_runs() -> tuple[ws.WheeledRun, ws.WheeledRun]:
    snake = ws.WheeledSnake.uniform(3)
    args = (snake, table_ii_torque(3), table_ii_start(snake), 6.0)
    return ws.simulate(*args, method="kane"), ws.simulate(*args, method="lagrange")


def test_table_ii_kane_and_lagrange_trajectories_agree(
    table_ii_runs: tuple[ws.WheeledRun, ws.WheeledRun],
) -> None:
    kane, lagrange = table_ii_runs
    # Lagrange integrates the differentiated constraints, which drift at the integrator's
    # tolerance; the two runs differ by that drift, not by the models.
    assert np.abs(kane.z).max() > 0.5  # it moves
    np.testing.assert_allclose(kane.z, lagrange.z, rtol=0, atol=1e-7)
    np.testing.assert_allclose(kane.energy, lagrange.energy, rtol=0, atol=1e-8)


def test_table_ii_energy_residual_and_constraints_at_integrator_accuracy(
    table_ii_runs: tuple[ws.WheeledRun, ws.WheeledRun],
) -> None:
    kane, lagrange = table_ii_runs
    scale = np.abs(kane.work).max()
    assert scale > 0.1
    assert np.abs(kane.energy_residual).max() < 1e-9 * scale
    assert np.abs(lagrange.energy_residual).max() < 1e-7 * scale
    assert np.abs(kane.lateral).max() < 100 * EPS * np.abs(kane.speed).max()
    assert np.abs(lagrange.lateral).max() < 1e-8
    # the joint angles follow the torques: they are not all constant
    assert np.ptp(kane.joint_angles, axis=0).min() > 1e-3


def test_energy_residual_detects_a_wrong_bias(monkeypatch: pytest.MonkeyPatch) -> None:
    # the same run with the velocity-product terms dropped breaks S(t): S can fail
    snake = ws.WheeledSnake.uniform(3)
    original = ws.kane_recursion

    def no_bias(*args: Any) -> Any:
        v, w, pv, pw, bv, bw = original(*args)
        return v, w, pv, pw, [0.0] * len(bv), [0.0] * len(bw)

    monkeypatch.setattr(ws, "kane_recursion", no_bias)
    run = ws.simulate(snake, table_ii_torque(3), table_ii_start(snake), 4.0, samples=41)
    assert np.abs(run.energy_residual).max() > 1e-4


def test_zero_torque_from_rest_nothing_moves() -> None:
    n = 5
    snake = random_snake(n)
    z0 = ws.initial_state(snake, RNG.uniform(-1.0, 1.0, n), position=(0.3, -0.2))
    assert np.all(ws.kane_derivative(snake, z0, np.zeros(n - 1)) == 0.0)
    for method in ("kane", "lagrange"):
        run = ws.simulate(snake, lambda t: np.zeros(n - 1), z0, 2.0, method=method, samples=11)
        assert np.all(run.z == z0), method
        assert np.all(run.energy == 0.0) and np.all(run.work == 0.0)


def test_zero_torque_conserves_energy_of_a_moving_snake() -> None:
    n = 6
    snake = random_snake(n)
    z0 = ws.initial_state(snake, RNG.uniform(-1.0, 1.0, n), u=(0.5, 1.5))
    run = ws.simulate(snake, lambda t: np.zeros(n - 1), z0, 3.0, samples=31)
    assert run.energy[0] > 0.1
    assert np.abs(run.energy - run.energy[0]).max() < 1e-10 * run.energy[0]
    assert np.ptp(run.theta, axis=0).max() > 0.1  # it moved


def test_table_iii_thirty_links_short_run() -> None:
    n = 30
    snake = ws.WheeledSnake.uniform(n)
    z0 = ws.initial_state(snake, np.zeros(n))
    run = ws.simulate(snake, lambda t: np.ones(n - 1), z0, 1.0, samples=21)
    assert run.work[-1] > 0.01
    assert np.abs(run.energy_residual).max() < 1e-9 * run.work[-1]
    assert np.abs(run.lateral).max() < 1e-12
    lagrange = ws.simulate(snake, lambda t: np.ones(n - 1), z0, 1.0, samples=21, method="lagrange")
    np.testing.assert_allclose(lagrange.z, run.z, rtol=0, atol=1e-9)
    assert np.abs(lagrange.energy_residual).max() < 1e-9 * run.work[-1]
    # early on, ω_1 follows the hand-derived initial acceleration -2 / (n I)
    early = ws.simulate(snake, lambda t: np.ones(n - 1), z0, 1e-3, samples=2)
    assert early.z[-1, -1] == pytest.approx(-2.0 / (n * 0.005) * 1e-3, rel=1e-3)


# ------------------------------------------------------------------------- errors
def test_bad_models_and_states_raise() -> None:
    with pytest.raises(ModelError, match=r"masses\[1\]"):
        ws.WheeledSnake(np.array([1.0, -1.0]), np.ones(2), np.ones(2))
    with pytest.raises(ModelError, match="one entry per link"):
        ws.WheeledSnake(np.ones(3), np.ones(2), np.ones(2))
    with pytest.raises(ModelError, match="n must be"):
        ws.WheeledSnake.uniform(1)
    snake = ws.WheeledSnake.uniform(3)
    with pytest.raises(StateError, match="tau"):
        ws.kane_derivative(snake, np.zeros(7), np.zeros(3))
    with pytest.raises(StateError, match="z"):
        ws.kane_derivative(snake, np.zeros(6), np.zeros(2))
    with pytest.raises(SimulationError, match="t_final"):
        ws.simulate(snake, lambda t: np.zeros(2), np.zeros(7), 0.0)


# ------------------------------------------------------------------ operation counts
def test_counting_scalar_tallies_each_operation_once() -> None:
    count = OperationCount()
    a, b, c = count.number(2.0), count.number(3.0), count.number(4.0)
    out = count.cos(a * b + 1.0 - c / 2.0) * -b
    assert float(out) == pytest.approx(math.cos(2.0 * 3.0 + 1.0 - 4.0 / 2.0) * -3.0)
    assert count == OperationCount(additions=2, multiplications=2, divisions=1, functions=1)


def test_kane_operation_count_is_linear_in_n_and_below_table_i() -> None:
    # Table I with its M and A labels swapped back (errata): multiplications
    # 15/2 n^2 + 97/2 n - 21, additions 3 n^2 + 24 n - 27; the counted run is the real code
    counts = {}
    for n in range(2, 31):
        snake = random_snake(n)
        z = ws.initial_state(snake, RNG.uniform(-2, 2, n), RNG.normal(size=2), RNG.normal(size=2))
        tau = RNG.normal(size=n - 1)
        count, z_dot = ws.kane_operation_count(snake, z, tau)
        assert np.array_equal(z_dot, ws.kane_derivative(snake, z, tau))
        counts[n] = count
        if n >= 3:
            assert count.additions < 3 * n * n + 24 * n - 27
            assert count.multiplications + count.divisions < 7.5 * n * n + 48.5 * n - 21
    for key in ("additions", "multiplications", "divisions", "functions"):
        series = np.array([getattr(counts[n], key) for n in range(2, 31)])
        assert np.all(np.diff(series, 2) == 0), key  # O(n): exactly affine in n
    assert counts[2].functions == 4 and counts[3].functions - counts[2].functions == 2


def test_single_precision_runs_stay_in_float32_and_near_double() -> None:
    # the precision study of bench/wheeled.py: both forms computed in float32 throughout
    n = 6
    snake = random_snake(n)
    z = ws.initial_state(snake, RNG.uniform(-1, 1, n), RNG.normal(size=2), RNG.normal(size=2))
    tau = RNG.normal(size=n - 1)
    k32 = ws.KaneConstants.of(snake, np.float32)
    z32 = ws.kane_rate(
        k32, list(z.astype(np.float32)), list(tau.astype(np.float32)), np.cos, np.sin
    )
    assert all(type(x) is np.float32 for x in z32)
    exact = ws.kane_derivative(snake, z, tau)
    np.testing.assert_allclose(
        np.array(z32, dtype=float), exact, rtol=0, atol=1e-5 * np.abs(exact).max()
    )
    s = ws.full_state(snake, z)
    s32 = ws.lagrange_derivative(snake, s.astype(np.float32), tau.astype(np.float32))
    assert s32.dtype == np.float32
    exact = ws.lagrange_derivative(snake, s, tau)
    np.testing.assert_allclose(s32, exact, rtol=0, atol=1e-4 * np.abs(exact).max())
