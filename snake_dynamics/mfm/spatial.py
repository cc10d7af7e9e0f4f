"""Compiled spatial-algebra kernels shared by the fixed-tail and floating-base recursions.

Every quantity is written in the one inertial frame, about its origin, angular part first
(docs/mfm.md, "The fast path"): the body frames and M-blocks of eqs. (17), (46)-(48) and (66),
the joint twists (columns of B, eq. 56), the external forces of eq. (79), and the two passes
of the articulated-body recursion that solve eq. (84) in O(n). :mod:`snake_dynamics.mfm.recursive`
(fixed tail) and :mod:`snake_dynamics.floating.recursive` (free tail) call the same kernels;
the floating one hands the articulated inertia of body 1 to its 6-DOF root.

All kernels are compiled with numba (``cache=True``: the first call in a fresh checkout
compiles for a few seconds, later processes load the cache).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from snake_dynamics.jit import compiled

FloatArray = NDArray[np.float64]


@compiled
def body_frames(
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
    rot[0] = 0.0  # the identity, with no array allocated per call
    rot[0, 0, 0] = rot[0, 1, 1] = rot[0, 2, 2] = 1.0
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
def motion_cross(v: FloatArray, m: FloatArray, scale: float, out: FloatArray) -> None:
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
def force_cross_inertia(v: FloatArray, inertia: FloatArray, out: FloatArray) -> None:
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
def external_forces(
    masses: FloatArray,
    gravity: FloatArray | tuple[float, float, float],
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
def velocities(s: FloatArray, qd: FloatArray, v: FloatArray, c: FloatArray) -> None:
    """v = body twists v_b = sum_{k<=b} S_k qd_k, c = velocity products v_b x S_b qd_b (n, 6)."""
    for k in range(qd.shape[0]):
        for i in range(6):
            v[k, i] = (v[k - 1, i] if k > 0 else 0.0) + s[k, i] * qd[k]
        motion_cross(v[k], s[k], qd[k], c[k])


@compiled
def dot6(a: FloatArray, b: FloatArray) -> float:
    dot: float = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]
    return dot


@compiled
def articulated_backward_pass(
    art: FloatArray,
    twist: FloatArray,
    bias: FloatArray,
    c: FloatArray,
    tau: FloatArray,
    armature: FloatArray,
    u_vec: FloatArray,
    d: FloatArray,
    u: FloatArray,
    root_art: FloatArray,
    root_bias: FloatArray,
) -> None:
    """The articulated-body recursion's backward pass, head to tail, for eq. (84).

    On entry ``art`` holds the bodies' M-blocks I_b and ``bias`` their bias forces
    p_b = v_b x* I_b v_b - Q_b (n, 6); each body k hands its articulated inertia
    Ia = IA_k - U_k U_kᵀ / d_k and bias p_k + Ia c_k + U_k u_k / d_k to its parent, body 1
    to the root (``root_art`` (6, 6), ``root_bias`` (6,), added to: a fixed tail ignores
    them, a floating base solves IA_0 a_0 = -p_0 with them). Writes U_k = IA_k S_k (``u_vec``),
    d_k = S_kᵀ U_k + J_a,k (the joint's armature [kg m^2], (n,): eq. 471's diagonal, which
    the parent's articulated inertia does not see) and u_k = tau_k - S_kᵀ p_k.
    """
    n = tau.shape[0]
    for k in range(n - 1, -1, -1):
        ak, sk, uk, bk, ck = art[k], twist[k], u_vec[k], bias[k], c[k]
        for i in range(6):
            uk[i] = (
                ak[i, 0] * sk[0]
                + ak[i, 1] * sk[1]
                + ak[i, 2] * sk[2]
                + ak[i, 3] * sk[3]
                + ak[i, 4] * sk[4]
                + ak[i, 5] * sk[5]
            )
        d[k] = dot6(sk, uk) + armature[k]
        u[k] = tau[k] - dot6(sk, bk)
        ap, bp = (art[k - 1], bias[k - 1]) if k > 0 else (root_art, root_bias)
        inv_d = 1.0 / d[k]
        scale = u[k] * inv_d
        # whole rows of Ia = IA - U Uᵀ / d (no triangle: straight rows vectorise)
        for i in range(6):
            ui = uk[i] * inv_d
            row = bk[i] + uk[i] * scale
            for j in range(6):
                art_ij = ak[i, j] - ui * uk[j]
                ap[i, j] += art_ij
                row += art_ij * ck[j]
            bp[i] += row


@compiled
def articulated_forward_pass(
    twist: FloatArray,
    c: FloatArray,
    u_vec: FloatArray,
    d: FloatArray,
    u: FloatArray,
    acc: FloatArray,
    qdd: FloatArray,
) -> None:
    """The articulated-body recursion's forward pass, tail to head, for eq. (84).

    From the root's spatial acceleration ``acc`` (6,) (zero for a fixed tail; overwritten
    with the head's), qdd_k = (u_k - U_kᵀ (a_{k-1} + c_k)) / d_k and
    a_k = a_{k-1} + c_k + S_k qdd_k. Writes ``qdd`` (n,) [rad/s^2].
    """
    for k in range(qdd.shape[0]):
        for i in range(6):
            acc[i] += c[k, i]
        qdd[k] = (u[k] - dot6(u_vec[k], acc)) / d[k]
        for i in range(6):
            acc[i] += twist[k, i] * qdd[k]
