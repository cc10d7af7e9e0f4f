"""The floating-base kernels' model arrays, scratch workspace and chain (docs/mfm.md, "The
floating base", eqs. 221-226): the packed model, the quaternion's matrix, the chain's
frames and twists in the tail's frame, the bodies' world poses and velocities, the
velocity-dependent and external forces, the ground's wrenches on the chain, and the 6x6
solve at the root. What the recursions (:mod:`.aba`, :mod:`.prescribed`) share.

The kernels work in the tail's frame at the current instant, frozen, about the tail's CM,
with the spatial vectors of :mod:`snake_dynamics.mfm.spatial` (angular first); see
:mod:`snake_dynamics.floating.recursive` for the frame and the velocity convention.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from snake_dynamics.ground.kernel import ground_wrench_kernel
from snake_dynamics.jit import compiled, inlined, inlined_twin
from snake_dynamics.mfm import spatial

FloatArray = NDArray[np.float64]

# mfm.spatial's kernels, inlined into the floating kernels (the fixed base calls them)
body_frames = inlined_twin(spatial.body_frames)
external_forces = inlined_twin(spatial.external_forces)
force_cross_inertia = inlined_twin(spatial.force_cross_inertia)
articulated_backward_pass = inlined_twin(spatial.articulated_backward_pass)
articulated_forward_pass = inlined_twin(spatial.articulated_forward_pass)


#: The model arrays the floating kernels take: (axes, offsets, masses, inertias, gravity,
#: lengths, radii, armature).
FloatingParams = tuple[
    FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray,
    FloatArray,
]  # fmt: skip

#: Scratch arrays of the floating kernels for n joints (see :func:`floating_workspace`).
FloatingWorkspace = tuple[
    FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray,
    FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray,
    FloatArray, FloatArray, FloatArray, FloatArray, FloatArray,
]  # fmt: skip


@compiled
def floating_workspace(n: int) -> FloatingWorkspace:
    """Scratch arrays of the floating kernels (allocated once per run, not per call)."""
    return (
        np.empty((n + 1, 3, 3)),  # 0 rot: R_b^0
        np.empty((n + 1, 3)),  # 1 pos: r_b^0
        np.empty((n, 6)),  # 2 twists S_k
        np.empty((n, 6, 6)),  # 3 M-blocks I_b, then articulated / composite inertias
        np.empty((n, 6)),  # 4 body twists v_b
        np.empty((n, 6)),  # 5 velocity products c_k
        np.empty((n, 6)),  # 6 bias forces p_b, or body forces f_b
        np.empty((n, 6)),  # 7 U = IA S
        np.empty(n),  # 8 d = Sᵀ U
        np.empty(n),  # 9 u = tau - Sᵀ p
        np.empty((6, 6)),  # 10 the root's articulated (or composite) inertia
        np.empty(6),  # 11 the root's bias force
        np.empty(6),  # 12 scratch spatial vector
        np.empty((n + 1, 6)),  # 13 wrenches, forces in the tail's frame
        np.empty((n + 1, 3, 3)),  # 14 world R_b
        np.empty((n + 1, 3)),  # 15 world r_b
        np.empty((n + 1, 3)),  # 16 world CM velocities
        np.empty((n + 1, 3)),  # 17 world angular velocities
        np.empty((n + 1, 6)),  # 18 ground wrenches
    )


@inlined
def quaternion_matrix(quat: FloatArray, out: FloatArray) -> None:
    """out = R_0 of the quaternion (x, y, z, w), normalised first (as scipy does)."""
    norm = math.sqrt(quat[0] ** 2 + quat[1] ** 2 + quat[2] ** 2 + quat[3] ** 2)
    x, y, z, w = quat[0] / norm, quat[1] / norm, quat[2] / norm, quat[3] / norm
    out[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    out[0, 1] = 2.0 * (x * y - z * w)
    out[0, 2] = 2.0 * (x * z + y * w)
    out[1, 0] = 2.0 * (x * y + z * w)
    out[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    out[1, 2] = 2.0 * (y * z - x * w)
    out[2, 0] = 2.0 * (x * z - y * w)
    out[2, 1] = 2.0 * (y * z + x * w)
    out[2, 2] = 1.0 - 2.0 * (x * x + y * y)


@inlined
def chain_twists(
    params: FloatingParams, q: FloatArray, nu: FloatArray, work: FloatingWorkspace
) -> None:
    """The chain in the tail's frame and its twists (eqs. 221, 222).

    Writes R_b^0, r_b^0, S_k, I_b (:func:`.body_frames`, eqs. 17, 46-48 with E_0 = I),
    the body twists v_b = V_0 + sum_{k<=b} S_k qd_k about the tail's CM with
    V_0 = [w_0; v_0] (eq. 222: body b's CM velocity v_0 + w_0 x r_b^0 + B_v^0 q_dot), and
    the velocity products c_k = v_k x S_k qd_k.
    """
    axes, offsets, masses, inertias = params[0], params[1], params[2], params[3]
    rot, pos, s, inert, v, c = work[0], work[1], work[2], work[3], work[4], work[5]
    body_frames(axes, offsets, masses, inertias, q, rot, pos, s, inert)
    w0, w1, w2, u0, u1, u2 = nu[3], nu[4], nu[5], nu[0], nu[1], nu[2]
    for k in range(q.shape[0]):
        qd = nu[6 + k]
        sk = s[k]
        w0 += sk[0] * qd
        w1 += sk[1] * qd
        w2 += sk[2] * qd
        u0 += sk[3] * qd
        u1 += sk[4] * qd
        u2 += sk[5] * qd
        vk, ck = v[k], c[k]
        vk[0], vk[1], vk[2], vk[3], vk[4], vk[5] = w0, w1, w2, u0, u1, u2
        a0, a1, a2 = qd * sk[0], qd * sk[1], qd * sk[2]
        b0, b1, b2 = qd * sk[3], qd * sk[4], qd * sk[5]
        ck[0] = w1 * a2 - w2 * a1
        ck[1] = w2 * a0 - w0 * a2
        ck[2] = w0 * a1 - w1 * a0
        ck[3] = w1 * b2 - w2 * b1 + u1 * a2 - u2 * a1
        ck[4] = w2 * b0 - w0 * b2 + u2 * a0 - u0 * a2
        ck[5] = w0 * b1 - w1 * b0 + u0 * a1 - u1 * a0


@inlined
def world_motion(
    rotation0: FloatArray, position0: FloatArray, nu: FloatArray, work: FloatingWorkspace
) -> None:
    """World poses and velocities of all bodies from :func:`chain_twists` (eq. 221):
    R_b = R_0 R_b^0, r_b = x_0 + R_0 r_b^0, CM velocity R_0 (v_b + w_b x r_b^0) and
    angular velocity R_0 w_b (inertial frame), the tail first."""
    rot, pos, v = work[0], work[1], work[4]
    rot_w, pos_w, vel_w, omg_w = work[14], work[15], work[16], work[17]
    n = v.shape[0]
    for b in range(n + 1):
        if b == 0:
            w0, w1, w2 = nu[3], nu[4], nu[5]
            l0, l1, l2 = nu[0], nu[1], nu[2]
        else:
            vb, r = v[b - 1], pos[b]
            w0, w1, w2 = vb[0], vb[1], vb[2]
            l0 = vb[3] + w1 * r[2] - w2 * r[1]
            l1 = vb[4] + w2 * r[0] - w0 * r[2]
            l2 = vb[5] + w0 * r[1] - w1 * r[0]
        for i in range(3):
            ri = rotation0[i]
            pos_w[b, i] = position0[i] + ri[0] * pos[b, 0] + ri[1] * pos[b, 1] + ri[2] * pos[b, 2]
            vel_w[b, i] = ri[0] * l0 + ri[1] * l1 + ri[2] * l2
            omg_w[b, i] = ri[0] * w0 + ri[1] * w1 + ri[2] * w2
            for j in range(3):
                rot_w[b, i, j] = ri[0] * rot[b, 0, j] + ri[1] * rot[b, 1, j] + ri[2] * rot[b, 2, j]


@inlined
def body_forces(
    params: FloatingParams,
    rotation0: FloatArray,
    nu: FloatArray,
    wrenches: FloatArray,
    work: FloatingWorkspace,
) -> None:
    """The velocity-dependent and external spatial forces (eqs. 225, 226) about the tail's CM.

    Writes p_b = v_b x* (I_b v_b) - [moment; m_b g + F_ext] for the bodies 1..n, and the
    root's p_0 with the tail's inertia [[J_0, 0], [0, m_0 1]], V_0 = [w_0; v_0]; gravity and
    the wrenches' forces rotated into the tail's frame by R_0ᵀ, the body-frame moments by
    R_b^0. ``wrenches`` (n+1, 6) in the layout of :func:`floating.floating_force_list`.
    """
    masses, inertias, gravity = params[2], params[3], params[4]
    rot, pos, inert, v, bias = work[0], work[1], work[3], work[4], work[6]
    root, p0, spare, local = work[10], work[11], work[12], work[13]
    n = v.shape[0]
    g0 = (  # gravity in the tail's frame, R_0ᵀ g
        rotation0[0, 0] * gravity[0] + rotation0[1, 0] * gravity[1] + rotation0[2, 0] * gravity[2],
        rotation0[0, 1] * gravity[0] + rotation0[1, 1] * gravity[1] + rotation0[2, 1] * gravity[2],
        rotation0[0, 2] * gravity[0] + rotation0[1, 2] * gravity[1] + rotation0[2, 2] * gravity[2],
    )
    for b in range(n + 1):
        for i in range(3):
            local[b, i] = (
                rotation0[0, i] * wrenches[b, 0]
                + rotation0[1, i] * wrenches[b, 1]
                + rotation0[2, i] * wrenches[b, 2]
            )
            local[b, 3 + i] = wrenches[b, 3 + i]
    external_forces(masses, g0, rot, pos, local[1:], bias)
    for k in range(n):
        force_cross_inertia(v[k], inert[k], spare)
        for i in range(6):
            bias[k, i] = spare[i] - bias[k, i]
    # the root: the tail's M-block about its own CM, in its own frame (eq. 224)
    j0 = inertias[0]
    m0 = masses[0]
    for i in range(6):
        for j in range(6):
            root[i, j] = 0.0
    for i in range(3):
        for j in range(3):
            root[i, j] = j0[i, j]
        root[3 + i, 3 + i] = m0
    spare[0], spare[1], spare[2] = nu[3], nu[4], nu[5]
    spare[3], spare[4], spare[5] = nu[0], nu[1], nu[2]
    force_cross_inertia(spare, root, p0)  # the root's gyroscopic force, then p_0
    for i in range(3):
        p0[i] -= local[0, 3 + i]
        p0[3 + i] = p0[3 + i] - m0 * g0[i] - local[0, i]


@inlined
def solve6(a: FloatArray, b: FloatArray, x: FloatArray) -> None:
    """x = a⁻¹ b for a symmetric positive definite 6x6 (Cholesky; ``a`` is overwritten)."""
    for j in range(6):
        diag = a[j, j]
        for k in range(j):
            diag -= a[j, k] * a[j, k]
        diag = math.sqrt(diag)
        a[j, j] = diag
        for i in range(j + 1, 6):
            acc = a[i, j]
            for k in range(j):
                acc -= a[i, k] * a[j, k]
            a[i, j] = acc / diag
    for i in range(6):
        acc = b[i]
        for k in range(i):
            acc -= a[i, k] * x[k]
        x[i] = acc / a[i, i]
    for i in range(5, -1, -1):
        acc = x[i]
        for k in range(i + 1, 6):
            acc -= a[k, i] * x[k]
        x[i] = acc / a[i, i]


@inlined
def ground_on_chain(
    params: FloatingParams,
    ground: FloatArray,
    rotation0: FloatArray,
    position0: FloatArray,
    nu: FloatArray,
    work: FloatingWorkspace,
) -> None:
    """The ground's wrenches (eqs. 231-236) at the state :func:`chain_twists` holds, into work[18]
    (zeros without a ground)."""
    out = work[18]
    if ground[9] == 0.0:
        out[:] = 0.0
        return
    world_motion(rotation0, position0, nu, work)
    ground_wrench_kernel(ground, params[5], params[6], work[14], work[15], work[16], work[17], out)
