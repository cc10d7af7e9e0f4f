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
import functools
import math
from collections.abc import Callable, Sequence
from typing import Generic, Literal, Protocol, Self, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import solve_ivp

from snake_dynamics.errors import ModelError, SimulationError, StateError
from snake_dynamics.planar.op_count import OperationCount

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

    @functools.cached_property
    def constants(self) -> KaneConstants[float]:
        """The constants of Kane's recursions in float."""
        return KaneConstants.of(self, float)


def _vector(value: ArrayLike, size: int, name: str) -> FloatArray:
    """``value`` as a finite 1-D array of ``size``: float, or float32 where it is float32
    already (the single-precision runs of the Lagrange form)."""
    out = np.asarray(value)
    if out.dtype != np.float32:
        out = np.asarray(value, dtype=float)
    if out.shape != (size,) or not np.all(np.isfinite(out)):
        raise StateError(f"{name} must be a finite array of shape ({size},), got {value!r}")
    return out


# ------------------------------------------------------------------ Kane: recursions
class Arithmetic(Protocol):
    """A number type with +, -, * and / among its own values."""

    def __add__(self, other: Self, /) -> Self: ...
    def __sub__(self, other: Self, /) -> Self: ...
    def __mul__(self, other: Self, /) -> Self: ...
    def __truediv__(self, other: Self, /) -> Self: ...


Scalar = TypeVar("Scalar", bound=Arithmetic)
"""Any such number type: float, numpy.float32, or a counting scalar (:mod:`.op_count`)."""


@dataclasses.dataclass(frozen=True)
class KaneConstants(Generic[Scalar]):
    """The model's numbers the recursions use, in the number type of a computation.

    Attributes:
        half: h_k = L_k / 2 [m].
        inverse_half: 1 / h_k [1/m].
        masses: m_k [kg].
        inertias: I_k [kg m^2].
        zero: 0 in the number type.
        one: 1 in the number type.
    """

    half: Sequence[Scalar]
    inverse_half: Sequence[Scalar]
    masses: Sequence[Scalar]
    inertias: Sequence[Scalar]
    zero: Scalar
    one: Scalar

    @classmethod
    def of(cls, snake: WheeledSnake, number: Callable[[float], Scalar]) -> KaneConstants[Scalar]:
        """The snake's constants converted by ``number`` (e.g. ``float``, ``np.float32``)."""
        h = snake.half_lengths
        return cls(
            [number(x) for x in h],
            [number(x) for x in 1.0 / h],
            [number(x) for x in snake.masses],
            [number(x) for x in snake.inertias],
            number(0.0),
            number(1.0),
        )


Recursion = tuple[
    list[Scalar],
    list[Scalar],
    list[tuple[Scalar, Scalar]],
    list[tuple[Scalar, Scalar]],
    list[Scalar],
    list[Scalar],
]


def kane_recursion(
    k_: KaneConstants[Scalar],
    theta: Sequence[Scalar],
    u: tuple[Scalar, Scalar],
    cos: Callable[[Scalar], Scalar],
    sin: Callable[[Scalar], Scalar],
) -> Recursion[Scalar]:
    """The forward recursions of eqs. 403, 404 and 407 on scalars of any number type.

    Returns:
        (V_k, ω_k, (∂V_k/∂u_1, ∂V_k/∂u_2), (∂ω_k/∂u_1, ∂ω_k/∂u_2), W_k, Z_k), one entry
        per link; see :class:`LinkSpeeds`.
    """
    h, inv = k_.half, k_.inverse_half
    v, w = [u[0]], [u[1]]
    zero, one = k_.zero, k_.one
    pv, pw = [(one, zero)], [(zero, one)]
    bv, bw = [zero], [zero]
    for k in range(len(theta) - 1):
        phi = theta[k + 1] - theta[k]
        c, s = cos(phi), sin(phi)
        hc, hs = h[k] * c, h[k] * s
        v.append(v[k] * c + w[k] * hs)
        w.append((v[k] * s - w[k] * hc) * inv[k + 1])
        pv.append((pv[k][0] * c + pw[k][0] * hs, pv[k][1] * c + pw[k][1] * hs))
        pw.append(
            (
                (pv[k][0] * s - pw[k][0] * hc) * inv[k + 1],
                (pv[k][1] * s - pw[k][1] * hc) * inv[k + 1],
            )
        )
        # ∂V_{k+1}/∂φ_k and ∂ω_{k+1}/∂φ_k, times φ̇_k = ω_{k+1} - ω_k (eq. 407)
        phi_dot = w[k + 1] - w[k]
        bv.append(bv[k] * c + bw[k] * hs + (w[k] * hc - v[k] * s) * phi_dot)
        bw.append((bv[k] * s - bw[k] * hc + (v[k] * c + w[k] * hs) * phi_dot) * inv[k + 1])
    return v, w, pv, pw, bv, bw


def _kane_kernel(
    k_: KaneConstants[Scalar],
    theta: Sequence[Scalar],
    u: tuple[Scalar, Scalar],
    tau: Sequence[Scalar],
    cos: Callable[[Scalar], Scalar],
    sin: Callable[[Scalar], Scalar],
) -> tuple[tuple[Scalar, Scalar], Recursion[Scalar]]:
    """u̇ by Kane's equations (eqs. 406, 408) after the recursions, on scalars of any
    number type (:func:`kane_solve`).

    Returns:
        (u̇, the recursions of :func:`kane_recursion`).
    """
    rec = kane_recursion(k_, theta, u, cos, sin)
    return kane_solve(k_, rec, tau), rec


def kane_solve(
    k_: KaneConstants[Scalar], rec: Recursion[Scalar], tau: Sequence[Scalar]
) -> tuple[Scalar, Scalar]:
    """u̇ from M u̇ = F - N ω (eqs. 406, 408) given the recursions' results, O(n), on
    scalars of any number type; M is solved as the 2x2 system it is.

    Args:
        k_: the model's constants in the number type.
        rec: the recursions at the state (:func:`kane_recursion`).
        tau: joint torques T_1..T_{n-1} [N m].

    Returns:
        u̇ = (V̇_1 [m/s^2], ω̇_1 [rad/s^2]).
    """
    _, _, pv, pw, bv, bw = rec
    m00 = m01 = m11 = b0 = b1 = f0 = f1 = k_.zero
    for k, (m, inertia) in enumerate(zip(k_.masses, k_.inertias, strict=True)):
        mp0, mp1 = m * pv[k][0], m * pv[k][1]
        ip0, ip1 = inertia * pw[k][0], inertia * pw[k][1]
        m00 = m00 + mp0 * pv[k][0] + ip0 * pw[k][0]
        m01 = m01 + mp0 * pv[k][1] + ip0 * pw[k][1]
        m11 = m11 + mp1 * pv[k][1] + ip1 * pw[k][1]
        b0 = b0 + mp0 * bv[k] + ip0 * bw[k]
        b1 = b1 + mp1 * bv[k] + ip1 * bw[k]
    for k, t in enumerate(tau):
        f0 = f0 + t * (pw[k + 1][0] - pw[k][0])
        f1 = f1 + t * (pw[k + 1][1] - pw[k][1])
    r0, r1 = f0 - b0, f1 - b1
    det = m00 * m11 - m01 * m01
    return (m11 * r0 - m01 * r1) / det, (m00 * r1 - m01 * r0) / det


def kane_rate(
    k_: KaneConstants[Scalar],
    z: Sequence[Scalar],
    tau: Sequence[Scalar],
    cos: Callable[[Scalar], Scalar],
    sin: Callable[[Scalar], Scalar],
) -> list[Scalar]:
    """ż of the reduced state by Kane's recursive method (eqs. 403-408), on scalars of any
    number type: what :func:`kane_derivative` computes in float, and what
    :func:`kane_operation_count` counts.

    Args:
        k_: the model's constants in the number type (:meth:`KaneConstants.of`).
        z: reduced state [x, y, θ_1..θ_n, V_1, ω_1], n+4 scalars.
        tau: joint torques T_1..T_{n-1} [N m].
        cos: cosine in the number type.
        sin: sine in the number type.

    Returns:
        ż = [V_1 cos θ_1, V_1 sin θ_1, ω_1..ω_n, V̇_1, ω̇_1].
    """
    n = len(k_.masses)
    theta, v1 = z[2 : n + 2], z[n + 2]
    u_dot, rec = _kane_kernel(k_, theta, (v1, z[n + 3]), tau, cos, sin)
    return [v1 * cos(theta[0]), v1 * sin(theta[0]), *rec[1], *u_dot]


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
    th = _vector(theta, snake.n, "theta").tolist()
    uu = _vector(u, 2, "u")
    rec = kane_recursion(snake.constants, th, (float(uu[0]), float(uu[1])), math.cos, math.sin)
    return LinkSpeeds(*(np.array(x, dtype=float) for x in rec))


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
    th = _vector(theta, snake.n, "theta").tolist()
    uu = _vector(u, 2, "u")
    t = _vector(tau, snake.n - 1, "tau").tolist()
    u_dot, rec = _kane_kernel(
        snake.constants, th, (float(uu[0]), float(uu[1])), t, math.cos, math.sin
    )
    sp = LinkSpeeds(*(np.array(x, dtype=float) for x in rec))
    ud = np.array(u_dot)
    return KaneAccelerations(
        ud, sp, sp.speed_partials @ ud + sp.speed_bias, sp.rate_partials @ ud + sp.rate_bias
    )


def kane_derivative(snake: WheeledSnake, z: ArrayLike, tau: ArrayLike) -> FloatArray:
    """ż for the reduced state z = [x, y, θ_1..θ_n, V_1, ω_1] (eqs. 406-408).

    Args:
        snake: geometry and inertia.
        z: reduced state, shape (n+4,) ([m], [m], [rad] x n, [m/s], [rad/s]).
        tau: joint torques [N m], shape (n-1,).

    Returns:
        ż = [V_1 cos θ_1, V_1 sin θ_1, ω_1..ω_n, V̇_1, ω̇_1], shape (n+4,).
    """
    zz = _vector(z, snake.n + 4, "z").tolist()
    t = _vector(tau, snake.n - 1, "tau").tolist()
    return np.array(kane_rate(snake.constants, zz, t, math.cos, math.sin))


def kane_operation_count(
    snake: WheeledSnake, z: ArrayLike, tau: ArrayLike
) -> tuple[OperationCount, FloatArray]:
    """Count the operations of one evaluation of ż by :func:`kane_rate`, by running it on
    counting scalars (:mod:`.op_count`); the model's constants (h_k, 1/h_k, m_k, I_k) are
    data, not work.

    Args:
        snake: geometry and inertia.
        z: reduced state, shape (n+4,).
        tau: joint torques [N m], shape (n-1,).

    Returns:
        (the tallies, the ż computed on the way, shape (n+4,)).
    """
    zz = _vector(z, snake.n + 4, "z")
    t = _vector(tau, snake.n - 1, "tau")
    count = OperationCount()
    k_ = KaneConstants.of(snake, count.number)
    z_dot = kane_rate(
        k_, [count.number(x) for x in zz], [count.number(x) for x in t], count.cos, count.sin
    )
    return count, np.array([x.value for x in z_dot])


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
    """J_k = ∂v_k/∂q̇, shape (n, 2, n+2) (eq. 409), in θ's precision."""
    n = snake.n
    c = _position_coefficients(snake).astype(theta.dtype)
    nrm = np.stack([-np.sin(theta), np.cos(theta)], axis=0)  # (2, n): n_j as columns
    jac = np.zeros((n, 2, n + 2), dtype=theta.dtype)
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
    dtype = qq.dtype  # float, or float32 for a single-precision run
    jac = _jacobians(snake, theta)
    m = snake.masses.astype(dtype)
    mass = np.einsum("k,kai,kaj->ij", m, jac, jac)
    mass[:n, :n] += np.diag(snake.inertias.astype(dtype))
    # J̇_k q̇ = -Σ_j c_kj θ̇_j² e_j: the centripetal accelerations
    e = np.stack([np.cos(theta), np.sin(theta)], axis=1)
    centripetal = -_position_coefficients(snake).astype(dtype) @ (theta_dot[:, None] ** 2 * e)
    bias = np.einsum("k,kai,ka->i", m, jac, centripetal)
    forces = np.zeros(n + 2, dtype=dtype)
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
    kkt = np.zeros((2 * n + 2, 2 * n + 2), dtype=mass.dtype)
    kkt[: n + 2, : n + 2] = mass
    kkt[: n + 2, n + 2 :] = a
    kkt[n + 2 :, : n + 2] = a.T
    sol = np.linalg.solve(kkt, np.concatenate([forces - bias, -a_dot_q_dot]))
    return sol[: n + 2], sol[n + 2 :]


def lagrange_derivative(snake: WheeledSnake, s: ArrayLike, tau: ArrayLike) -> FloatArray:
    """ṡ for the full state s = [q; q̇] (eq. 412), in float32 throughout if s and tau are.

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
            tau = _vector(torque(t), n - 1, "torque(t)")
            z_dot = kane_rate(snake.constants, y[:-1].tolist(), tau.tolist(), math.cos, math.sin)
            return np.array([*z_dot, joint_power(tau, z_dot[2 : n + 2])])

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
