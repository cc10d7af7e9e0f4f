"""The SE(2) tools and the 3-link kinematic snake (docs/mfm.md, "The kinematic snake").

References: scipy.linalg.expm/logm for exp and log; the definition g hat(ξ) g⁻¹ for Ad;
scipy's solve_ivp in (x, y, θ) coordinates for the reconstruction; the wheel constraints
themselves, each link's centre velocity taken by complex-step differentiation of its
world position written out here independently of the module.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
from scipy.integrate import solve_ivp

from snake_dynamics.errors import GaitError, SingularConfigurationError, StateError
from snake_dynamics.planar import kinematic as ks
from snake_dynamics.planar import se2

RNG = np.random.default_rng(20240320)
L = 0.8


# ---------------------------------------------------------------------------- SE(2)
@pytest.mark.parametrize("w", [0.0, 1e-12, -3e-9, 9.99e-5, 1.0001e-4, 0.7, -2.5, 3.1])
def test_exp_matches_expm_and_log_inverts_it(w: float) -> None:
    xi = np.array([0.3, -1.2, w])
    g = se2.exp(xi)
    np.testing.assert_allclose(g, scipy.linalg.expm(se2.hat(xi)), rtol=0, atol=1e-14)
    np.testing.assert_allclose(se2.log(g), xi, rtol=1e-13, atol=1e-15)
    assert se2.log(g)[2] == pytest.approx(w, rel=1e-12, abs=1e-300)


def test_exp_of_log_is_identity_on_random_poses_and_logm_agrees() -> None:
    for _ in range(20):
        g = se2.pose(*RNG.normal(size=2), RNG.uniform(-3.1, 3.1))
        np.testing.assert_allclose(se2.exp(se2.log(g)), g, atol=1e-14)
        np.testing.assert_allclose(se2.hat(se2.log(g)), scipy.linalg.logm(g).real, atol=1e-12)


def test_hat_vee_and_bad_input() -> None:
    xi = RNG.normal(size=3)
    np.testing.assert_array_equal(se2.vee(se2.hat(xi)), xi)
    with pytest.raises(StateError, match="se\\(2\\)"):
        se2.vee(np.eye(3))
    with pytest.raises(StateError, match="3-vector"):
        se2.exp([1.0, 2.0])


def test_adjoint_against_its_definition() -> None:
    for _ in range(10):
        g = se2.pose(*RNG.normal(size=3))
        xi = RNG.normal(size=3)
        expected = se2.vee(g @ se2.hat(xi) @ se2.inverse(g))
        np.testing.assert_allclose(se2.adjoint(g) @ xi, expected, atol=1e-14)
        # spatial velocity of g(t) = g exp(t ξ) at t = 0, by finite difference
        h = 1e-6
        g_dot = (g @ se2.exp(h * xi) - g @ se2.exp(-h * xi)) / (2 * h)
        np.testing.assert_allclose(se2.vee(g_dot @ se2.inverse(g)), expected, atol=1e-8)
        rate = se2.left_lift(g) @ xi
        np.testing.assert_allclose(rate, [g_dot[0, 2], g_dot[1, 2], xi[2]], atol=1e-8)


def test_reconstruction_of_constant_velocity_is_the_closed_form_exp() -> None:
    xi = np.array([0.4, 0.1, 0.9])
    g0 = se2.pose(1.0, -2.0, 0.3)
    g_pw = se2.integrate_piecewise(g0, np.tile(xi, (7, 1)), 0.5)
    _, g_m = se2.integrate_magnus4(g0, lambda t: xi, 0.0, 3.5, 7)
    exact = g0 @ se2.exp(3.5 * xi)
    np.testing.assert_allclose(g_pw[-1], exact, atol=1e-13)
    np.testing.assert_allclose(g_m[-1], exact, atol=1e-13)


def test_magnus4_is_fourth_order_against_solve_ivp() -> None:
    def xi(t: float) -> np.ndarray:
        return np.array([1.0 + 0.5 * math.sin(t), 0.3 * math.cos(2 * t), 1.5 * math.cos(t)])

    def rhs(t: float, s: np.ndarray) -> list[float]:
        v = xi(t)
        c, si = math.cos(s[2]), math.sin(s[2])
        return [c * v[0] - si * v[1], si * v[0] + c * v[1], v[2]]

    ref = solve_ivp(rhs, (0.0, 4.0), [0.0, 0.0, 0.0], rtol=1e-12, atol=1e-13).y[:, -1]
    errors = []
    for steps in (20, 40):
        _, g = se2.integrate_magnus4(np.eye(3), xi, 0.0, 4.0, steps)
        errors.append(np.linalg.norm(se2.coordinates(g[-1]) - ref))
    assert errors[0] < 1e-4
    assert 12.0 < errors[0] / errors[1] < 20.0, errors  # 2⁴ = 16


# ------------------------------------------------------------------- the kinematic snake
def link_centres(q: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """World centres and headings of links 1-3 for q = (x, y, θ, α1, α2), written out
    from the geometry (works on complex q for complex-step differentiation)."""
    x, y, th, a1, a2 = q
    h = L / 2
    c2 = np.array([x, y])
    d = np.array([np.cos(th), np.sin(th)])
    d1 = np.array([np.cos(th + a1), np.sin(th + a1)])
    d3 = np.array([np.cos(th - a2), np.sin(th - a2)])
    c1 = c2 + h * d + h * d1
    c3 = c2 - h * d - h * d3
    return [c1, c2, c3], [th + a1, th, th - a2]


def lateral_velocities(theta: float, r: np.ndarray, xi: np.ndarray, r_dot: np.ndarray):
    """Each link centre's velocity across its own axis, from g, ġ, r, ṙ."""
    g_dot = se2.left_lift(se2.pose(0.0, 0.0, theta)) @ xi
    q = np.array([0.3, -0.7, theta, *r], dtype=complex)
    q_dot = np.concatenate([g_dot, r_dot])
    eps = 1e-30
    centres, headings = link_centres(q + 1j * eps * q_dot)
    out = []
    for c, phi in zip(centres, headings, strict=True):
        v = c.imag / eps
        out.append(-math.sin(phi.real) * v[0] + math.cos(phi.real) * v[1])
    return np.array(out)


def test_link_poses_match_the_written_out_geometry() -> None:
    q = RNG.normal(size=5)
    poses = ks.link_poses(se2.pose(*q[:3]), q[3:], L)
    centres, headings = link_centres(q)
    for g, c, phi in zip(poses, centres, headings, strict=True):
        np.testing.assert_allclose(se2.coordinates(g)[:2], c, atol=1e-14)
        assert math.remainder(se2.coordinates(g)[2] - phi, 2 * math.pi) == pytest.approx(0)


def test_connection_satisfies_the_no_sideslip_constraint_on_every_link() -> None:
    for _ in range(50):
        r = RNG.uniform(-2.8, 2.8, 2)
        if abs(math.sin((r[0] - r[1]) / 2)) < 0.05:
            continue
        r_dot = RNG.normal(size=2)
        xi = -ks.local_connection(r, L) @ r_dot
        np.testing.assert_allclose(ks.body_velocity(r, r_dot, L), xi, rtol=1e-12, atol=1e-13)
        scale = max(1.0, float(np.max(np.abs(xi))))
        lateral = lateral_velocities(RNG.uniform(-3, 3), r, xi, r_dot)
        assert np.max(np.abs(lateral)) < 1e-12 * scale, lateral
        np.testing.assert_allclose(ks.constraint_matrix(r, L) @ np.r_[xi, r_dot], 0, atol=1e-12)
    # and a velocity the connection does not give does slip
    assert np.max(np.abs(lateral_velocities(0.1, r, xi + np.array([0.1, 0.0, 0.0]), r_dot))) > 1e-3


def test_cancelled_form_is_accurate_next_to_the_singular_line() -> None:
    # antisymmetric shape velocity: ξ is smooth across α1 = α2, so points 1e-9 apart agree
    r_dot = np.array([0.7, -0.7])
    for sigma in (0.0, 0.4, -1.1):
        near = [ks.body_velocity((sigma + e, sigma - e), r_dot, L) for e in (1e-9, -1e-9)]
        np.testing.assert_allclose(near[0], near[1], atol=1e-8)
        lateral = lateral_velocities(0.2, np.array([sigma + 1e-9, sigma - 1e-9]), near[0], r_dot)
        assert np.max(np.abs(lateral)) < 1e-12


def test_gait_crossing_of_the_singular_line_is_a_removable_limit() -> None:
    gait = ks.LateralUndulation()
    t_star = (math.pi / 2 - gait.phase / 2) / gait.frequency  # cos τ = 0: α1 = α2
    r = gait.shape(t_star)
    assert abs(r[0] - r[1]) < 1e-15
    at = gait.body_velocity(t_star, L)
    assert np.all(np.isfinite(at))
    for dt in (1e-6, -1e-6, 1e-9, -1e-9):
        # ξ(t) is smooth: |ξ(t* + dt) - ξ(t*)| ~ |ξ'| |dt| with |ξ'| < 10 here
        assert np.max(np.abs(gait.body_velocity(t_star + dt, L) - at)) < 10 * abs(dt) + 1e-14
    # away from the crossing the gait's form is the general one
    for t in (0.3, 2.2, 4.0, 5.9):
        np.testing.assert_allclose(
            gait.body_velocity(t, L),
            ks.body_velocity(gait.shape(t), gait.shape_velocity(t), L),
            rtol=1e-12,
            atol=1e-13,
        )
    # the series of s / sin s joins the closed form at its threshold
    s = ks.SERIES_TOL
    assert ks.x_over_sin(s * (1 - 1e-12)) == pytest.approx(s / math.sin(s), rel=1e-15)


def test_true_singularities_raise() -> None:
    with pytest.raises(SingularConfigurationError, match="alpha1 = alpha2"):
        ks.local_connection((0.3, 0.3), L)
    with pytest.raises(SingularConfigurationError, match="alpha1 = alpha2"):
        ks.body_velocity((0.0, 0.0), (1.0, 1.0), L)  # straight snake, symmetric bend
    with pytest.raises(SingularConfigurationError, match="folds"):
        ks.local_connection((math.pi, 0.2), L)
    with pytest.raises(GaitError, match="phase"):
        ks.LateralUndulation(phase=0.0)
    # the constraints confirm: on the line, the ξ block of (308) is rank 2
    omega = ks.constraint_matrix((0.3, 0.3), L)
    assert np.linalg.matrix_rank(omega[:, :3], tol=1e-12) == 2


def test_reversed_gait_undoes_the_displacement() -> None:
    forward = ks.cycle_displacement(ks.LateralUndulation(direction=1), L)
    backward = ks.cycle_displacement(ks.LateralUndulation(direction=-1), L)
    g_f, g_b = se2.pose(*forward), se2.pose(*backward)
    np.testing.assert_allclose(g_f @ g_b, np.eye(3), atol=1e-9)
    assert abs(forward[2]) < 1e-9  # no net turn: the reversal is a pure sign flip
    np.testing.assert_allclose(backward, -forward, atol=1e-9)


def test_zero_amplitude_stays_put() -> None:
    np.testing.assert_array_equal(
        ks.cycle_displacement(ks.LateralUndulation(amplitude=0.0), L, steps=20), 0.0
    )


def test_small_amplitudes_approach_pi_L_cot_half_phase_with_an_a2_correction() -> None:
    phase = math.radians(25.0)
    limit = math.pi * L / math.tan(phase / 2)
    dist = []
    for a in (0.02, 0.04):
        d = ks.cycle_displacement(ks.LateralUndulation(amplitude=a, phase=phase), L, 200)
        dist.append(math.hypot(d[0], d[1]))
    deficits = [limit - x for x in dist]
    assert deficits[0] > 0
    assert deficits[1] / deficits[0] == pytest.approx(4.0, rel=0.02)  # O(a²)


def test_paper_gait_displacement_and_its_convergence() -> None:
    gait = ks.LateralUndulation()  # 40°, 25°, 1 rad/s: period 2π s
    d400 = ks.cycle_displacement(gait, 1.0, 400)
    d200 = ks.cycle_displacement(gait, 1.0, 200)
    np.testing.assert_allclose(d400, d200, atol=1e-6)
    np.testing.assert_allclose(d400, [0.22724, 5.97206, 0.0], atol=1e-5)
    # the paper: ξ_y is zero along the gait (the middle wheel)
    assert all(gait.body_velocity(t)[1] == 0.0 for t in np.linspace(0, 6.3, 50))


def test_connection_plot_writes_a_png(tmp_path: Path) -> None:
    out = ks.plot_connection(tmp_path / "connection.png", L, points=9)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
