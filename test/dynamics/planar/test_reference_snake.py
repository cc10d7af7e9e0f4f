"""Tests of the planar reference snake (test/support/planar_snake.py) itself.

First its conventions against derivations made here independently (the chain of links built
end to end, the friction rotated from the link frame, Lagrange's equations by finite
differences, a maximal-coordinate model with joint constraints), then the known laws of
lateral undulation with the literature parameters (N = 10, l = 0.07 m, m = 1 kg,
J = 0.0016 kg m², c_t = 1, c_n = 10 N s/m, alpha = 30 deg, omega = 120 deg/s, delta = 40 deg).
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest
from support.planar_snake import FloatArray, PlanarRun, PlanarSnake, lateral_undulation, simulate

N, L, M, J = 10, 0.07, 1.0, 0.0016
ALPHA, OMEGA, DELTA = math.radians(30), math.radians(120), math.radians(40)
PERIOD = 2 * math.pi / OMEGA  # 3 s
T_END, DT = 20.0, 0.01
WINDOW = (10.0, 20.0)  # after the transient: 10 s, 3.3 gait periods


def snake(c_t: float = 1.0, c_n: float = 10.0) -> PlanarSnake:
    return PlanarSnake(n_links=N, half_length=L, mass=M, inertia=J, c_t=c_t, c_n=c_n)


@cache
def run(c_t: float = 1.0, c_n: float = 10.0, delta: float = DELTA) -> PlanarRun:
    """Lateral undulation from rest, 20 s (cached: several tests share a run)."""
    gait = lateral_undulation(ALPHA, OMEGA, delta, n_links=N)
    return simulate(snake(c_t, c_n), gait, T_END, DT)


def chain(
    theta: FloatArray, theta_dot: FloatArray, lh: float
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Link CMs and their velocities relative to the snake's CM, built by walking the chain
    from the tail: the head end of link i is the tail end of link i+1 (no K matrix)."""
    n = len(theta)
    x, y, vx, vy = (np.zeros(n) for _ in range(4))
    for i in range(n - 1):
        c0, c1 = math.cos(theta[i]), math.cos(theta[i + 1])
        s0, s1 = math.sin(theta[i]), math.sin(theta[i + 1])
        x[i + 1] = x[i] + lh * (c0 + c1)
        y[i + 1] = y[i] + lh * (s0 + s1)
        vx[i + 1] = vx[i] - lh * (s0 * theta_dot[i] + s1 * theta_dot[i + 1])
        vy[i + 1] = vy[i] + lh * (c0 * theta_dot[i] + c1 * theta_dot[i + 1])
    return x - x.mean(), y - y.mean(), vx - vx.mean(), vy - vy.mean()


# -- conventions -------------------------------------------------------------------------------


def test_matrices() -> None:
    s = snake()
    e = np.ones(N)
    np.testing.assert_allclose(e @ s.D.T, 0, atol=1e-14)  # eᵀDᵀ = 0: e removes the torques
    np.testing.assert_allclose(s.K @ e, 0, atol=1e-12)
    np.testing.assert_allclose(s.D @ s.K.T, s.A, atol=1e-12)
    np.testing.assert_allclose(s.K @ s.K.T, s.V, atol=1e-12)
    np.testing.assert_allclose(s.D @ s.H, np.eye(N - 1), atol=1e-14)
    np.testing.assert_allclose(s.H[-1], 0)  # theta_N is the head's own angle


def test_link_cm_formula_is_a_chain(rng: np.random.Generator) -> None:
    s = snake()
    theta, theta_dot = rng.uniform(-3, 3, N), rng.normal(size=N)
    p, p_dot = rng.normal(size=2), rng.normal(size=2)
    x, y = s.link_positions(theta, p)
    vx, vy = s.link_velocities(theta, theta_dot, p_dot)
    cx, cy, cvx, cvy = chain(theta, theta_dot, L)
    np.testing.assert_allclose(x, cx + p[0], atol=1e-12)
    np.testing.assert_allclose(y, cy + p[1], atol=1e-12)
    np.testing.assert_allclose(vx, cvx + p_dot[0], atol=1e-12)
    np.testing.assert_allclose(vy, cvy + p_dot[1], atol=1e-12)


def test_friction_is_link_frame_friction_rotated(rng: np.random.Generator) -> None:
    s = snake(c_t=1.3, c_n=7.0)
    theta, vx, vy = rng.uniform(-3, 3, N), rng.normal(size=N), rng.normal(size=N)
    fx, fy = s.friction(theta, vx, vy)
    for i in range(N):
        ci, si = math.cos(theta[i]), math.sin(theta[i])
        rot = np.array([[ci, -si], [si, ci]])  # link frame -> world
        f = -rot @ np.diag([1.3, 7.0]) @ rot.T @ np.array([vx[i], vy[i]])
        np.testing.assert_allclose([fx[i], fy[i]], f, atol=1e-12)
    # The book's matrix form.
    sn, c = np.sin(theta), np.cos(theta)
    np.testing.assert_allclose(fx, -((1.3 * c**2 + 7 * sn**2) * vx + (1.3 - 7) * sn * c * vy))
    np.testing.assert_allclose(fy, -((1.3 - 7) * sn * c * vx + (1.3 * sn**2 + 7 * c**2) * vy))


def test_mass_and_coriolis_matrices_are_lagrange(rng: np.random.Generator) -> None:
    """M_theta from the kinetic energy of the chain; W_theta thetadot² = Mdot thetadot -
    dT/dtheta by finite differences."""
    s = snake()
    theta, theta_dot = rng.uniform(-3, 3, N), rng.normal(size=N)
    _, _, vx, vy = chain(theta, theta_dot, L)
    energy = 0.5 * M * np.sum(vx**2 + vy**2) + 0.5 * J * np.sum(theta_dot**2)
    m_theta = s.mass_matrix(theta)
    assert 0.5 * theta_dot @ m_theta @ theta_dot == pytest.approx(energy, rel=1e-12)
    # Angular momentum about the CM from the chain.
    cx, cy, _, _ = chain(theta, theta_dot, L)
    momentum = J * theta_dot.sum() + M * np.sum(cx * vy - cy * vx)
    assert s.angular_momentum(theta, theta_dot) == pytest.approx(momentum, rel=1e-12)

    h = 1e-6
    m_dot = (s.mass_matrix(theta + h * theta_dot) - s.mass_matrix(theta - h * theta_dot)) / (2 * h)
    d_energy = np.empty(N)
    for i in range(N):
        step = np.zeros(N)
        step[i] = h
        dm = (s.mass_matrix(theta + step) - s.mass_matrix(theta - step)) / (2 * h)
        d_energy[i] = 0.5 * theta_dot @ dm @ theta_dot
    np.testing.assert_allclose(
        s.coriolis_matrix(theta) @ theta_dot**2, m_dot @ theta_dot - d_energy, atol=1e-8
    )


def test_gait_derivatives() -> None:
    gait = lateral_undulation(ALPHA, OMEGA, DELTA, 0.1, n_links=N)
    phi, phi_dot, phi_ddot = gait(1.3)
    assert phi.shape == phi_dot.shape == phi_ddot.shape == (N - 1,)
    np.testing.assert_allclose(phi, ALPHA * np.sin(OMEGA * 1.3 + np.arange(N - 1) * DELTA) + 0.1)
    h = 1e-5
    np.testing.assert_allclose(phi_dot, (gait(1.3 + h)[0] - gait(1.3 - h)[0]) / (2 * h), atol=1e-8)
    np.testing.assert_allclose(phi_ddot, (gait(1.3 + h)[1] - gait(1.3 - h)[1]) / (2 * h), atol=1e-8)


def test_initial_state_is_at_rest() -> None:
    r = run()
    s = snake()
    np.testing.assert_allclose(r.p[0], 0)
    np.testing.assert_allclose(r.p_dot[0], 0)
    assert r.theta[0, -1] == 0.0
    assert abs(s.angular_momentum(r.theta[0], r.theta_dot[0])) < 1e-15
    phi = lateral_undulation(ALPHA, OMEGA, DELTA, n_links=N)(0.0)[0]
    np.testing.assert_allclose(r.theta[0, :-1] - r.theta[0, 1:], phi, atol=1e-15)


def test_agrees_with_maximal_coordinates() -> None:
    """A second model in maximal coordinates (x_i, y_i, theta_i per link, Newton-Euler with
    Lagrange multipliers for the joints and the prescribed joint angles), built here without
    the book's matrices, follows the same trajectory."""
    c_t, c_n, n, lh = 1.0, 10.0, N, L
    gait = lateral_undulation(ALPHA, OMEGA, DELTA, 0.05, n_links=n)
    t_end, dt = 3.0, 0.005
    ref = simulate(snake(c_t, c_n), gait, t_end, dt)

    mass = np.tile([M, M, J], n)

    def accel(t: float, q: FloatArray, v: FloatArray) -> FloatArray:
        th = q[2::3]
        vx, vy, om = v[0::3], v[1::3], v[2::3]
        force = np.zeros(3 * n)
        for i in range(n):  # friction at each CM, from the link-frame law
            ct, st = math.cos(th[i]), math.sin(th[i])
            rot = np.array([[ct, -st], [st, ct]])
            force[3 * i : 3 * i + 2] = -rot @ np.diag([c_t, c_n]) @ rot.T @ [vx[i], vy[i]]
        g = np.zeros((3 * (n - 1), 3 * n))
        rhs = np.zeros(3 * (n - 1))
        _, _, phi_ddot = gait(t)
        for i in range(n - 1):
            a, b = 3 * i, 3 * (i + 1)
            ca, sa, cb, sb = (
                math.cos(th[i]),
                math.sin(th[i]),
                math.cos(th[i + 1]),
                math.sin(th[i + 1]),
            )
            # x_i + l cos th_i - x_{i+1} + l cos th_{i+1} = 0 (head of i = tail of i+1)
            g[3 * i, [a, a + 2, b, b + 2]] = [1, -lh * sa, -1, -lh * sb]
            rhs[3 * i] = lh * (ca * om[i] ** 2 + cb * om[i + 1] ** 2)
            g[3 * i + 1, [a + 1, a + 2, b + 1, b + 2]] = [1, lh * ca, -1, lh * cb]
            rhs[3 * i + 1] = lh * (sa * om[i] ** 2 + sb * om[i + 1] ** 2)
            # th_i - th_{i+1} = phi_i(t)
            g[3 * i + 2, [a + 2, b + 2]] = [1, -1]
            rhs[3 * i + 2] = phi_ddot[i]
        k = len(rhs)
        kkt = np.block([[np.diag(mass), -g.T], [g, np.zeros((k, k))]])
        return np.linalg.solve(kkt, np.concatenate([force, rhs]))[: 3 * n]

    # Initial state: the chain at the prescribed angles, CM at rest at 0, and the head's rate
    # giving zero angular momentum about the CM (momentum is affine in it).
    phi, phi_dot, _ = gait(0.0)
    theta0 = np.concatenate([np.cumsum(phi[::-1])[::-1], [0.0]])
    rate0 = np.concatenate([np.cumsum(phi_dot[::-1])[::-1], [0.0]])

    def momentum(w: float) -> float:
        cx, cy, cvx, cvy = chain(theta0, rate0 + w, lh)
        return J * np.sum(rate0 + w) + M * np.sum(cx * cvy - cy * cvx)

    w0 = -momentum(0.0) / (momentum(1.0) - momentum(0.0))
    cx, cy, cvx, cvy = chain(theta0, rate0 + w0, lh)
    q = np.column_stack([cx, cy, theta0]).ravel()
    v = np.column_stack([cvx, cvy, rate0 + w0]).ravel()

    steps = round(t_end / dt)
    for j in range(steps):
        t = j * dt
        k1v, k1a = v, accel(t, q, v)
        k2v = v + dt / 2 * k1a
        k2a = accel(t + dt / 2, q + dt / 2 * k1v, k2v)
        k3v = v + dt / 2 * k2a
        k3a = accel(t + dt / 2, q + dt / 2 * k2v, k3v)
        k4v = v + dt * k3a
        k4a = accel(t + dt, q + dt * k3v, k4v)
        q = q + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
        v = v + dt / 6 * (k1a + 2 * k2a + 2 * k3a + k4a)

    cm = np.array([q[0::3].mean(), q[1::3].mean()])
    assert np.linalg.norm(ref.p[-1]) > 0.1  # it did move
    np.testing.assert_allclose(cm, ref.p[-1], atol=1e-7)
    np.testing.assert_allclose(q[2::3], ref.theta[-1], atol=1e-7)
    np.testing.assert_allclose(v[2::3], ref.theta_dot[-1], atol=1e-6)


def test_mean_velocity_is_displacement_over_time() -> None:
    t = np.linspace(0, 2, 201)
    p = np.column_stack([3 * t**2, -t])
    r = PlanarRun(t=t, p=p, theta=np.zeros((201, 2)), p_dot=p * 0, theta_dot=np.zeros((201, 2)))
    np.testing.assert_allclose(r.mean_velocity(0.5, 1.5), [3 * (1.5**2 - 0.5**2), -1.0])
    with pytest.raises(ValueError):
        r.mean_velocity(1.0, 3.0)


# -- the laws of lateral undulation --------------------------------------------------------------


@pytest.mark.parametrize("c", [1.0, 10.0])
def test_isotropic_friction_gives_no_net_travel(c: float) -> None:
    t0, t1 = WINDOW
    aniso = np.linalg.norm(run().position(t1) - run().position(t0))
    iso_run = run(c, c)
    iso = np.linalg.norm(iso_run.position(t1) - iso_run.position(t0))
    assert aniso > 1.0  # metres over 3.3 periods
    assert iso < 0.02 * aniso


def test_wave_direction_sets_travel_direction() -> None:
    """delta > 0 (wave from head to tail) moves the snake head first; delta < 0 tail first;
    the mean velocity is along the mean heading."""
    forward, backward = run(), run(delta=-DELTA)
    speeds = []
    for r in (forward, backward):
        h = r.mean_heading(*WINDOW)
        v = r.mean_velocity(*WINDOW)
        along = v @ [math.cos(h), math.sin(h)]
        across = v @ [-math.sin(h), math.cos(h)]
        assert abs(across) < 0.05 * abs(along)
        speeds.append(along)
    assert speeds[0] > 0.05
    assert speeds[1] < -0.05
    assert abs(speeds[1]) == pytest.approx(speeds[0], rel=0.1)


def test_speed_grows_with_friction_anisotropy() -> None:
    speeds = [run(1.0, c_n).forward_speed(*WINDOW) for c_n in (2.0, 5.0, 10.0)]
    assert speeds[0] > 0.01
    assert speeds[0] < speeds[1] < speeds[2]


@pytest.mark.parametrize("gait_kind", ["undulation", "random"])
def test_no_friction_cm_stays_put(gait_kind: str, rng: np.random.Generator) -> None:
    """Without friction and with zero initial momentum nothing moves the CM, whatever the
    joints do; the angular momentum about the CM stays zero."""
    s = PlanarSnake(n_links=7, half_length=0.09, mass=0.6, inertia=0.002, c_t=0.0, c_n=0.0)
    if gait_kind == "undulation":
        joints = lateral_undulation(1.0, 3.0, 0.7, 0.2, n_links=7)
    else:
        amp, freq, phase = (
            rng.uniform(0.2, 1.0, (3, 6)),
            rng.uniform(1, 5, (3, 6)),
            rng.uniform(0, 6, (3, 6)),
        )

        def joints(t: float) -> tuple[FloatArray, FloatArray, FloatArray]:
            arg = freq * t + phase
            return (
                (amp * np.sin(arg)).sum(0),
                (amp * freq * np.cos(arg)).sum(0),
                (-amp * freq**2 * np.sin(arg)).sum(0),
            )

    r = simulate(s, joints, 6.0, 0.005, theta_n0=0.4)
    assert np.max(np.abs(r.p)) < 1e-9
    assert np.max(np.abs(r.p_dot)) < 1e-9
    momenta = [s.angular_momentum(th, w) for th, w in zip(r.theta, r.theta_dot, strict=True)]
    scale = s.inertia * np.max(np.abs(r.theta_dot)) * s.n_links
    assert np.max(np.abs(momenta)) < 1e-6 * scale
    # The body does turn (the falling-cat effect) for the random gait: shape changes alone.
    if gait_kind == "random":
        assert abs(r.theta[-1, -1] - r.theta[0, -1]) > 1e-3
