"""Fast MFM: the same quantities as :mod:`kinetics`, computed recursively and compiled.

Column k of B (eq. 56) is the twist of joint k. Written about the inertial origin it is
S_k = [z_k; p_k x z_k] (angular first): the linear block of B for body b is then
S_k's linear part + omega x r_b, i.e. z_k x (r_b - p_k), exactly docs/mfm.md's B_v(b, k).
Each body's M-block (eq. 66) written about the same origin is the spatial inertia
I_b = [[R_b J_b R_bᵀ + m_b hat(r_b) hat(r_b)ᵀ, m_b hat(r_b)], [m_b hat(r_b)ᵀ, m_b 1]].
With every quantity in the one inertial frame no frame transforms are needed, and:

* M* = Bᵀ M B (eq. 82): M*_ij = S_iᵀ (sum_{b>=j} I_b) S_j, composite bodies, O(n^2);
* N* q_dot (eq. 83) and F* (eq. 79): a forward pass of velocities and velocity-product
  accelerations, a backward pass of body forces, O(n) (recursive Newton-Euler);
* q_ddot (eq. 84) without forming M*: the articulated-body recursion, O(n).

All kernels are compiled with numba (``cache=True``: the first call in a fresh checkout
compiles for a few seconds, later processes load the cache).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import StateError
from .kinematics import joint_vector
from .kinetics import body_wrenches
from .model import SnakeModel

FloatArray = NDArray[np.float64]
_F = TypeVar("_F", bound=Callable[..., Any])


def compiled(fn: _F) -> _F:
    """numba.njit with an on-disk cache, typed for mypy."""
    return cast(_F, numba.njit(cache=True, fastmath=True, nogil=True, error_model="numpy")(fn))


# --------------------------------------------------------------------------- kernels
@compiled
def _body_frames(
    axes: FloatArray,
    offsets: FloatArray,
    masses: FloatArray,
    inertias: FloatArray,
    q: FloatArray,
    rot: FloatArray,
    pos: FloatArray,
    twist: FloatArray,
    inert: FloatArray,
) -> None:
    """One pass tail to head: R_b, r_b (eqs. 17, 46-48), joint twists S_k and M-blocks I_b.

    Writes (every entry) rot (n+1, 3, 3), pos (n+1, 3), the twists S_k = [z_k; p_k x z_k]
    (n, 6) with p_k = r_{k-1} + R_{k-1} l_{k-1} and z_k = R_{k-1} a_k, and the body
    M-blocks of eq. (66) about the inertial origin, angular first, (n, 6, 6).
    """
    n = q.shape[0]
    # parent rotation R_{k-1} (row-major scalars) and CM position r_{k-1}
    p00, p01, p02, p10, p11, p12, p20, p21, p22 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    x0 = x1 = x2 = 0.0
    rot[0] = np.eye(3)
    pos[0] = 0.0
    for k in range(1, n + 1):
        a0, a1, a2 = axes[k - 1, 0], axes[k - 1, 1], axes[k - 1, 2]
        c, s = np.cos(q[k - 1]), np.sin(q[k - 1])
        t = 1.0 - c
        # Rodrigues: R^(k/k-1) = I + s hat(a) + (1 - c) hat(a)^2 (eqs. 18, 33)
        e00, e01, e02 = c + t * a0 * a0, t * a0 * a1 - s * a2, t * a0 * a2 + s * a1
        e10, e11, e12 = t * a0 * a1 + s * a2, c + t * a1 * a1, t * a1 * a2 - s * a0
        e20, e21, e22 = t * a0 * a2 - s * a1, t * a1 * a2 + s * a0, c + t * a2 * a2
        # pivot p_k = r_{k-1} + R_{k-1} l_{k-1} and axis z_k = R_{k-1} a_k
        l0, l1, l2 = offsets[k - 1, 0], offsets[k - 1, 1], offsets[k - 1, 2]
        v0 = x0 + p00 * l0 + p01 * l1 + p02 * l2
        v1 = x1 + p10 * l0 + p11 * l1 + p12 * l2
        v2 = x2 + p20 * l0 + p21 * l1 + p22 * l2
        z0 = p00 * a0 + p01 * a1 + p02 * a2
        z1 = p10 * a0 + p11 * a1 + p12 * a2
        z2 = p20 * a0 + p21 * a1 + p22 * a2
        # R_k = R_{k-1} R^(k/k-1) (eq. 43)
        r00 = p00 * e00 + p01 * e10 + p02 * e20
        r01 = p00 * e01 + p01 * e11 + p02 * e21
        r02 = p00 * e02 + p01 * e12 + p02 * e22
        r10 = p10 * e00 + p11 * e10 + p12 * e20
        r11 = p10 * e01 + p11 * e11 + p12 * e21
        r12 = p10 * e02 + p11 * e12 + p12 * e22
        r20 = p20 * e00 + p21 * e10 + p22 * e20
        r21 = p20 * e01 + p21 * e11 + p22 * e21
        r22 = p20 * e02 + p21 * e12 + p22 * e22
        # CM r_k = p_k + R_k l_k
        l0, l1, l2 = offsets[k, 0], offsets[k, 1], offsets[k, 2]
        x0 = v0 + r00 * l0 + r01 * l1 + r02 * l2
        x1 = v1 + r10 * l0 + r11 * l1 + r12 * l2
        x2 = v2 + r20 * l0 + r21 * l1 + r22 * l2
        rk = rot[k]
        rk[0, 0], rk[0, 1], rk[0, 2] = r00, r01, r02
        rk[1, 0], rk[1, 1], rk[1, 2] = r10, r11, r12
        rk[2, 0], rk[2, 1], rk[2, 2] = r20, r21, r22
        pos[k, 0], pos[k, 1], pos[k, 2] = x0, x1, x2
        tw = twist[k - 1]
        tw[0], tw[1], tw[2] = z0, z1, z2
        tw[3], tw[4], tw[5] = v1 * z2 - v2 * z1, v2 * z0 - v0 * z2, v0 * z1 - v1 * z0
        # M-block about the origin: [[R J Rᵀ + m hat(r) hat(r)ᵀ, m hat(r)], [m hat(r)ᵀ, m 1]]
        j = inertias[k]
        j00, j01, j02, j11, j12, j22 = j[0, 0], j[0, 1], j[0, 2], j[1, 1], j[1, 2], j[2, 2]
        # rows of R J
        b00 = r00 * j00 + r01 * j01 + r02 * j02
        b01 = r00 * j01 + r01 * j11 + r02 * j12
        b02 = r00 * j02 + r01 * j12 + r02 * j22
        b10 = r10 * j00 + r11 * j01 + r12 * j02
        b11 = r10 * j01 + r11 * j11 + r12 * j12
        b12 = r10 * j02 + r11 * j12 + r12 * j22
        b20 = r20 * j00 + r21 * j01 + r22 * j02
        b21 = r20 * j01 + r21 * j11 + r22 * j12
        b22 = r20 * j02 + r21 * j12 + r22 * j22
        m = masses[k]
        mx0, mx1, mx2 = m * x0, m * x1, m * x2
        blk = inert[k - 1]
        blk[0, 0] = b00 * r00 + b01 * r01 + b02 * r02 + mx1 * x1 + mx2 * x2
        blk[1, 1] = b10 * r10 + b11 * r11 + b12 * r12 + mx0 * x0 + mx2 * x2
        blk[2, 2] = b20 * r20 + b21 * r21 + b22 * r22 + mx0 * x0 + mx1 * x1
        blk[0, 1] = blk[1, 0] = b00 * r10 + b01 * r11 + b02 * r12 - mx0 * x1
        blk[0, 2] = blk[2, 0] = b00 * r20 + b01 * r21 + b02 * r22 - mx0 * x2
        blk[1, 2] = blk[2, 1] = b10 * r20 + b11 * r21 + b12 * r22 - mx1 * x2
        blk[3, 3] = blk[4, 4] = blk[5, 5] = m
        blk[0, 4] = blk[4, 0] = -mx2
        blk[0, 5] = blk[5, 0] = mx1
        blk[1, 3] = blk[3, 1] = mx2
        blk[1, 5] = blk[5, 1] = -mx0
        blk[2, 3] = blk[3, 2] = -mx1
        blk[2, 4] = blk[4, 2] = mx0
        blk[0, 3] = blk[3, 0] = blk[1, 4] = blk[4, 1] = blk[2, 5] = blk[5, 2] = 0.0
        blk[3, 4] = blk[4, 3] = blk[3, 5] = blk[5, 3] = blk[4, 5] = blk[5, 4] = 0.0
        p00, p01, p02, p10, p11, p12, p20, p21, p22 = r00, r01, r02, r10, r11, r12, r20, r21, r22


@compiled
def _frames(
    axes: FloatArray, offsets: FloatArray, masses: FloatArray, inertias: FloatArray, q: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """:func:`_body_frames` into new arrays: rot, pos, twists, M-blocks."""
    n = q.shape[0]
    rot, pos = np.empty((n + 1, 3, 3)), np.empty((n + 1, 3))
    twist, inert = np.empty((n, 6)), np.empty((n, 6, 6))
    _body_frames(axes, offsets, masses, inertias, q, rot, pos, twist, inert)
    return rot, pos, twist, inert


@compiled
def _motion_cross(v: FloatArray, m: FloatArray, scale: float, out: FloatArray) -> None:
    """out = v x (scale m) for spatial motion vectors (angular first)."""
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    a0, a1, a2 = scale * m[0], scale * m[1], scale * m[2]
    b0, b1, b2 = scale * m[3], scale * m[4], scale * m[5]
    out[0] = w1 * a2 - w2 * a1
    out[1] = w2 * a0 - w0 * a2
    out[2] = w0 * a1 - w1 * a0
    out[3] = w1 * b2 - w2 * b1 + u1 * a2 - u2 * a1
    out[4] = w2 * b0 - w0 * b2 + u2 * a0 - u0 * a2
    out[5] = w0 * b1 - w1 * b0 + u0 * a1 - u1 * a0


@compiled
def _force_cross_inertia(v: FloatArray, inertia: FloatArray, out: FloatArray) -> None:
    """out = v x* (I v): the gyroscopic spatial force of a body moving with twist v."""
    h0 = h1 = h2 = h3 = h4 = h5 = 0.0
    for j in range(6):
        vj = v[j]
        h0 += inertia[0, j] * vj
        h1 += inertia[1, j] * vj
        h2 += inertia[2, j] * vj
        h3 += inertia[3, j] * vj
        h4 += inertia[4, j] * vj
        h5 += inertia[5, j] * vj
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    out[0] = w1 * h2 - w2 * h1 + u1 * h5 - u2 * h4
    out[1] = w2 * h0 - w0 * h2 + u2 * h3 - u0 * h5
    out[2] = w0 * h1 - w1 * h0 + u0 * h4 - u1 * h3
    out[3] = w1 * h5 - w2 * h4
    out[4] = w2 * h3 - w0 * h5
    out[5] = w0 * h4 - w1 * h3


@compiled
def _external_forces(
    masses: FloatArray,
    gravity: FloatArray,
    rot: FloatArray,
    pos: FloatArray,
    wrenches: FloatArray,
    out: FloatArray,
) -> None:
    """out = Q of eq. (79) without joint torques, spatial forces about the inertial origin."""
    n = wrenches.shape[0]
    for b in range(1, n + 1):
        for i in range(3):
            out[b - 1, 3 + i] = masses[b] * gravity[i] + wrenches[b - 1, i]
            moment = 0.0  # body-frame moment to the inertial frame
            for j in range(3):
                moment += rot[b, i, j] * wrenches[b - 1, 3 + j]
            out[b - 1, i] = moment
        r = pos[b]
        f = out[b - 1, 3:6]
        out[b - 1, 0] += r[1] * f[2] - r[2] * f[1]
        out[b - 1, 1] += r[2] * f[0] - r[0] * f[2]
        out[b - 1, 2] += r[0] * f[1] - r[1] * f[0]


@compiled
def _velocities(s: FloatArray, qd: FloatArray, v: FloatArray, c: FloatArray) -> None:
    """v = body twists v_b = sum_{k<=b} S_k qd_k, c = velocity products v_b x S_b qd_b (n, 6)."""
    for k in range(qd.shape[0]):
        for i in range(6):
            v[k, i] = (v[k - 1, i] if k > 0 else 0.0) + s[k, i] * qd[k]
        _motion_cross(v[k], s[k], qd[k], c[k])


@compiled
def _dot6(a: FloatArray, b: FloatArray) -> float:
    dot: float = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]
    return dot


@compiled
def _rnea(
    axes: FloatArray,
    offsets: FloatArray,
    masses: FloatArray,
    inertias: FloatArray,
    gravity: FloatArray,
    q: FloatArray,
    qd: FloatArray,
    qdd: FloatArray,
    wrenches: FloatArray,
) -> FloatArray:
    """tau = M* qdd + N* qd - F*(tau=0): recursive Newton-Euler on the MFM frames."""
    n = q.shape[0]
    rot, pos, s, inert = _frames(axes, offsets, masses, inertias, q)
    v, c, f = np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6))
    _velocities(s, qd, v, c)
    _external_forces(masses, gravity, rot, pos, wrenches, f)
    acc = np.zeros(6)
    gyro = np.empty(6)
    for k in range(n):
        for i in range(6):
            acc[i] += c[k, i] + s[k, i] * qdd[k]
        _force_cross_inertia(v[k], inert[k], gyro)
        for i in range(6):
            ia = 0.0
            for j in range(6):
                ia += inert[k, i, j] * acc[j]
            f[k, i] = ia + gyro[i] - f[k, i]
    tau = np.empty(n)
    for k in range(n - 1, -1, -1):
        tau[k] = _dot6(s[k], f[k])
        if k > 0:
            for i in range(6):
                f[k - 1, i] += f[k, i]
    return tau


@compiled
def _crba(
    axes: FloatArray, offsets: FloatArray, masses: FloatArray, inertias: FloatArray, q: FloatArray
) -> FloatArray:
    """M*_ij = S_iᵀ (sum_{b>=j} I_b) S_j (eq. 82 by composite bodies)."""
    n = q.shape[0]
    _, _, s, comp = _frames(axes, offsets, masses, inertias, q)
    for k in range(n - 2, -1, -1):
        comp[k] += comp[k + 1]
    mstar = np.empty((n, n))
    fj = np.empty(6)
    for j in range(n):
        for i in range(6):
            acc = 0.0
            for m in range(6):
                acc += comp[j, i, m] * s[j, m]
            fj[i] = acc
        for i in range(j + 1):
            mstar[i, j] = _dot6(s[i], fj)
            mstar[j, i] = mstar[i, j]
    return mstar


#: Scratch arrays of :func:`_aba` for n joints (see :func:`aba_workspace`).
AbaWorkspace = tuple[
    FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray,
    FloatArray, FloatArray, FloatArray, FloatArray,
]  # fmt: skip


@compiled
def aba_workspace(n: int) -> AbaWorkspace:
    """Scratch arrays for :func:`_aba` (allocated once per run, not per call)."""
    return (
        np.empty((n + 1, 3, 3)),  # rot
        np.empty((n + 1, 3)),  # pos
        np.empty((n, 6)),  # twists S
        np.empty((n, 6, 6)),  # articulated inertias
        np.empty((n, 6)),  # v
        np.empty((n, 6)),  # c
        np.empty((n, 6)),  # bias forces
        np.empty((n, 6)),  # U = IA S
        np.empty(n),  # d = Sᵀ U
        np.empty(n),  # u = tau - Sᵀ p
        np.empty(6),  # scratch spatial vector
    )


@compiled
def _aba(
    axes: FloatArray,
    offsets: FloatArray,
    masses: FloatArray,
    inertias: FloatArray,
    gravity: FloatArray,
    q: FloatArray,
    qd: FloatArray,
    tau: FloatArray,
    wrenches: FloatArray,
    work: AbaWorkspace,
    qdd: FloatArray,
) -> None:
    """qdd = q_ddot of eq. (84) by the articulated-body recursion on the MFM frames, O(n)."""
    n = q.shape[0]
    rot, pos, s, art, v, c, bias, u_vec, d, u, gyro = work
    _body_frames(axes, offsets, masses, inertias, q, rot, pos, s, art)
    _velocities(s, qd, v, c)
    _external_forces(masses, gravity, rot, pos, wrenches, bias)
    for k in range(n):
        _force_cross_inertia(v[k], art[k], gyro)
        for i in range(6):
            bias[k, i] = gyro[i] - bias[k, i]
    for k in range(n - 1, -1, -1):
        ak, sk, uk, bk, ck = art[k], s[k], u_vec[k], bias[k], c[k]
        for i in range(6):
            uk[i] = (
                ak[i, 0] * sk[0]
                + ak[i, 1] * sk[1]
                + ak[i, 2] * sk[2]
                + ak[i, 3] * sk[3]
                + ak[i, 4] * sk[4]
                + ak[i, 5] * sk[5]
            )
        d[k] = _dot6(sk, uk)
        u[k] = tau[k] - _dot6(sk, bk)
        if k > 0:
            ap, bp = art[k - 1], bias[k - 1]
            scale = u[k] / d[k]
            inv_d = 1.0 / d[k]
            for i in range(6):
                bp[i] += bk[i] + uk[i] * scale
            for i in range(6):  # Ia = IA - U Uᵀ / d is symmetric: one triangle, mirrored
                ui = uk[i] * inv_d
                ci = ck[i]
                art_ii = ak[i, i] - ui * uk[i]
                ap[i, i] += art_ii
                bp[i] += art_ii * ci
                for j in range(i + 1, 6):
                    art_ij = ak[i, j] - ui * uk[j]
                    ap[i, j] += art_ij
                    ap[j, i] += art_ij
                    bp[i] += art_ij * ck[j]
                    bp[j] += art_ij * ci
    acc6 = gyro  # reused: the spatial acceleration, zero at the inertial base
    acc6[:] = 0.0
    for k in range(n):
        for i in range(6):
            acc6[i] += c[k, i]
        qdd[k] = (u[k] - _dot6(u_vec[k], acc6)) / d[k]
        for i in range(6):
            acc6[i] += s[k, i] * qdd[k]


@compiled
def _energies(
    axes: FloatArray,
    offsets: FloatArray,
    masses: FloatArray,
    inertias: FloatArray,
    gravity: FloatArray,
    qs: FloatArray,
    qds: FloatArray,
) -> FloatArray:
    """Per sample: kinetic 1/2 sum v_bᵀ I_b v_b (eq. 65) and potential -sum m_b g.r_b [J]."""
    n = qs.shape[1]
    out = np.zeros((qs.shape[0], 2))
    rot, pos = np.empty((n + 1, 3, 3)), np.empty((n + 1, 3))
    s, inert, v, c = np.empty((n, 6)), np.empty((n, 6, 6)), np.empty((n, 6)), np.empty((n, 6))
    for row in range(qs.shape[0]):
        _body_frames(axes, offsets, masses, inertias, qs[row], rot, pos, s, inert)
        _velocities(s, qds[row], v, c)
        for k in range(qs.shape[1]):
            for i in range(6):
                for j in range(6):
                    out[row, 0] += 0.5 * v[k, i] * inert[k, i, j] * v[k, j]
            for i in range(3):
                out[row, 1] -= masses[k + 1] * gravity[i] * pos[k + 1, i]
    return out


#: The model arrays the kernels take: (axes, offsets, masses, inertias, gravity, no_wrench).
Params = tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]


@compiled
def _forward_dynamics(
    axes: FloatArray,
    offsets: FloatArray,
    masses: FloatArray,
    inertias: FloatArray,
    gravity: FloatArray,
    q: FloatArray,
    qd: FloatArray,
    tau: FloatArray,
    wrenches: FloatArray,
) -> FloatArray:
    """q_ddot of eq. (84) (:func:`_aba` into new arrays)."""
    qdd = np.empty(q.shape[0])
    _aba(
        axes,
        offsets,
        masses,
        inertias,
        gravity,
        q,
        qd,
        tau,
        wrenches,
        aba_workspace(q.shape[0]),
        qdd,
    )
    return qdd


@compiled
def _servo_torque_into(
    servo: FloatArray, u: FloatArray, q: FloatArray, qd: FloatArray, out: FloatArray
) -> None:
    """out = the servo torques of eqs. 202-206; u = [tau_ff; q_ref; q_dot_ref] (references
    already delayed), servo = rows K, D, e_0, T_s, w_0 (:attr:`ServoModel.packed`)."""
    n = q.shape[0]
    for k in range(n):
        error = u[n + k] - q[k]
        error -= min(max(error, -servo[2, k]), servo[2, k])
        drive = servo[0, k] * error + servo[1, k] * (u[2 * n + k] - qd[k])
        stall, speed = servo[3, k], qd[k] / servo[4, k]
        drive = max(drive, -stall * min(1.0, 1.0 + speed))
        out[k] = u[k] + min(drive, stall * min(1.0, 1.0 - speed))


@compiled
def servo_torque(servo: FloatArray, u: FloatArray, q: FloatArray, qd: FloatArray) -> FloatArray:
    """The servo model (eqs. 202-206): tau = tau_ff + the position loop's torque, limited by
    the motor's torque-speed line [N m].

    With no deadband and no limit (:meth:`ServoModel.pd`) it is the PD law
    tau = tau_ff + k_p (q_ref - q) + k_d (q_dot_ref - q_dot).

    Args:
        servo: the packed parameters, rows K, D, e_0, T_s, w_0, shape (5, n).
        u: the stacked input [tau_ff; q_ref; q_dot_ref], shape (3n,).
        q: joint angles [rad], shape (n,).
        qd: joint rates [rad/s], shape (n,).
    """
    out = np.empty(q.shape[0])
    _servo_torque_into(servo, u, q, qd, out)
    return out


@compiled
def servo_torques(servo: FloatArray, us: FloatArray, qs: FloatArray, qds: FloatArray) -> FloatArray:
    """:func:`servo_torque` at every sample: inputs (N, 3n), states (N, n) -> torques (N, n)."""
    out = np.empty(qs.shape)
    for i in range(qs.shape[0]):
        _servo_torque_into(servo, us[i], qs[i], qds[i], out[i])
    return out


#: (model arrays, packed servo parameters (5, n)) for :func:`servo_accel_kernel`.
ServoParams = tuple[Params, FloatArray]


@compiled
def _servo_accel(
    params: ServoParams,
    q: FloatArray,
    qd: FloatArray,
    u: FloatArray,
    work: AbaWorkspace,
    tau: FloatArray,
    qdd: FloatArray,
) -> None:
    """qdd = q_ddot (eq. 84) under :func:`servo_torque` with input u; ``tau``: scratch (n,)."""
    (axes, offsets, masses, inertias, gravity, no_wrench), servo = params
    _servo_torque_into(servo, u, q, qd, tau)
    _aba(axes, offsets, masses, inertias, gravity, q, qd, tau, no_wrench, work, qdd)


@compiled
def servo_accel_kernel(
    params: ServoParams, q: FloatArray, qd: FloatArray, u: FloatArray
) -> FloatArray:
    """q_ddot (eq. 84) under :func:`servo_torque` with input u = [tau_ff; q_ref; q_dot_ref]."""
    n = q.shape[0]
    qdd = np.empty(n)
    _servo_accel(params, q, qd, u, aba_workspace(n), np.empty(n), qdd)
    return qdd


@compiled
def rk4_servo_steps(
    params: ServoParams,
    q: FloatArray,
    qd: FloatArray,
    inputs: FloatArray,
    dt: float,
    qs: FloatArray,
    qds: FloatArray,
    qdds: FloatArray,
) -> None:
    """Classical RK4 steps of eq. (84) under :func:`servo_torque` (a zero PD: pure tau).

    The compiled twin of :func:`integrators.rk4_step` with this module's accel; the two are
    tested against each other. Step i uses the inputs [tau_ff; q_ref; q_dot_ref] at the
    stage times t_i, t_i + dt/2, t_i + dt (rows 2i, 2i+1, 2i+2 of ``inputs``). Every
    scratch array is allocated once, before the first step.

    Args:
        params: model arrays and packed servo parameters.
        q: joint angles at the first step [rad], shape (n,).
        qd: joint rates at the first step [rad/s], shape (n,).
        inputs: stage inputs, shape (2m+1, 3n).
        dt: step [s].
        qs: out: angles after each step, shape (m, n).
        qds: out: rates after each step, shape (m, n).
        qdds: out: accelerations at the start of each step, shape (m, n).

    Compiled with fastmath: NaN and inf are not detected here; the caller checks the rows.
    """
    n = q.shape[0]
    work, tau = aba_workspace(n), np.empty(n)
    a1, a2, a3, a4 = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    v2, v3, v4, q_stage = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    q, qd = q.copy(), qd.copy()
    half, sixth = 0.5 * dt, dt / 6.0
    for i in range(qs.shape[0]):
        u0, u_half, u1 = inputs[2 * i], inputs[2 * i + 1], inputs[2 * i + 2]
        _servo_accel(params, q, qd, u0, work, tau, a1)
        for k in range(n):
            v2[k] = qd[k] + half * a1[k]
            q_stage[k] = q[k] + half * qd[k]
        _servo_accel(params, q_stage, v2, u_half, work, tau, a2)
        for k in range(n):
            v3[k] = qd[k] + half * a2[k]
            q_stage[k] = q[k] + half * v2[k]
        _servo_accel(params, q_stage, v3, u_half, work, tau, a3)
        for k in range(n):
            v4[k] = qd[k] + dt * a3[k]
            q_stage[k] = q[k] + dt * v3[k]
        _servo_accel(params, q_stage, v4, u1, work, tau, a4)
        for k in range(n):
            q[k] += sixth * (qd[k] + 2.0 * v2[k] + 2.0 * v3[k] + v4[k])
            qd[k] += sixth * (a1[k] + 2.0 * a2[k] + 2.0 * a3[k] + a4[k])
            qs[i, k], qds[i, k], qdds[i, k] = q[k], qd[k], a1[k]


# --------------------------------------------------------------------------- public API
class FastModel:
    """A :class:`SnakeModel` packed as contiguous arrays for the compiled kernels."""

    __slots__ = ("axes", "gravity", "inertias", "masses", "model", "no_wrench", "offsets", "params")

    def __init__(self, model: SnakeModel) -> None:
        self.model = model
        self.axes = np.ascontiguousarray(model.axes, dtype=np.float64)
        self.offsets = np.ascontiguousarray(model.offsets, dtype=np.float64)
        self.masses = np.ascontiguousarray(model.masses, dtype=np.float64)
        self.inertias = np.ascontiguousarray(model.inertias, dtype=np.float64)
        self.gravity = np.ascontiguousarray(model.gravity, dtype=np.float64)
        self.no_wrench = np.zeros((model.n_joints, 6))
        self.params: Params = (
            self.axes,
            self.offsets,
            self.masses,
            self.inertias,
            self.gravity,
            self.no_wrench,
        )

    def wrench_array(self, wrenches: ArrayLike | None) -> FloatArray:
        """Validated (n, 6) wrench array (zeros when None)."""
        if wrenches is None:
            return self.no_wrench
        return np.ascontiguousarray(body_wrenches(self.model, wrenches))

    def forward_dynamics(
        self, q: FloatArray, qd: FloatArray, tau: FloatArray, wrenches: FloatArray | None = None
    ) -> FloatArray:
        """q_ddot (eq. 84), unchecked float64 inputs of shape (n,): the hot path."""
        w = self.no_wrench if wrenches is None else wrenches
        return _forward_dynamics(
            self.axes, self.offsets, self.masses, self.inertias, self.gravity, q, qd, tau, w
        )

    def inverse_dynamics(
        self, q: FloatArray, qd: FloatArray, qdd: FloatArray, wrenches: FloatArray | None = None
    ) -> FloatArray:
        """tau for q_ddot (eq. 81), unchecked float64 inputs of shape (n,)."""
        w = self.no_wrench if wrenches is None else wrenches
        return _rnea(
            self.axes, self.offsets, self.masses, self.inertias, self.gravity, q, qd, qdd, w
        )


def _state(model: SnakeModel, values: ArrayLike, name: str) -> FloatArray:
    return np.ascontiguousarray(joint_vector(model, values, name))


def mass_matrix(model: SnakeModel, q: ArrayLike) -> FloatArray:
    """M* (eq. 82) by composite bodies, O(n^2); equals :func:`kinetics.mass_matrix`."""
    p = FastModel(model)
    return _crba(p.axes, p.offsets, p.masses, p.inertias, _state(model, q, "q"))


def bias_forces(model: SnakeModel, q: ArrayLike, qd: ArrayLike) -> FloatArray:
    """N* q_dot (eq. 83) by recursive Newton-Euler with q_ddot = 0 and no gravity, O(n)."""
    p = FastModel(model)
    n = model.n_joints
    q_arr, qd_arr = _state(model, q, "q"), _state(model, qd, "qd")
    return _rnea(
        p.axes,
        p.offsets,
        p.masses,
        p.inertias,
        np.zeros(3),
        q_arr,
        qd_arr,
        np.zeros(n),
        p.no_wrench,
    )


def generalized_forces(
    model: SnakeModel, q: ArrayLike, tau: ArrayLike, wrenches: ArrayLike | None = None
) -> FloatArray:
    """F* = Bᵀ Q (eq. 79): tau plus the projected gravity and external wrenches, O(n)."""
    p = FastModel(model)
    zero = np.zeros(model.n_joints)
    passive = _rnea(
        p.axes,
        p.offsets,
        p.masses,
        p.inertias,
        p.gravity,
        _state(model, q, "q"),
        zero,
        zero,
        p.wrench_array(wrenches),
    )
    return _state(model, tau, "tau") - passive


def forward_dynamics(
    model: SnakeModel,
    q: ArrayLike,
    qd: ArrayLike,
    tau: ArrayLike,
    wrenches: ArrayLike | None = None,
) -> FloatArray:
    """q_ddot (eq. 84) by the articulated-body recursion, O(n)."""
    p = FastModel(model)
    return p.forward_dynamics(
        _state(model, q, "q"),
        _state(model, qd, "qd"),
        _state(model, tau, "tau"),
        p.wrench_array(wrenches),
    )


def inverse_dynamics(
    model: SnakeModel,
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    wrenches: ArrayLike | None = None,
) -> FloatArray:
    """tau = M* q_ddot + N* q_dot - F*(tau = 0) (eq. 81) by recursive Newton-Euler, O(n)."""
    p = FastModel(model)
    return p.inverse_dynamics(
        _state(model, q, "q"),
        _state(model, qd, "qd"),
        _state(model, qdd, "qdd"),
        p.wrench_array(wrenches),
    )


def energies(model: SnakeModel, q: ArrayLike, qd: ArrayLike) -> FloatArray:
    """Kinetic (eq. 65) and potential energy [J] of samples q, q_dot of shape (N, n): (N, 2)."""
    p = FastModel(model)
    qs = np.ascontiguousarray(np.atleast_2d(np.asarray(q, dtype=float)))
    qds = np.ascontiguousarray(np.atleast_2d(np.asarray(qd, dtype=float)))
    if qs.shape != qds.shape or qs.shape[1] != model.n_joints:
        raise StateError(
            f"q and qd must both have shape (N, {model.n_joints}), got {qs.shape}, {qds.shape}"
        )
    return _energies(p.axes, p.offsets, p.masses, p.inertias, p.gravity, qs, qds)
