"""The planar n-link snake with a passive no-sideslip wheel on every link (docs/mfm.md,
"The wheeled snake: Kane's recursive model", eqs. 401-414).

After Tavakoli Nia, Pishkenari and Meghdari, *A recursive approach for the analysis of
snake robots using Kane's equations*, Robotica (2005), with its errata corrected (the
index ranges of its equations (10) and (21), and the augmented Lagrange system, its
equation (27)).
Written afresh from the wheel constraints.

Frames and signs: link k (k = 1..n) has heading θ_k [rad] in the world, unit vectors
e_k = (cos θ_k, sin θ_k) along it and n_k = (-sin θ_k, cos θ_k) across it, length L_k,
half-length h_k = L_k / 2, its centre of mass and its wheel at its middle. Link k+1 lies
ahead of link k: joint k is at r_k + h_k e_k and r_{k+1} = r_k + h_k e_k + h_{k+1} e_{k+1}.
The joint angle is φ_k = θ_{k+1} - θ_k, and the joint torque T_k [N m] turns link k+1 by
+T_k and link k by -T_k (its power is T_k (ω_{k+1} - ω_k)). No wheel may slide across its
link (n_k · v_k = 0), so the whole snake has two velocity degrees of freedom for any n,
the generalised speeds u = (V_1, ω_1): the speed of link 1's centre along e_1 [m/s] and
link 1's turning rate [rad/s]. The joint angles follow from the torques; they cannot be
prescribed.

Two formulations, written independently of each other:

* Kane (:func:`kane_accelerations`, :func:`kane_derivative`): the forward recursions of
  the link speeds and of their partial derivatives, O(n) per evaluation with the
  velocity-product terms N ω built as a directional derivative; :func:`kane_matrices` also
  builds the paper's literal O(n²) N matrix.
* Lagrange with multipliers (:func:`lagrange_accelerations`, :func:`lagrange_derivative`):
  the unconstrained chain in q = (θ_1..θ_n, x, y), with the n wheel constraints enforced
  by the augmented system, O(n³) per evaluation.

Reduced state (Kane): z = [x, y, θ_1..θ_n, V_1, ω_1], shape (n+4,), (x, y) link 1's centre.
Full state (Lagrange): s = [q; q̇], q = [θ_1..θ_n, x, y], shape (2n+4,).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import solve_ivp

from .errors import ModelError, SimulationError, StateError

FloatArray = NDArray[np.float64]
TorqueFunction = Callable[[float], ArrayLike]
Method = Literal["kane", "lagrange"]


# --------------------------------------------------------------------------- the model
@dataclasses.dataclass(frozen=True)
class WheeledSnake:
    """Geometry and inertia of the wheeled snake.

    Attributes:
        masses: m_k [kg], shape (n,).
        lengths: L_k [m], shape (n,).
        inertias: I_k about the link's centre of mass [kg m^2], shape (n,).
    """

    masses: FloatArray
    lengths: FloatArray
    inertias: FloatArray

    def __post_init__(self) -> None:
        for name in ("masses", "lengths", "inertias"):
            value = np.asarray(getattr(self, name), dtype=float)
            if value.ndim != 1 or value.size < 2:
                raise ModelError(
                    f"{name} must be a 1-D array with one entry per link (n >= 2), "
                    f"got shape {value.shape}"
                )
            bad = np.flatnonzero(~(np.isfinite(value) & (value > 0.0)))
            if bad.size:
                i = int(bad[0])
                raise ModelError(f"{name}[{i}] must be a finite number > 0, got {value[i]!r}")
            object.__setattr__(self, name, value)
        sizes = {self.masses.size, self.lengths.size, self.inertias.size}
        if len(sizes) != 1:
            raise ModelError(
                "masses, lengths and inertias must have one entry per link each, got sizes "
                f"{self.masses.size}, {self.lengths.size}, {self.inertias.size}"
            )

    @classmethod
    def uniform(
        cls, n: int, mass: float = 1.0, length: float = 0.2, inertia: float = 0.005
    ) -> WheeledSnake:
        """n equal links; the defaults are the paper's Tables II and III.

        Args:
            n: number of links, >= 2.
            mass: m [kg].
            length: L [m].
            inertia: I about the centre of mass [kg m^2].
        """
        if n < 2:
            raise ModelError(f"n must be >= 2 links, got {n!r}")
        return cls(np.full(n, mass), np.full(n, length), np.full(n, inertia))

    @property
    def n(self) -> int:
        """Number of links."""
        return int(self.masses.size)

    @property
    def half_lengths(self) -> FloatArray:
        """h_k = L_k / 2 [m], shape (n,)."""
        return 0.5 * self.lengths


def _vector(value: ArrayLike, size: int, name: str) -> FloatArray:
    out = np.asarray(value, dtype=float)
    if out.shape != (size,) or not np.all(np.isfinite(out)):
        raise StateError(f"{name} must be a finite array of shape ({size},), got {value!r}")
    return out


# ------------------------------------------------------------------ Kane: recursions
@dataclasses.dataclass(frozen=True)
class LinkSpeeds:
    """Link speeds and their partial derivatives from the forward recursions.

    Attributes:
        speed: V_k, each centre's speed along its link [m/s], shape (n,).
        rate: ω_k = θ̇_k [rad/s], shape (n,).
        speed_partials: ∂V_k/∂u_r, shape (n, 2) (column 0 [1], column 1 [m]).
        rate_partials: ∂ω_k/∂u_r, shape (n, 2) (column 0 [1/m], column 1 [1]).
        speed_bias: W_k = Σ_j (∂V_k/∂θ_j) ω_j, the part of V̇_k at u̇ = 0 [m/s^2], shape (n,).
        rate_bias: Z_k = Σ_j (∂ω_k/∂θ_j) ω_j, the part of ω̇_k at u̇ = 0 [rad/s^2], shape (n,).
    """

    speed: FloatArray
    rate: FloatArray
    speed_partials: FloatArray
    rate_partials: FloatArray
    speed_bias: FloatArray
    rate_bias: FloatArray


def link_speeds(snake: WheeledSnake, theta: ArrayLike, u: ArrayLike) -> LinkSpeeds:
    """Forward recursions for V_k, ω_k, their u-partials and the velocity-product terms
    (eqs. 403, 404, 407).

    Args:
        snake: geometry and inertia.
        theta: link headings θ_1..θ_n [rad], shape (n,).
        u: generalised speeds (V_1 [m/s], ω_1 [rad/s]), shape (2,).

    Returns:
        The speeds, partials and velocity-product terms of every link; O(n) work.
    """
    n = snake.n
    th = _vector(theta, n, "theta")
    uu = _vector(u, 2, "u")
    h = snake.half_lengths.tolist()
    v = [0.0] * n
    w = [0.0] * n
    pv = [(0.0, 0.0)] * n
    pw = [(0.0, 0.0)] * n
    bv = [0.0] * n
    bw = [0.0] * n
    v[0], w[0] = float(uu[0]), float(uu[1])
    pv[0], pw[0] = (1.0, 0.0), (0.0, 1.0)
    for k in range(n - 1):
        phi = float(th[k + 1] - th[k])
        c, s = math.cos(phi), math.sin(phi)
        hk, inv = h[k], 1.0 / h[k + 1]
        v[k + 1] = v[k] * c + w[k] * hk * s
        w[k + 1] = (v[k] * s - w[k] * hk * c) * inv
        pv[k + 1] = (pv[k][0] * c + pw[k][0] * hk * s, pv[k][1] * c + pw[k][1] * hk * s)
        pw[k + 1] = (
            (pv[k][0] * s - pw[k][0] * hk * c) * inv,
            (pv[k][1] * s - pw[k][1] * hk * c) * inv,
        )
        # ∂V_{k+1}/∂φ_k and ∂ω_{k+1}/∂φ_k, times φ̇_k = ω_{k+1} - ω_k (eq. 407)
        phi_dot = w[k + 1] - w[k]
        dv = -v[k] * s + w[k] * hk * c
        dw = (v[k] * c + w[k] * hk * s) * inv
        bv[k + 1] = bv[k] * c + bw[k] * hk * s + dv * phi_dot
        bw[k + 1] = (bv[k] * s - bw[k] * hk * c) * inv + dw * phi_dot
    return LinkSpeeds(
        np.array(v), np.array(w), np.array(pv), np.array(pw), np.array(bv), np.array(bw)
    )


def angle_partials(
    snake: WheeledSnake, theta: ArrayLike, u: ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """The partials ∂V_k/∂θ_j and ∂ω_k/∂θ_j by the paper's recursion (eq. 405), O(n²).

    Args:
        snake: geometry and inertia.
        theta: link headings [rad], shape (n,).
        u: generalised speeds (V_1 [m/s], ω_1 [rad/s]), shape (2,).

    Returns:
        (∂V/∂θ [m/s/rad], ∂ω/∂θ [1/s/rad]), each shape (n, n), row k the link, column j
        the heading; zero for j > k.
    """
    n = snake.n
    th = _vector(theta, n, "theta")
    sp = link_speeds(snake, th, u)
    h = snake.half_lengths
    dv = np.zeros((n, n))
    dw = np.zeros((n, n))
    for i in range(n - 1):
        c, s = math.cos(th[i + 1] - th[i]), math.sin(th[i + 1] - th[i])
        inv = 1.0 / h[i + 1]
        dv_dphi = -sp.speed[i] * s + sp.rate[i] * h[i] * c
        dw_dphi = (sp.speed[i] * c + sp.rate[i] * h[i] * s) * inv
        # j <= i: carried through the recursion; j = i gets -∂/∂φ_i, j = i+1 gets +∂/∂φ_i
        dv[i + 1, : i + 1] = dv[i, : i + 1] * c + dw[i, : i + 1] * h[i] * s
        dw[i + 1, : i + 1] = (dv[i, : i + 1] * s - dw[i, : i + 1] * h[i] * c) * inv
        dv[i + 1, i] -= dv_dphi
        dw[i + 1, i] -= dw_dphi
        dv[i + 1, i + 1] = dv_dphi
        dw[i + 1, i + 1] = dw_dphi
    return dv, dw


def generalized_forces(snake: WheeledSnake, sp: LinkSpeeds, tau: ArrayLike) -> FloatArray:
    """F_r = Σ_k T_k (∂ω_{k+1}/∂u_r - ∂ω_k/∂u_r) (eq. 406).

    Args:
        snake: geometry and inertia.
        sp: the link speeds and partials at the current state.
        tau: joint torques T_1..T_{n-1} [N m], shape (n-1,).

    Returns:
        F, shape (2,) ([N], [N m]).
    """
    t = _vector(tau, snake.n - 1, "tau")
    return np.asarray(t @ np.diff(sp.rate_partials, axis=0), dtype=float)


def kane_matrices(
    snake: WheeledSnake, theta: ArrayLike, u: ArrayLike, tau: ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The paper's literal M, N and F of M u̇ + N ω = F (eq. 406), N by eq. 405.

    Args:
        snake: geometry and inertia.
        theta: link headings [rad], shape (n,).
        u: generalised speeds (V_1 [m/s], ω_1 [rad/s]), shape (2,).
        tau: joint torques [N m], shape (n-1,).

    Returns:
        (M, shape (2, 2); N, shape (2, n); F, shape (2,)).
    """
    sp = link_speeds(snake, theta, u)
    dv, dw = angle_partials(snake, theta, u)
    m, inertia = snake.masses, snake.inertias
    mass = sp.speed_partials.T @ (m[:, None] * sp.speed_partials) + sp.rate_partials.T @ (
        inertia[:, None] * sp.rate_partials
    )
    bias = sp.speed_partials.T @ (m[:, None] * dv) + sp.rate_partials.T @ (inertia[:, None] * dw)
    return mass, bias, generalized_forces(snake, sp, tau)


@dataclasses.dataclass(frozen=True)
class KaneAccelerations:
    """Result of :func:`kane_accelerations`.

    Attributes:
        u_dot: (V̇_1 [m/s^2], ω̇_1 [rad/s^2]), shape (2,).
        speeds: the link speeds and partials at the state.
        speed_dot: V̇_k [m/s^2], shape (n,).
        rate_dot: ω̇_k = θ̈_k [rad/s^2], shape (n,); the joint accelerations are its
            differences, φ̈_k = ω̇_{k+1} - ω̇_k.
    """

    u_dot: FloatArray
    speeds: LinkSpeeds
    speed_dot: FloatArray
    rate_dot: FloatArray


def kane_accelerations(
    snake: WheeledSnake, theta: ArrayLike, u: ArrayLike, tau: ArrayLike
) -> KaneAccelerations:
    """Forward dynamics by Kane's recursive method, O(n) (eqs. 406-408).

    M = Σ m_k P_k P_kᵀ + I_k R_k R_kᵀ and N ω = Σ m_k P_k W_k + I_k R_k Z_k, with
    P_k = ∂V_k/∂u, R_k = ∂ω_k/∂u and W_k, Z_k the velocity-product terms; M is 2x2 and
    positive definite for every shape (link 1 alone makes it so).

    Args:
        snake: geometry and inertia.
        theta: link headings [rad], shape (n,).
        u: generalised speeds (V_1 [m/s], ω_1 [rad/s]), shape (2,).
        tau: joint torques [N m], shape (n-1,).

    Returns:
        u̇ and every link's V̇_k and ω̇_k.
    """
    sp = link_speeds(snake, theta, u)
    m, inertia = snake.masses, snake.inertias
    p, r = sp.speed_partials, sp.rate_partials
    mass = p.T @ (m[:, None] * p) + r.T @ (inertia[:, None] * r)
    bias = p.T @ (m * sp.speed_bias) + r.T @ (inertia * sp.rate_bias)
    rhs = generalized_forces(snake, sp, tau) - bias
    det = mass[0, 0] * mass[1, 1] - mass[0, 1] * mass[1, 0]
    u_dot = np.array(
        [
            (mass[1, 1] * rhs[0] - mass[0, 1] * rhs[1]) / det,
            (mass[0, 0] * rhs[1] - mass[1, 0] * rhs[0]) / det,
        ]
    )
    return KaneAccelerations(u_dot, sp, p @ u_dot + sp.speed_bias, r @ u_dot + sp.rate_bias)


def kane_derivative(snake: WheeledSnake, z: ArrayLike, tau: ArrayLike) -> FloatArray:
    """ż for the reduced state z = [x, y, θ_1..θ_n, V_1, ω_1] (eqs. 406-408).

    Args:
        snake: geometry and inertia.
        z: reduced state, shape (n+4,) ([m], [m], [rad] x n, [m/s], [rad/s]).
        tau: joint torques [N m], shape (n-1,).

    Returns:
        ż = [V_1 cos θ_1, V_1 sin θ_1, ω_1..ω_n, V̇_1, ω̇_1], shape (n+4,).
    """
    n = snake.n
    zz = _vector(z, n + 4, "z")
    theta, u = zz[2 : n + 2], zz[n + 2 :]
    acc = kane_accelerations(snake, theta, u, tau)
    return np.concatenate(
        [
            [u[0] * math.cos(theta[0]), u[0] * math.sin(theta[0])],
            acc.speeds.rate,
            acc.u_dot,
        ]
    )


# ---------------------------------------------------------- Lagrange with multipliers
def _position_coefficients(snake: WheeledSnake) -> FloatArray:
    """c_kj, with r_k = r_1 + Σ_j c_kj e_j (eq. 409), shape (n, n)."""
    n, h = snake.n, snake.half_lengths
    c = np.zeros((n, n))
    for k in range(1, n):
        c[k, 0] = h[0]
        c[k, 1:k] = 2.0 * h[1:k]
        c[k, k] = h[k]
    return c


def link_positions(snake: WheeledSnake, q: ArrayLike) -> FloatArray:
    """Centres r_k of the links in the world (eq. 409).

    Args:
        snake: geometry and inertia.
        q: [θ_1..θ_n [rad], x [m], y [m]], shape (n+2,).

    Returns:
        r_k [m], shape (n, 2).
    """
    n = snake.n
    qq = _vector(q, n + 2, "q")
    e = np.stack([np.cos(qq[:n]), np.sin(qq[:n])], axis=1)
    return np.asarray(qq[n:] + _position_coefficients(snake) @ e, dtype=float)


def _jacobians(snake: WheeledSnake, theta: FloatArray) -> FloatArray:
    """J_k = ∂v_k/∂q̇, shape (n, 2, n+2) (eq. 409)."""
    n = snake.n
    c = _position_coefficients(snake)
    nrm = np.stack([-np.sin(theta), np.cos(theta)], axis=0)  # (2, n): n_j as columns
    jac = np.zeros((n, 2, n + 2))
    jac[:, :, :n] = c[:, None, :] * nrm[None, :, :]
    jac[:, 0, n] = 1.0
    jac[:, 1, n + 1] = 1.0
    return jac


def constraint_matrix(snake: WheeledSnake, q: ArrayLike) -> FloatArray:
    """A, with Aᵀ q̇ the wheels' lateral velocities n_k · v_k (eq. 411).

    Args:
        snake: geometry and inertia.
        q: [θ_1..θ_n [rad], x [m], y [m]], shape (n+2,).

    Returns:
        A, shape (n+2, n); column k holds n_kᵀ J_k.
    """
    n = snake.n
    qq = _vector(q, n + 2, "q")
    theta = qq[:n]
    nrm = np.stack([-np.sin(theta), np.cos(theta)], axis=1)  # (n, 2)
    return np.asarray(np.einsum("ka,kaj->jk", nrm, _jacobians(snake, theta)), dtype=float)


def lateral_velocities(snake: WheeledSnake, q: ArrayLike, q_dot: ArrayLike) -> FloatArray:
    """Each wheel's velocity across its link, n_k · v_k [m/s], shape (n,) (eq. 402).

    Args:
        snake: geometry and inertia.
        q: [θ_1..θ_n [rad], x [m], y [m]], shape (n+2,).
        q_dot: its rate, shape (n+2,).
    """
    qd = _vector(q_dot, snake.n + 2, "q_dot")
    return np.asarray(constraint_matrix(snake, q).T @ qd, dtype=float)


def admissible_velocity(snake: WheeledSnake, q: ArrayLike, u: ArrayLike) -> FloatArray:
    """q̇ with Aᵀ q̇ = 0, e_1 · (ẋ, ẏ) = V_1 and θ̇_1 = ω_1, by one linear solve (eq. 411).

    Independent of the Kane recursions: it uses only the constraint matrix.

    Args:
        snake: geometry and inertia.
        q: [θ_1..θ_n [rad], x [m], y [m]], shape (n+2,).
        u: (V_1 [m/s], ω_1 [rad/s]), shape (2,).

    Returns:
        q̇, shape (n+2,).
    """
    n = snake.n
    qq = _vector(q, n + 2, "q")
    uu = _vector(u, 2, "u")
    rows = np.zeros((n + 2, n + 2))
    rows[:n] = constraint_matrix(snake, qq).T
    rows[n, n], rows[n, n + 1] = math.cos(qq[0]), math.sin(qq[0])
    rows[n + 1, 0] = 1.0
    return np.asarray(np.linalg.solve(rows, np.concatenate([np.zeros(n), uu])), dtype=float)


def lagrange_terms(
    snake: WheeledSnake, q: ArrayLike, q_dot: ArrayLike, tau: ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """M, B, Q, A and Ȧᵀ q̇ of the unconstrained chain and its constraints (eqs. 410, 411).

    Args:
        snake: geometry and inertia.
        q: [θ_1..θ_n [rad], x [m], y [m]], shape (n+2,).
        q_dot: its rate, shape (n+2,).
        tau: joint torques [N m], shape (n-1,).

    Returns:
        (M, shape (n+2, n+2); B, the velocity-product forces, shape (n+2,); Q, the
        generalised torques, shape (n+2,); A, shape (n+2, n); Ȧᵀ q̇, shape (n,)).
    """
    n = snake.n
    qq = _vector(q, n + 2, "q")
    qd = _vector(q_dot, n + 2, "q_dot")
    t = _vector(tau, n - 1, "tau")
    theta, theta_dot = qq[:n], qd[:n]
    jac = _jacobians(snake, theta)
    m = snake.masses
    mass = np.einsum("k,kai,kaj->ij", m, jac, jac)
    mass[:n, :n] += np.diag(snake.inertias)
    # J̇_k q̇ = -Σ_j c_kj θ̇_j² e_j: the centripetal accelerations
    e = np.stack([np.cos(theta), np.sin(theta)], axis=1)
    centripetal = -_position_coefficients(snake) @ (theta_dot[:, None] ** 2 * e)  # (n, 2)
    bias = np.einsum("k,kai,ka->i", m, jac, centripetal)
    forces = np.zeros(n + 2)
    forces[1:n] += t
    forces[: n - 1] -= t
    nrm = np.stack([-np.sin(theta), np.cos(theta)], axis=1)
    a = np.einsum("ka,kaj->jk", nrm, jac)
    v = np.einsum("kaj,j->ka", jac, qd)
    # d/dt (n_k · v_k) = n_k · (J_k q̈ + J̇_k q̇) - θ̇_k e_k · v_k
    a_dot_q_dot = np.einsum("ka,ka->k", nrm, centripetal) - theta_dot * np.einsum("ka,ka->k", e, v)
    return mass, bias, forces, a, a_dot_q_dot


def lagrange_accelerations(
    snake: WheeledSnake, q: ArrayLike, q_dot: ArrayLike, tau: ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """q̈ and λ from [[M, A], [Aᵀ, 0]] [q̈; λ] = [Q - B; -Ȧᵀ q̇] (eq. 412, the paper's
    equation (27) as corrected).

    Args:
        snake: geometry and inertia.
        q: [θ_1..θ_n [rad], x [m], y [m]], shape (n+2,).
        q_dot: its rate, shape (n+2,).
        tau: joint torques [N m], shape (n-1,).

    Returns:
        (q̈, shape (n+2,); λ, minus the wheels' lateral forces [N], shape (n,)).
    """
    n = snake.n
    mass, bias, forces, a, a_dot_q_dot = lagrange_terms(snake, q, q_dot, tau)
    kkt = np.zeros((2 * n + 2, 2 * n + 2))
    kkt[: n + 2, : n + 2] = mass
    kkt[: n + 2, n + 2 :] = a
    kkt[n + 2 :, : n + 2] = a.T
    sol = np.linalg.solve(kkt, np.concatenate([forces - bias, -a_dot_q_dot]))
    return sol[: n + 2], sol[n + 2 :]


def lagrange_derivative(snake: WheeledSnake, s: ArrayLike, tau: ArrayLike) -> FloatArray:
    """ṡ for the full state s = [q; q̇] (eq. 412).

    Args:
        snake: geometry and inertia.
        s: [θ_1..θ_n, x, y, θ̇_1..θ̇_n, ẋ, ẏ], shape (2n+4,).
        tau: joint torques [N m], shape (n-1,).

    Returns:
        ṡ = [q̇; q̈], shape (2n+4,).
    """
    n = snake.n
    ss = _vector(s, 2 * n + 4, "s")
    q_ddot, _ = lagrange_accelerations(snake, ss[: n + 2], ss[n + 2 :], tau)
    return np.concatenate([ss[n + 2 :], q_ddot])


def full_state(snake: WheeledSnake, z: ArrayLike) -> FloatArray:
    """s = [q; q̇] from the reduced state z, q̇ by :func:`admissible_velocity`."""
    n = snake.n
    zz = _vector(z, n + 4, "z")
    q = np.concatenate([zz[2 : n + 2], zz[:2]])
    return np.concatenate([q, admissible_velocity(snake, q, zz[n + 2 :])])


def reduced_state(snake: WheeledSnake, s: ArrayLike) -> FloatArray:
    """z = [x, y, θ, V_1, ω_1] from s = [q; q̇], V_1 = e_1 · (ẋ, ẏ)."""
    n = snake.n
    ss = _vector(s, 2 * n + 4, "s")
    th1 = ss[0]
    v1 = math.cos(th1) * ss[2 * n + 2] + math.sin(th1) * ss[2 * n + 3]
    return np.concatenate([ss[n : n + 2], ss[:n], [v1, ss[n + 2]]])


# ------------------------------------------------------------------------- simulation
def kinetic_energy(snake: WheeledSnake, speed: ArrayLike, rate: ArrayLike) -> float:
    """K = ½ Σ (m_k V_k² + I_k ω_k²) [J] (eq. 413)."""
    v, w = np.asarray(speed, dtype=float), np.asarray(rate, dtype=float)
    return float(0.5 * (snake.masses @ v**2 + snake.inertias @ w**2))


def joint_power(tau: ArrayLike, rate: ArrayLike) -> float:
    """P = Σ_k T_k (ω_{k+1} - ω_k) [W] (eq. 413)."""
    return float(np.asarray(tau, dtype=float) @ np.diff(np.asarray(rate, dtype=float)))


@dataclasses.dataclass(frozen=True)
class WheeledRun:
    """A simulated trajectory (:func:`simulate`).

    Attributes:
        method: "kane" or "lagrange".
        t: sample times [s], shape (T,).
        z: reduced states [x, y, θ_1..θ_n, V_1, ω_1], shape (T, n+4).
        speed: V_k [m/s], shape (T, n).
        rate: ω_k [rad/s], shape (T, n).
        energy: E(t), the kinetic energy [J], shape (T,).
        work: the torques' work since t = 0 [J], shape (T,), integrated with the state.
        energy_residual: S(t) = E(t) - E(0) - work(t) [J], shape (T,) (eq. 414).
        lateral: each wheel's velocity across its link, n_k · v_k [m/s], shape (T, n),
            from the constraint matrix applied to q̇.
    """

    method: str
    t: FloatArray
    z: FloatArray
    speed: FloatArray
    rate: FloatArray
    energy: FloatArray
    work: FloatArray
    energy_residual: FloatArray
    lateral: FloatArray

    @property
    def theta(self) -> FloatArray:
        """θ_k(t) [rad], shape (T, n)."""
        return self.z[:, 2:-2]

    @property
    def joint_angles(self) -> FloatArray:
        """φ_k(t) = θ_{k+1} - θ_k [rad], shape (T, n-1)."""
        return np.diff(self.theta, axis=1)


def initial_state(
    snake: WheeledSnake,
    theta: ArrayLike,
    u: ArrayLike = (0.0, 0.0),
    position: ArrayLike = (0.0, 0.0),
) -> FloatArray:
    """The reduced state z = [x, y, θ, V_1, ω_1].

    Args:
        snake: geometry and inertia.
        theta: link headings [rad], shape (n,).
        u: (V_1 [m/s], ω_1 [rad/s]).
        position: link 1's centre (x, y) [m].
    """
    return np.concatenate(
        [
            _vector(position, 2, "position"),
            _vector(theta, snake.n, "theta"),
            _vector(u, 2, "u"),
        ]
    )


def simulate(
    snake: WheeledSnake,
    torque: TorqueFunction,
    z0: ArrayLike,
    t_final: float,
    *,
    method: Method = "kane",
    samples: int = 201,
    rtol: float = 1e-12,
    atol: float = 1e-12,
) -> WheeledRun:
    """Integrate either formulation with scipy's DOP853 and report energy and constraints.

    The torques' work is integrated as one more state, so S(t) (eq. 414) measures the
    integration error of the dynamics alone.

    Args:
        snake: geometry and inertia.
        torque: t [s] -> joint torques T_1..T_{n-1} [N m], shape (n-1,).
        z0: reduced initial state [x, y, θ, V_1, ω_1], shape (n+4,).
        t_final: duration [s], > 0.
        method: "kane" (reduced state, eqs. 406-408) or "lagrange" (full state,
            eq. 412, started from :func:`full_state`).
        samples: number of equally spaced output times, >= 2.
        rtol: relative tolerance of the integrator.
        atol: absolute tolerance of the integrator.

    Returns:
        The run.

    Raises:
        SimulationError: bad settings, or the integrator failed.
    """
    n = snake.n
    z_start = _vector(z0, n + 4, "z0")
    if not (math.isfinite(t_final) and t_final > 0.0):
        raise SimulationError(f"t_final must be a finite number > 0 s, got {t_final!r}")
    if samples < 2:
        raise SimulationError(f"samples must be >= 2, got {samples!r}")
    if method not in ("kane", "lagrange"):
        raise SimulationError(f"method must be 'kane' or 'lagrange', got {method!r}")
    t_eval = np.linspace(0.0, t_final, samples)

    if method == "kane":

        def rhs(t: float, y: FloatArray) -> FloatArray:
            tau = np.asarray(torque(t), dtype=float)
            acc = kane_accelerations(snake, y[2 : n + 2], y[n + 2 : n + 4], tau)
            th1, v1 = y[2], y[n + 2]
            return np.concatenate(
                [
                    [v1 * math.cos(th1), v1 * math.sin(th1)],
                    acc.speeds.rate,
                    acc.u_dot,
                    [joint_power(tau, acc.speeds.rate)],
                ]
            )

        y0 = np.concatenate([z_start, [0.0]])
    else:

        def rhs(t: float, y: FloatArray) -> FloatArray:
            tau = np.asarray(torque(t), dtype=float)
            q_ddot, _ = lagrange_accelerations(snake, y[: n + 2], y[n + 2 : 2 * n + 4], tau)
            return np.concatenate(
                [y[n + 2 : 2 * n + 4], q_ddot, [joint_power(tau, y[n + 2 : 2 * n + 2])]]
            )

        y0 = np.concatenate([full_state(snake, z_start), [0.0]])

    sol = solve_ivp(rhs, (0.0, t_final), y0, method="DOP853", t_eval=t_eval, rtol=rtol, atol=atol)
    if not sol.success:
        raise SimulationError(f"{method} integration failed: {sol.message}")
    ys = sol.y.T
    work = ys[:, -1]
    zs, speeds, rates, lateral, energy = [], [], [], [], []
    for y in ys:
        if method == "kane":
            z = y[:-1]
            sp = link_speeds(snake, z[2 : n + 2], z[n + 2 :])
            v, w = sp.speed, sp.rate
            q = np.concatenate([z[2 : n + 2], z[:2]])
            q_dot = np.concatenate([w, v[0] * np.array([math.cos(z[2]), math.sin(z[2])])])
            e = kinetic_energy(snake, v, w)
        else:
            s = y[:-1]
            z = reduced_state(snake, s)
            q, q_dot = s[: n + 2], s[n + 2 :]
            jac = _jacobians(snake, q[:n])
            vel = np.einsum("kaj,j->ka", jac, q_dot)
            th = q[:n]
            v = vel[:, 0] * np.cos(th) + vel[:, 1] * np.sin(th)
            w = q_dot[:n]
            e = float(0.5 * (snake.masses @ np.sum(vel**2, axis=1) + snake.inertias @ w**2))
        zs.append(z)
        speeds.append(v)
        rates.append(w)
        lateral.append(lateral_velocities(snake, q, q_dot))
        energy.append(e)
    energy_arr = np.array(energy)
    return WheeledRun(
        method,
        np.asarray(sol.t, dtype=float),
        np.array(zs),
        np.array(speeds),
        np.array(rates),
        energy_arr,
        np.asarray(work, dtype=float),
        energy_arr - energy_arr[0] - work,
        np.array(lateral),
    )
