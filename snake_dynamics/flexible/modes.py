"""Assumed mode shapes of an elastic link (docs/flexible.md, "Elastic links").

A link is an Euler-Bernoulli beam along its x axis, clamped at its controlled end (x = 0).
Flexure in the xy and xz planes uses the eigenmodes of a clamped-free beam, or of a
clamped-mass beam (a rigid body of mass m_t and rotary inertia J_t at x = L); torsion uses
the clamped-free shaft modes sin((2k - 1) pi x / 2L) (the paper's choice for torsion, (F71)).
Every shape is normalised to 1 at the tip, so an elastic coordinate is the tip deflection [m]
(flexure) or the tip twist [rad] (torsion).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import brentq

from snake_dynamics.errors import ModelError

FloatArray = NDArray[np.float64]

#: The boundary conditions of flexure this module knows.
BOUNDARY_CONDITIONS = ("clamped-free", "clamped-mass")


@dataclass(frozen=True)
class BendingModes:
    """Flexural eigenmodes of a clamped beam, psi(x) = A (cosh bx - cos bx) + B (sinh bx - sin bx).

    Attributes:
        length: L [m].
        beta_l: the eigenvalues beta_k L, shape (n,) [-].
        a: coefficient A_k of each mode, shape (n,), scaled so that psi_k(L) = 1.
        b: coefficient B_k of each mode, shape (n,).
    """

    length: float
    beta_l: FloatArray
    a: FloatArray
    b: FloatArray

    def shapes(self, x: FloatArray, derivative: int = 0) -> FloatArray:
        """psi_k(x) or its derivative d^j psi_k / dx^j, shape (len(x), n) [m^-j].

        Evaluated as exponentials scaled by e^{-beta L} so that high modes do not overflow.
        """
        x = np.asarray(x, dtype=float)[:, None]
        beta = self.beta_l[None, :] / self.length
        z = beta * x
        j = derivative
        # d^j/dz^j of cosh, sinh, cos, sin
        ch = np.cosh(z) if j % 2 == 0 else np.sinh(z)
        sh = np.sinh(z) if j % 2 == 0 else np.cosh(z)
        c = [np.cos(z), -np.sin(z), -np.cos(z), np.sin(z)][j % 4]
        s = [np.sin(z), np.cos(z), -np.sin(z), -np.cos(z)][j % 4]
        value = self.a[None, :] * (ch - c) + self.b[None, :] * (sh - s)
        return np.asarray(value * beta**j, dtype=float)


def _bending_tip_matrix(s: float, mu: float, iota: float) -> FloatArray:
    """The 2x2 matrix of the tip conditions on (A, B) at beta L = s, each row / cosh s.

    Moment: psi''(L) - iota s^3 psi'(L) = 0; shear: psi'''(L) + mu s psi(L) = 0, with
    mu = m_t / (rho A L) and iota = J_t / (rho A L^3) (a body at the tip, docs/flexible.md).
    """
    ch, sh, c, sn = math.cosh(s), math.sinh(s), math.cos(s), math.sin(s)
    f = [ch - c, sh - sn]  # psi / (A, B)
    d1 = [sh + sn, ch - c]  # psi' L / s
    d2 = [ch + c, sh + sn]  # psi'' L^2 / s^2
    d3 = [sh - sn, ch + c]  # psi''' L^3 / s^3
    rows = [
        [d2[k] - iota * s**3 * d1[k] for k in range(2)],
        [d3[k] + mu * s * f[k] for k in range(2)],
    ]
    return np.array(rows) / ch


def bending_modes(
    n: int, length: float, tip_mass_ratio: float = 0.0, tip_inertia_ratio: float = 0.0
) -> BendingModes:
    """The first n flexural modes of a clamped beam with a body at its tip (clamped-mass).

    With both ratios zero these are the clamped-free modes (beta L = 1.8751, 4.6941,
    7.8548, ...).

    Args:
        n: number of modes (>= 1).
        length: L [m].
        tip_mass_ratio: m_t / (rho A L) [-].
        tip_inertia_ratio: J_t / (rho A L^3) [-], J_t the tip body's rotary inertia about the
            beam's end [kg m^2].

    Returns:
        The modes, each normalised to psi(L) = 1.
    """
    if n < 1:
        raise ModelError(f"a flexural mode set needs n >= 1 modes, got {n}")

    def det(s: float) -> float:
        return float(np.linalg.det(_bending_tip_matrix(s, tip_mass_ratio, tip_inertia_ratio)))

    roots: list[float] = []
    step = 0.01
    s0, d0 = step, det(step)
    while len(roots) < n:
        s1 = s0 + step
        d1 = det(s1)
        if d0 == 0.0:
            roots.append(s0)
        elif d0 * d1 < 0.0:
            roots.append(float(brentq(det, s0, s1, xtol=1e-14, rtol=1e-15)))
        s0, d0 = s1, d1
    beta_l = np.array(roots[:n])
    a = np.empty(n)
    b = np.empty(n)
    for k, s in enumerate(beta_l):
        m = _bending_tip_matrix(float(s), tip_mass_ratio, tip_inertia_ratio)
        # (A, B) spans the null space of m: use its larger row
        row = m[0] if abs(m[0]).sum() >= abs(m[1]).sum() else m[1]
        ak, bk = row[1], -row[0]
        tip = ak * (math.cosh(s) - math.cos(s)) + bk * (math.sinh(s) - math.sin(s))
        a[k], b[k] = ak / tip, bk / tip
    return BendingModes(float(length), beta_l, a, b)


@dataclass(frozen=True)
class TorsionModes:
    """Clamped-free torsion modes psi_k(x) = sin(gamma_k x / L), gamma_k = (2k - 1) pi / 2.

    Attributes:
        length: L [m].
        gamma: the eigenvalues gamma_k, shape (n,) [-]; psi_k(L) = +-1, normalised to +1.
    """

    length: float
    gamma: FloatArray

    def shapes(self, x: FloatArray, derivative: int = 0) -> FloatArray:
        """psi_k(x) or its first derivative, shape (len(x), n) [1 or 1/m]."""
        x = np.asarray(x, dtype=float)[:, None]
        g = self.gamma[None, :] / self.length
        sign = np.sin(self.gamma)[None, :]  # +-1: psi(L) = 1
        if derivative == 0:
            return np.asarray(np.sin(g * x) * sign, dtype=float)
        if derivative == 1:
            return np.asarray(g * np.cos(g * x) * sign, dtype=float)
        raise ValueError(f"torsion shapes have derivatives 0 and 1, got {derivative}")


def torsion_modes(n: int, length: float) -> TorsionModes:
    """The first n clamped-free torsion modes of a shaft of length ``length`` [m]."""
    if n < 1:
        raise ModelError(f"a torsion mode set needs n >= 1 modes, got {n}")
    gamma = (2.0 * np.arange(1, n + 1, dtype=float) - 1.0) * (math.pi / 2.0)
    return TorsionModes(float(length), np.asarray(gamma, dtype=float))


def gauss_stations(length: float, n: int) -> tuple[FloatArray, FloatArray]:
    """Gauss-Legendre stations x_g in (0, L) [m] and weights w_g [m]:
    sum w_g f(x_g) ~ int_0^L f dx."""
    xi, wi = np.polynomial.legendre.leggauss(n)
    return 0.5 * length * (xi + 1.0), 0.5 * length * wi
