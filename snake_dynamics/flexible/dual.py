"""The dual-number algebra of the flexible-manipulator paper (docs/flexible.md, "Dual algebra").

A dual quantity x + eps d with eps^2 = 0 holds a rigid (zero-order) part and an elastic
(first-order) part; products drop every product of two elastic terms. The paper writes them
as real matrices: a dual rotation A + eps theta^x A is the 6x6 element (A, theta^x A) of the
group G1 (F8), a dual homogeneous transformation the 7x7 element (X, v) of G2 (F14), a dual
vector a 6-vector (real part first, F37), a dual twist or dual screw a 12-vector
[omega_hat; v_hat] of two dual vectors (F56, F58). Equation numbers (Fnn) are the paper's.

These are the paper's objects, each one small function, used by the tests to tie the
paper's kinematics to the compiled model: the dual part of a dual twist built by (F57)-(F75)
is the first-order elastic velocity of :mod:`snake_dynamics.flexible.kernel`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


def skew(w: FloatArray) -> FloatArray:
    """w^x, the 3x3 skew matrix with w^x a = w x a."""
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def dual_rotation(a: FloatArray, theta: FloatArray) -> FloatArray:
    """[R_hat] = (A, theta^x A) in G1, the dual rotation of (F8), (F31).

    Args:
        a: the rigid rotation A in SO(3), (3, 3).
        theta: the small elastic rotation theta [rad], (3,), applied after A in the
            fixed frame (A_hat = (I + eps theta^x) A, (F24), (F30)).

    Returns:
        (6, 6) matrix [[A, 0], [theta^x A, A]].
    """
    x = np.zeros((6, 6))
    x[:3, :3] = a
    x[3:, 3:] = a
    x[3:, :3] = skew(theta) @ a
    return x


def linearized_rotation(theta: FloatArray) -> FloatArray:
    """R_hat = I + eps theta^x, the linearised elastic rotation (F24), as (I, theta^x) in G1."""
    return dual_rotation(np.eye(3), theta)


def g1_inverse(x: FloatArray) -> FloatArray:
    """X^-1 = (A^T, -(A^T theta^x A) A^T) of an element of G1 (F32)."""
    a = x[:3, :3]
    out = np.zeros((6, 6))
    out[:3, :3] = a.T
    out[3:, 3:] = a.T
    out[3:, :3] = -a.T @ x[3:, :3] @ a.T
    return out


def dual_vector_hat(v: FloatArray) -> FloatArray:
    """[a_hat]^, the matrix form in g1 of a dual vector a_hat = (r; d) (F37), (F38)."""
    out = np.zeros((6, 6))
    out[:3, :3] = skew(v[:3])
    out[3:, 3:] = skew(v[:3])
    out[3:, :3] = skew(v[3:])
    return out


def dual_homogeneous(x: FloatArray, v: FloatArray) -> FloatArray:
    """[T_hat] = (X, v_hat) in G2, the dual homogeneous transformation (F14), (F50).

    Args:
        x: the dual rotation, an element of G1, (6, 6).
        v: the dual position vector (real part; dual part) [m], (6,).

    Returns:
        (7, 7) matrix [[X, v], [0, 1]].
    """
    y = np.eye(7)
    y[:6, :6] = x
    y[:6, 6] = v
    return y


def g2_inverse(y: FloatArray) -> FloatArray:
    """Y^-1 = (X^-1, -X^-1 v_hat) of an element of G2 (F51)."""
    xi = g1_inverse(y[:6, :6])
    return dual_homogeneous(xi, -xi @ y[:6, 6])


def g2_adjoint(y: FloatArray) -> FloatArray:
    """Ad_G2(Y) = [[X, 0], [[v_hat]^ X, X]], (12, 12), the adjoint map of G2 (F19)."""
    x = y[:6, :6]
    out = np.zeros((12, 12))
    out[:6, :6] = x
    out[6:, 6:] = x
    out[6:, :6] = dual_vector_hat(y[:6, 6]) @ x
    return out


def dual_twist(y: FloatArray, y_dot: FloatArray) -> FloatArray:
    """t_hat = [[Y^-1 Y_dot]^]^v, the right velocity of G2 as a dual twist (F16), (F17), (F56).

    Args:
        y: an element of G2, (7, 7).
        y_dot: its time derivative, (7, 7).

    Returns:
        (12,) [omega_real; omega_dual; v_real; v_dual] [rad/s, m/s].
    """
    vel = g2_inverse(y) @ y_dot
    w = vel[:6, :6]
    return np.concatenate([_vee(w[:3, :3]), _vee(w[3:, :3]), vel[:6, 6]])


def _vee(m: FloatArray) -> FloatArray:
    return np.array([m[2, 1], m[0, 2], m[1, 0]])


def screw_reference_transform(p: FloatArray) -> FloatArray:
    """U_hat, the dual screw reference transformation that moves the reference point (F60).

    Args:
        p: the dual vector p_hat from the new reference point to the old one [m], (6,).

    Returns:
        (12, 12) [[I6, 0], [[p_hat]^, I6]].
    """
    out = np.eye(12)
    out[6:, :6] = dual_vector_hat(p)
    return out


def screw_coordinate_transform(x: FloatArray) -> FloatArray:
    """R_bar_hat = blockdiag(R_hat, R_hat), the dual screw coordinate transformation (F63)."""
    out = np.zeros((12, 12))
    out[:6, :6] = x
    out[6:, 6:] = x
    return out


def screw_transform(*factors: FloatArray) -> FloatArray:
    """V_hat = U_hat R_bar_hat U_hat R_bar_hat U_hat ..., the product of (F66), left to right."""
    out = np.eye(12)
    for f in factors:
        out = out @ f
    return out


def interchange() -> FloatArray:
    """N = blockdiag(Pi, Pi), Pi = [[0, I], [I, 0]]: swaps real and dual parts (F70); N^2 = I."""
    pi = np.zeros((6, 6))
    pi[:3, 3:] = np.eye(3)
    pi[3:, :3] = np.eye(3)
    out = np.zeros((12, 12))
    out[:6, :6] = pi
    out[6:, 6:] = pi
    return out


def screw_basis() -> FloatArray:
    """The six dual lines and screws L_x, L_y, L_z, N_x, N_y, N_z of (F72), as columns (12, 6)."""
    out = np.zeros((12, 6))
    for k in range(3):
        out[k, k] = 1.0
        out[6 + k, 3 + k] = 1.0
    return out


def mode_matrix(psi_x: FloatArray, psi_y: FloatArray, psi_z: FloatArray) -> FloatArray:
    """Psi, the assumed-mode matrix at a point of an elastic link (F71), (6, n_x + n_y + n_z).

    Rows: the rotations about x, y, z, then the displacements along x, y, z. Columns: the
    torsion, xy-flexure and xz-flexure modes.

    Args:
        psi_x: torsion shapes psi_x,k and nothing else, (n_x,) [-].
        psi_y: xy-flexure (psi_y,k, psi'_y,k) [m/m, 1/m], (2, n_y).
        psi_z: xz-flexure (psi_z,k, psi'_z,k), (2, n_z).

    The rotation about y of an xz deflection w is -w' (a right-handed frame); the paper's
    printed (F71) shows +psi'_z there, a sign lost in extraction or another convention.
    """
    nx, ny, nz = len(psi_x), psi_y.shape[1], psi_z.shape[1]
    out = np.zeros((6, nx + ny + nz))
    out[0, :nx] = psi_x
    out[2, nx : nx + ny] = psi_y[1]
    out[4, nx : nx + ny] = psi_y[0]
    out[1, nx + ny :] = -psi_z[1]
    out[5, nx + ny :] = psi_z[0]
    return out


def elastic_screw_matrix(psi: FloatArray) -> FloatArray:
    """S_hat = E_hat Psi with E_hat = N [L_x L_y L_z N_x N_y N_z] (F68), (F69), (12, n).

    The elastic twists are first-order: N puts the mode's rotation and displacement rates in
    the dual parts of the dual twist.
    """
    return interchange() @ screw_basis() @ psi


def projecting_screw_matrix(psi: FloatArray) -> FloatArray:
    """S_breve = N E_hat Psi (F95): the same columns with real and dual parts swapped back,
    the projecting form that maps wrenches onto the elastic speeds."""
    return interchange() @ elastic_screw_matrix(psi)
