"""SE(2) tools for planar rigid bodies: hat/vee, exp/log, the adjoint, the left lift of
body velocities, and reconstruction of g(t) from body velocities (docs/mfm.md, "The
kinematic snake (SE(2))", eqs. 301-306).

Conventions: a pose g = (x, y, θ) is the homogeneous matrix [[R(θ), p], [0, 0, 1]] with
p = (x, y) [m] and R(θ) the active rotation by θ [rad]. A twist ξ = (ξ_x, ξ_y, ξ_θ) lists
the linear part first [m/s or m] and the angular part last [rad/s or rad]. The body
velocity is ξ = vee(g⁻¹ ġ): the velocity of the body's origin and its turning rate, in the
body's own frame.

Two integrators reconstruct g(t) from ξ(t) on the group, so g stays in SE(2) to rounding:
:func:`integrate_piecewise` is exact for a piecewise-constant ξ (a product of
exponentials); :func:`integrate_magnus4` is the fourth-order Magnus method with two
Gauss-Legendre nodes for a ξ(t) that varies smoothly, exact when ξ is constant.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from snake_dynamics.errors import StateError

FloatArray = NDArray[np.float64]

#: Below this |angle| [rad] the sinc-type factors use their Taylor series (truncation error
#: below 1e-24, far under rounding); above it the closed forms, with 1 - cos w written as
#: 2 sin²(w/2), have no cancellation.
SMALL_ANGLE = 1e-4

#: J, the so(2) generator: J @ v turns v by +90 degrees.
_J = np.array([[0.0, -1.0], [1.0, 0.0]])


def _vector3(xi: ArrayLike, name: str) -> FloatArray:
    """``xi`` as a finite float array of shape (3,), else :class:`StateError`."""
    out = np.asarray(xi, dtype=float)
    if out.shape != (3,) or not np.all(np.isfinite(out)):
        raise StateError(f"{name} must be a finite 3-vector (x, y, theta), got {xi!r}")
    return out


def _pose(g: ArrayLike, name: str = "g") -> FloatArray:
    """``g`` as a finite 3x3 SE(2) matrix (bottom row [0, 0, 1]), else :class:`StateError`."""
    out = np.asarray(g, dtype=float)
    if out.shape != (3, 3) or not np.all(np.isfinite(out)):
        raise StateError(f"{name} must be a finite 3x3 SE(2) matrix, got shape {out.shape}")
    if not np.allclose(out[2], (0.0, 0.0, 1.0), atol=1e-12):
        raise StateError(f"{name}'s bottom row must be [0, 0, 1], got {out[2]!r}")
    return out


def pose(x: float, y: float, theta: float) -> FloatArray:
    """The SE(2) matrix of the pose (x [m], y [m], θ [rad]), shape (3, 3)."""
    c, s = math.cos(theta), math.sin(theta)
    return np.array([[c, -s, x], [s, c, y], [0.0, 0.0, 1.0]])


def coordinates(g: ArrayLike) -> FloatArray:
    """(x [m], y [m], θ [rad]) of an SE(2) matrix, θ in (-π, π], shape (3,)."""
    m = _pose(g)
    return np.array([m[0, 2], m[1, 2], math.atan2(m[1, 0], m[0, 0])])


def inverse(g: ArrayLike) -> FloatArray:
    """g⁻¹ = [[Rᵀ, -Rᵀ p], [0, 1]], shape (3, 3)."""
    m = _pose(g)
    out = np.eye(3)
    out[:2, :2] = m[:2, :2].T
    out[:2, 2] = -m[:2, :2].T @ m[:2, 2]
    return out


def hat(xi: ArrayLike) -> FloatArray:
    """The se(2) matrix of a twist (eq. 301): hat(ξ) = [[ξ_θ J, (ξ_x, ξ_y)ᵀ], [0, 0]].

    Args:
        xi: twist (ξ_x, ξ_y, ξ_θ) [m/s, m/s, rad/s] (or [m, m, rad]), shape (3,).

    Returns:
        The Lie-algebra element, shape (3, 3).
    """
    v = _vector3(xi, "xi")
    return np.array([[0.0, -v[2], v[0]], [v[2], 0.0, v[1]], [0.0, 0.0, 0.0]])


def vee(m: ArrayLike) -> FloatArray:
    """Inverse of :func:`hat` (eq. 301): the twist (ξ_x, ξ_y, ξ_θ) of an se(2) matrix.

    Args:
        m: se(2) matrix, shape (3, 3); its rotation block must be skew.

    Returns:
        The twist, shape (3,).

    Raises:
        StateError: ``m`` is not 3x3, not finite, or not in se(2).
    """
    a = np.asarray(m, dtype=float)
    if a.shape != (3, 3) or not np.all(np.isfinite(a)):
        raise StateError(f"vee needs a finite 3x3 se(2) matrix, got shape {a.shape}")
    scale = max(1.0, float(np.max(np.abs(a))))
    if abs(a[0, 0]) + abs(a[1, 1]) + abs(a[0, 1] + a[1, 0]) > 1e-9 * scale or np.any(
        np.abs(a[2]) > 1e-9 * scale
    ):
        raise StateError(f"not an se(2) matrix (skew 2x2 block, zero last row): {a!r}")
    return np.array([a[0, 2], a[1, 2], a[1, 0]])


def _sinc_terms(w: float) -> tuple[float, float]:
    """(sin w / w, (1 - cos w) / w), by their Taylor series for |w| < SMALL_ANGLE."""
    if abs(w) < SMALL_ANGLE:
        w2 = w * w
        return 1.0 - w2 / 6.0 + w2 * w2 / 120.0, w * (0.5 - w2 / 24.0 + w2 * w2 / 720.0)
    return math.sin(w) / w, 2.0 * math.sin(0.5 * w) ** 2 / w  # 1 - cos w without cancellation


def exp(xi: ArrayLike) -> FloatArray:
    """The exponential map se(2) → SE(2) (eq. 301), closed form.

    exp(hat(v, w)) = [[R(w), V(w) v], [0, 1]] with V(w) = (sin w / w) I + ((1 - cos w)/w) J,
    the factors by their series near w = 0 (V(0) = I), so there is no 0/0.

    Args:
        xi: twist (ξ_x [m], ξ_y [m], ξ_θ [rad]), shape (3,): a body velocity times a duration.

    Returns:
        The pose reached from the identity at unit speed in unit time, shape (3, 3).
    """
    v = _vector3(xi, "xi")
    w = float(v[2])
    a, b = _sinc_terms(w)
    out = np.eye(3)
    out[:2, :2] = [[math.cos(w), -math.sin(w)], [math.sin(w), math.cos(w)]]
    out[:2, 2] = (a * np.eye(2) + b * _J) @ v[:2]
    return out


def log(g: ArrayLike) -> FloatArray:
    """The principal logarithm SE(2) → se(2) (eq. 302), inverse of :func:`exp`.

    w = atan2(R_10, R_00) in (-π, π], v = V(w)⁻¹ p with
    V(w)⁻¹ = (w/2) cot(w/2) I - (w/2) J, the cot factor by its series near w = 0.

    Args:
        g: SE(2) matrix, shape (3, 3).

    Returns:
        Twist (ξ_x [m], ξ_y [m], ξ_θ [rad]) with exp(twist) = g, shape (3,).
    """
    m = _pose(g)
    w = math.atan2(m[1, 0], m[0, 0])
    half = 0.5 * w
    if abs(w) < SMALL_ANGLE:
        w2 = w * w
        a = 1.0 - w2 / 12.0 - w2 * w2 / 720.0
    else:
        a = half * math.cos(half) / math.sin(half)
    v = (a * np.eye(2) - half * _J) @ m[:2, 2]
    return np.array([v[0], v[1], w])


def adjoint(g: ArrayLike) -> FloatArray:
    """Ad_g (eq. 303): hat(Ad_g ξ) = g hat(ξ) g⁻¹, i.e. Ad_g = [[R, (y, -x)ᵀ], [0, 0, 1]].

    It maps a body velocity to the spatial velocity, ξ_s = Ad_g ξ_b; with g the pose of a
    frame h in a frame f, it maps a twist written in h to the same twist written in f.

    Args:
        g: SE(2) matrix, shape (3, 3).

    Returns:
        Adjoint matrix, shape (3, 3).
    """
    m = _pose(g)
    out = np.eye(3)
    out[:2, :2] = m[:2, :2]
    out[0, 2] = m[1, 2]
    out[1, 2] = -m[0, 2]
    return out


def left_lift(g: ArrayLike) -> FloatArray:
    """T_e L_g in coordinates (eq. 304): (ẋ, ẏ, θ̇) = T_e L_g ξ for ġ = g hat(ξ).

    Args:
        g: SE(2) matrix, shape (3, 3).

    Returns:
        [[R, 0], [0, 1]], shape (3, 3): the body velocity's world-frame coordinates rate.
    """
    m = _pose(g)
    out = np.eye(3)
    out[:2, :2] = m[:2, :2]
    return out


def integrate_piecewise(g0: ArrayLike, xis: ArrayLike, dts: ArrayLike) -> FloatArray:
    """Exact reconstruction for a piecewise-constant body velocity (eq. 305).

    g_{k+1} = g_k exp(Δt_k ξ_k): exact (to rounding) when ξ is constant over each step,
    first order in Δt for a ξ(t) sampled at the step starts, second order at the midpoints.

    Args:
        g0: initial pose, shape (3, 3).
        xis: body velocities [m/s, m/s, rad/s], shape (N, 3).
        dts: step durations [s], shape (N,) or a scalar.

    Returns:
        Poses g_0 ... g_N, shape (N + 1, 3, 3).
    """
    g = _pose(g0, "g0")
    xi = np.asarray(xis, dtype=float)
    if xi.ndim != 2 or xi.shape[1] != 3 or not np.all(np.isfinite(xi)):
        raise StateError(f"xis must be a finite (N, 3) array, got shape {xi.shape}")
    dt = np.broadcast_to(np.asarray(dts, dtype=float), (xi.shape[0],))
    out = np.empty((xi.shape[0] + 1, 3, 3))
    out[0] = g
    for k in range(xi.shape[0]):
        g = g @ exp(dt[k] * xi[k])
        out[k + 1] = g
    return out


_GAUSS = (0.5 - math.sqrt(3.0) / 6.0, 0.5 + math.sqrt(3.0) / 6.0)


def integrate_magnus4(
    g0: ArrayLike,
    xi_of_t: Callable[[float], ArrayLike],
    t0: float,
    t1: float,
    steps: int,
) -> tuple[FloatArray, FloatArray]:
    """Reconstruct g(t) from ġ = g hat(ξ(t)) by the 4th-order Magnus method (eq. 306).

    Per step of length h: ξ_1, ξ_2 at t_k + (1/2 ∓ √3/6) h (Gauss-Legendre nodes),
    Ω = (h/2)(ξ_1 + ξ_2) + (√3 h²/12) vee([hat ξ_1, hat ξ_2]), g_{k+1} = g_k exp(Ω).
    Global error O(h⁴); exact for constant ξ; g stays on SE(2).

    Args:
        g0: pose at t0, shape (3, 3).
        xi_of_t: body velocity [m/s, m/s, rad/s] as a function of time [s].
        t0: start time [s].
        t1: end time [s] (may be below t0: integrates backwards).
        steps: number of equal steps, >= 1.

    Returns:
        (t, g): times, shape (steps + 1,), and poses, shape (steps + 1, 3, 3).
    """
    if steps < 1:
        raise StateError(f"steps must be >= 1, got {steps!r}")
    g = _pose(g0, "g0")
    t = np.linspace(t0, t1, steps + 1)
    h = (t1 - t0) / steps
    out = np.empty((steps + 1, 3, 3))
    out[0] = g
    c = math.sqrt(3.0) / 12.0 * h * h
    for k in range(steps):
        x1 = _vector3(xi_of_t(t[k] + _GAUSS[0] * h), "xi_of_t(t)")
        x2 = _vector3(xi_of_t(t[k] + _GAUSS[1] * h), "xi_of_t(t)")
        # [hat x1, hat x2] = hat(w1 J v2 - w2 J v1, 0)
        bracket = np.zeros(3)
        bracket[:2] = _J @ (x1[2] * x2[:2] - x2[2] * x1[:2])
        g = g @ exp(0.5 * h * (x1 + x2) + c * bracket)
        out[k + 1] = g
    return t, out
