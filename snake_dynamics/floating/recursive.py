"""Fast floating-base MFM: the quantities of :mod:`snake_dynamics.floating.literal`, computed
recursively and compiled (docs/mfm.md, "The floating base", eqs. 221-230, and "The snake on
the ground", eqs. 231-237).

The velocity convention is the literal one (eq. 221): nu = [v_0; w_0; q_dot], with v_0 the
tail's CM velocity [m/s] and w_0 its angular velocity [rad/s], both in the tail's frame.

Every kernel works in the tail's frame at the current instant, frozen (an inertial frame
that coincides with the tail's frame at this instant), about its origin, the tail's CM,
with the spatial vectors of :mod:`snake_dynamics.mfm.recursive` (angular first). The chain's frames
are then exactly the fixed-tail ones of :func:`snake_dynamics.mfm.recursive.body_frames` (E_0 = I):
R_b^0, r_b^0, the joint twists S_k and the body M-blocks I_b about the tail's CM. In this
frame the tail's twist is V_0 = [w_0; v_0], its spatial acceleration is exactly
[w_0'; v_0'] (the linear part of a spatial acceleration is r'' - w x r' at the reference
point: R_0ᵀ d/dt(R_0 v_0) - w_0 x v_0 = v_0'), and gravity and the wrenches' forces enter
rotated by R_0ᵀ. So:

* nu_dot (eq. 227) by the articulated-body recursion with the tail as a 6-DOF root, whose
  6x6 articulated inertia is solved at the end of the backward pass, O(n);
* the prescribed-joint base acceleration and torques (eq. 228) by Newton-Euler with the
  base acceleration unknown: the forces of the chain at zero base acceleration, the
  composite inertia of the whole snake at the root, a 6x6 solve, then the torques, O(n);
* the ground's wrenches (eqs. 231-236) compiled;
* :func:`simulate_prescribed_fast`, the twin of :func:`floating.simulate_prescribed`, with
  the quaternion RK4 (eq. 230) compiled over chunks of steps, the gait sampled in Python at
  the stage times beforehand.

The kernels are compiled with numba (``cache=True``, as in :mod:`snake_dynamics.mfm.recursive`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from snake_dynamics.errors import SimulationError, StateError
from snake_dynamics.floating.literal import (
    BaseTracker,
    hermite_basis,
    momentum_free_base_velocity,
)
from snake_dynamics.floating.state import (
    FloatingRun,
    FloatingState,
    MotionFn,
    check_step,
    checked_nu,
    checked_rotation,
    rest_state,
)
from snake_dynamics.ground import Ground
from snake_dynamics.ground.kernel import ground_parameters, ground_wrench_kernel
from snake_dynamics.jit import compiled
from snake_dynamics.mfm.kinematics import joint_vector
from snake_dynamics.mfm.spatial import (
    articulated_backward_pass,
    articulated_forward_pass,
    body_frames,
    external_forces,
    force_cross_inertia,
)
from snake_dynamics.model import SnakeModel

FloatArray = NDArray[np.float64]

#: The model arrays the floating kernels take: (axes, offsets, masses, inertias, gravity,
#: lengths, radii).
FloatingParams = tuple[
    FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray
]

#: Scratch arrays of the floating kernels for n joints (see :func:`floating_workspace`).
FloatingWorkspace = tuple[
    FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray,
    FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray,
    FloatArray, FloatArray, FloatArray, FloatArray, FloatArray,
]  # fmt: skip

#: Steps per compiled chunk of :func:`simulate_prescribed_fast`.
CHUNK = 512


# --------------------------------------------------------------------------- kernels
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


@compiled
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


@compiled
def _chain(params: FloatingParams, q: FloatArray, nu: FloatArray, work: FloatingWorkspace) -> None:
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


@compiled
def _world(
    rotation0: FloatArray, position0: FloatArray, nu: FloatArray, work: FloatingWorkspace
) -> None:
    """World poses and velocities of all bodies from :func:`_chain` (eq. 221):
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


@compiled
def _body_forces(
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


@compiled
def _solve6(a: FloatArray, b: FloatArray, x: FloatArray) -> None:
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


@compiled
def _aba_floating(
    params: FloatingParams,
    rotation0: FloatArray,
    q: FloatArray,
    nu: FloatArray,
    tau: FloatArray,
    wrenches: FloatArray,
    work: FloatingWorkspace,
    nu_dot: FloatArray,
) -> None:
    """nu_dot of eq. (227) by the articulated-body recursion with a 6-DOF root, O(n).

    The backward pass of the fixed tail (:func:`.articulated_backward_pass`), body 1 handing its
    articulated inertia and bias to the root; the root's spatial acceleration [w_0'; v_0'] solves
    IA_0 a_0 = -p_0 (6x6); the forward pass starts from a_0. Writes nu_dot = [v_0'; w_0'; q_ddot].
    """
    _chain(params, q, nu, work)
    _aba_core(params, rotation0, nu, tau, wrenches, work, nu_dot)


@compiled
def _aba_core(
    params: FloatingParams,
    rotation0: FloatArray,
    nu: FloatArray,
    tau: FloatArray,
    wrenches: FloatArray,
    work: FloatingWorkspace,
    nu_dot: FloatArray,
) -> None:
    """:func:`_aba_floating` at the state :func:`_chain` left in ``work``."""
    _body_forces(params, rotation0, nu, wrenches, work)
    s, art, c, bias, u_vec, d, u = work[2], work[3], work[5], work[6], work[7], work[8], work[9]
    root, p0, acc = work[10], work[11], work[12]
    articulated_backward_pass(art, s, bias, c, tau, u_vec, d, u, root, p0)
    for i in range(6):
        p0[i] = -p0[i]
    _solve6(root, p0, acc)
    nu_dot[0], nu_dot[1], nu_dot[2] = acc[3], acc[4], acc[5]
    nu_dot[3], nu_dot[4], nu_dot[5] = acc[0], acc[1], acc[2]
    articulated_forward_pass(s, c, u_vec, d, u, acc, nu_dot[6:])


@compiled
def _prescribed(
    params: FloatingParams,
    rotation0: FloatArray,
    q: FloatArray,
    nu: FloatArray,
    qdd: FloatArray,
    wrenches: FloatArray,
    work: FloatingWorkspace,
    accel: FloatArray,
    tau: FloatArray,
) -> None:
    """The base acceleration and joint torques of prescribed joints (eq. 228), O(n).

    Newton-Euler with the base acceleration a_0 unknown: the bodies' accelerations and
    forces at a_0 = 0, accumulated head to tail with the composite inertias; the whole
    snake's force at the root must vanish, IC_0 a_0 = -F_0 (6x6); then
    tau_k = S_kᵀ (F_k + IC_k a_0). Writes accel = [v_0'; w_0'] (tail frame) and tau.
    """
    _chain(params, q, nu, work)
    _prescribed_core(params, rotation0, nu, qdd, wrenches, work, accel, tau)


@compiled
def _prescribed_core(
    params: FloatingParams,
    rotation0: FloatArray,
    nu: FloatArray,
    qdd: FloatArray,
    wrenches: FloatArray,
    work: FloatingWorkspace,
    accel: FloatArray,
    tau: FloatArray,
) -> None:
    """:func:`_prescribed` at the state :func:`_chain` left in ``work``."""
    n = qdd.shape[0]
    _body_forces(params, rotation0, nu, wrenches, work)
    s, comp, c, force = work[2], work[3], work[5], work[6]
    root, p0, acc = work[10], work[11], work[12]
    for i in range(6):
        acc[i] = 0.0
    for k in range(n):  # at a_0 = 0: a_k = a_{k-1} + c_k + S_k qdd_k, f_k = I_k a_k + p_k
        for i in range(6):
            acc[i] += c[k, i] + s[k, i] * qdd[k]
        ik, fk = comp[k], force[k]
        for i in range(6):
            fk[i] += (
                ik[i, 0] * acc[0]
                + ik[i, 1] * acc[1]
                + ik[i, 2] * acc[2]
                + ik[i, 3] * acc[3]
                + ik[i, 4] * acc[4]
                + ik[i, 5] * acc[5]
            )
    for k in range(n - 1, 0, -1):  # composite inertias and forces, head to tail
        for i in range(6):
            force[k - 1, i] += force[k, i]
            for j in range(6):
                comp[k - 1, i, j] += comp[k, i, j]
    for i in range(6):
        p0[i] = -(p0[i] + force[0, i])
        for j in range(6):
            root[i, j] += comp[0, i, j]
    _solve6(root, p0, acc)
    accel[0], accel[1], accel[2] = acc[3], acc[4], acc[5]
    accel[3], accel[4], accel[5] = acc[0], acc[1], acc[2]
    for k in range(n):
        ik, fk, sk = comp[k], force[k], s[k]
        total = 0.0
        for i in range(6):
            total += sk[i] * (
                fk[i]
                + ik[i, 0] * acc[0]
                + ik[i, 1] * acc[1]
                + ik[i, 2] * acc[2]
                + ik[i, 3] * acc[3]
                + ik[i, 4] * acc[4]
                + ik[i, 5] * acc[5]
            )
        tau[k] = total


@compiled
def _ground_on_chain(
    params: FloatingParams,
    ground: FloatArray,
    rotation0: FloatArray,
    position0: FloatArray,
    nu: FloatArray,
    work: FloatingWorkspace,
) -> None:
    """The ground's wrenches (eqs. 231-236) at the state :func:`_chain` holds, into work[18]
    (zeros without a ground)."""
    out = work[18]
    if ground[9] == 0.0:
        out[:] = 0.0
        return
    _world(rotation0, position0, nu, work)
    ground_wrench_kernel(ground, params[5], params[6], work[14], work[15], work[16], work[17], out)


@compiled
def forward_dynamics_on_ground(
    params: FloatingParams,
    ground: FloatArray,
    rotation0: FloatArray,
    position0: FloatArray,
    q: FloatArray,
    nu: FloatArray,
    tau: FloatArray,
    work: FloatingWorkspace,
    nu_dot: FloatArray,
) -> None:
    """nu_dot (eq. 227) under joint torques ``tau`` [N m], gravity and the ground's wrenches
    (eqs. 231-236; none when ``ground`` is off), O(n): the rate of the servo-driven snake on
    the ground (eq. 240). Writes nu_dot = [v_0'; w_0'; q_ddot] (tail frame); the ground's
    wrenches stay in work[18]."""
    _chain(params, q, nu, work)
    _ground_on_chain(params, ground, rotation0, position0, nu, work)
    _aba_core(params, rotation0, nu, tau, work[18], work, nu_dot)


@compiled
def _stage(
    params: FloatingParams,
    ground: FloatArray,
    rotation0: FloatArray,
    position0: FloatArray,
    q: FloatArray,
    nu: FloatArray,
    qdd: FloatArray,
    work: FloatingWorkspace,
    accel: FloatArray,
    tau: FloatArray,
) -> None:
    """Prescribed-joint dynamics (eq. 228) under gravity and the ground (eqs. 231-236)."""
    _chain(params, q, nu, work)
    _ground_on_chain(params, ground, rotation0, position0, nu, work)
    _prescribed_core(params, rotation0, nu, qdd, work[18], work, accel, tau)


@compiled
def quaternion_rate(quat: FloatArray, nu: FloatArray, out: FloatArray) -> None:
    """out = 1/2 quat (x) (w_0, 0), scalar last (eq. 230); w_0 = nu[3:6]."""
    x, y, z, w = quat[0], quat[1], quat[2], quat[3]
    ox, oy, oz = nu[3], nu[4], nu[5]
    out[0] = 0.5 * (w * ox + y * oz - z * oy)
    out[1] = 0.5 * (w * oy + z * ox - x * oz)
    out[2] = 0.5 * (w * oz + x * oy - y * ox)
    out[3] = 0.5 * (-x * ox - y * oy - z * oz)


@compiled
def rk4_prescribed_steps(
    params: FloatingParams,
    ground: FloatArray,
    position: FloatArray,
    quaternion: FloatArray,
    base: FloatArray,
    qs: FloatArray,
    qds: FloatArray,
    qdds: FloatArray,
    dt: float,
    out_position: FloatArray,
    out_quaternion: FloatArray,
    out_base: FloatArray,
    out_tau: FloatArray,
) -> None:
    """Classical RK4 steps of the base of a snake with prescribed joints (eqs. 228, 230).

    The compiled twin of :func:`floating.rk4_floating_step` with prescribed joints: step i
    reads q, q_dot, q_ddot at its stage times t_i, t_i + dt/2, t_i + dt (rows 2i, 2i+1,
    2i+2 of ``qs``, ``qds``, ``qdds``); the quaternion is renormalised after each stage and
    step.

    Args:
        params: model arrays (:class:`FastFloatingModel`).
        ground: :func:`snake_dynamics.ground.kernel.ground_parameters`.
        position: x_0 at the first step [m], shape (3,).
        quaternion: R_0 (x, y, z, w) at the first step, shape (4,).
        base: [v_0; w_0] (tail frame) at the first step, shape (6,).
        qs: joint angles at the stage times [rad], shape (2m+1, n).
        qds: joint rates at the stage times [rad/s], shape (2m+1, n).
        qdds: joint accelerations at the stage times [rad/s^2], shape (2m+1, n).
        dt: step [s].
        out_position: out: x_0 after each step, shape (m, 3).
        out_quaternion: out: R_0 after each step, shape (m, 4).
        out_base: out: [v_0; w_0] after each step, shape (m, 6).
        out_tau: out: the joint torques (eq. 228) at the start of each step [N m], (m, n).

    Compiled with fastmath: NaN and inf are not detected here; the caller checks the rows.
    """
    n = qs.shape[1]
    work = floating_workspace(n)
    nu = np.empty(6 + n)
    rotation = np.empty((3, 3))
    k_pos, k_quat, k_base = np.empty((4, 3)), np.empty((4, 4)), np.empty((4, 6))
    s_pos, s_quat, s_base = position.copy(), quaternion.copy(), base.copy()
    pos, quat, vel = position.copy(), quaternion.copy(), base.copy()
    tau = np.empty(n)
    accel = np.empty(6)
    for i in range(out_position.shape[0]):
        for stage in range(4):
            row = 2 * i + (0 if stage == 0 else (1 if stage < 3 else 2))
            if stage == 0:
                s_pos[:] = pos
                s_quat[:] = quat
                s_base[:] = vel
            else:
                h = 0.5 * dt if stage < 3 else dt
                for j in range(3):
                    s_pos[j] = pos[j] + h * k_pos[stage - 1, j]
                norm = 0.0
                for j in range(4):
                    s_quat[j] = quat[j] + h * k_quat[stage - 1, j]
                    norm += s_quat[j] * s_quat[j]
                norm = math.sqrt(norm)
                for j in range(4):
                    s_quat[j] /= norm
                for j in range(6):
                    s_base[j] = vel[j] + h * k_base[stage - 1, j]
            nu[:6] = s_base
            nu[6:] = qds[row]
            quaternion_matrix(s_quat, rotation)
            _stage(params, ground, rotation, s_pos, qs[row], nu, qdds[row], work, accel, tau)
            if stage == 0:
                out_tau[i] = tau
            for j in range(3):
                k_pos[stage, j] = (
                    rotation[j, 0] * s_base[0]
                    + rotation[j, 1] * s_base[1]
                    + rotation[j, 2] * s_base[2]
                )
            quaternion_rate(s_quat, s_base, k_quat[stage])
            k_base[stage] = accel
        for j in range(3):
            pos[j] += dt * ((k_pos[0, j] + 2 * k_pos[1, j] + 2 * k_pos[2, j] + k_pos[3, j]) / 6)
        norm = 0.0
        for j in range(4):
            quat[j] += dt * (
                (k_quat[0, j] + 2 * k_quat[1, j] + 2 * k_quat[2, j] + k_quat[3, j]) / 6
            )
            norm += quat[j] * quat[j]
        norm = math.sqrt(norm)
        for j in range(4):
            quat[j] /= norm
        for j in range(6):
            vel[j] += dt * ((k_base[0, j] + 2 * k_base[1, j] + 2 * k_base[2, j] + k_base[3, j]) / 6)
        out_position[i] = pos
        out_quaternion[i] = quat
        out_base[i] = vel


@compiled
def mass_centre_and_heading(
    params: FloatingParams, positions: FloatArray, quaternions: FloatArray, qs: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Per sample: the snake's CM sum m_b r_b / sum m_b [m] and the heading, atan2 of
    sum_b R_b e2 in the ground plane [rad] (eq. 221's R_b = R_0 R_b^0, r_b = x_0 + R_0 r_b^0)."""
    axes, offsets, masses, inertias = params[0], params[1], params[2], params[3]
    rows, n = qs.shape[0], qs.shape[1]
    rot, pos = np.empty((n + 1, 3, 3)), np.empty((n + 1, 3))
    twist, inert = np.empty((n, 6)), np.empty((n, 6, 6))
    rotation = np.empty((3, 3))
    com, heading = np.empty((rows, 3)), np.empty(rows)
    total = 0.0
    for b in range(n + 1):
        total += masses[b]
    for r in range(rows):
        body_frames(axes, offsets, masses, inertias, qs[r], rot, pos, twist, inert)
        quaternion_matrix(quaternions[r], rotation)
        centre = np.zeros(3)
        axis = np.zeros(3)
        for b in range(n + 1):
            for i in range(3):
                centre[i] += masses[b] * pos[b, i]
                axis[i] += rot[b, i, 1]
        for i in range(3):
            com[r, i] = (
                positions[r, i]
                + (
                    rotation[i, 0] * centre[0]
                    + rotation[i, 1] * centre[1]
                    + rotation[i, 2] * centre[2]
                )
                / total
            )
        ax = rotation[0, 0] * axis[0] + rotation[0, 1] * axis[1] + rotation[0, 2] * axis[2]
        ay = rotation[1, 0] * axis[0] + rotation[1, 1] * axis[1] + rotation[1, 2] * axis[2]
        heading[r] = math.atan2(ay, ax)
    return com, heading


@compiled
def body_pose(
    params: FloatingParams, position: FloatArray, quaternion: FloatArray, q: FloatArray, body: int
) -> tuple[FloatArray, FloatArray]:
    """One body's world rotation R_b = R_0 R_b^0, shape (3, 3), and CM
    r_b = x_0 + R_0 r_b^0 [m], shape (3,) (eq. 221), from the tail's CM ``position`` [m],
    its unit ``quaternion`` (x, y, z, w) and the joint angles ``q`` [rad]; body 0 is the
    tail (:func:`snake_dynamics.floating.literal.world_poses` for one body, compiled)."""
    axes, offsets, masses, inertias = params[0], params[1], params[2], params[3]
    n = q.shape[0]
    rot, pos = np.empty((n + 1, 3, 3)), np.empty((n + 1, 3))
    twist, inert = np.empty((n, 6)), np.empty((n, 6, 6))
    rotation0 = np.empty((3, 3))
    body_frames(axes, offsets, masses, inertias, q, rot, pos, twist, inert)
    quaternion_matrix(quaternion, rotation0)
    rotation, centre = np.empty((3, 3)), np.empty(3)
    rb, pb = rot[body], pos[body]
    for i in range(3):
        r = rotation0[i]
        centre[i] = position[i] + r[0] * pb[0] + r[1] * pb[1] + r[2] * pb[2]
        for j in range(3):
            rotation[i, j] = r[0] * rb[0, j] + r[1] * rb[1, j] + r[2] * rb[2, j]
    return rotation, centre


# --------------------------------------------------------------------------- public API
class FastFloatingModel:
    """A floating-base :class:`SnakeModel` packed for the compiled kernels, with its own
    scratch arrays (not thread-safe: one instance per thread)."""

    __slots__ = ("ground", "model", "no_wrench", "params", "work")

    def __init__(self, model: SnakeModel, ground: Ground | None = None) -> None:
        """Pack ``model``; ``ground`` defaults to ``model.ground`` (None: no ground)."""
        self.model = model

        def packed(values: FloatArray) -> FloatArray:
            return np.ascontiguousarray(values, dtype=np.float64)

        self.params: FloatingParams = (
            packed(model.axes),
            packed(model.offsets),
            packed(model.masses),
            packed(model.inertias),
            packed(model.gravity),
            packed(model.lengths),
            packed(model.radii),
        )
        self.ground = ground_parameters(model.ground if ground is None else ground)
        self.no_wrench = np.zeros((model.n_joints + 1, 6))
        self.work: FloatingWorkspace = floating_workspace(model.n_joints)

    def wrench_array(self, wrenches: ArrayLike | None) -> FloatArray:
        """Validated (n+1, 6) wrench array (zeros when None), the layout of
        :func:`floating.floating_force_list`."""
        if wrenches is None:
            return self.no_wrench
        w = np.ascontiguousarray(wrenches, dtype=np.float64)
        n = self.model.n_joints
        if w.shape != (n + 1, 6) or not np.all(np.isfinite(w)):
            raise StateError(
                f"wrenches must be finite with shape ({n + 1}, 6), got shape {w.shape}"
            )
        return w

    def forward_dynamics(
        self,
        rotation0: FloatArray,
        q: FloatArray,
        nu: FloatArray,
        tau: FloatArray,
        wrenches: FloatArray | None = None,
    ) -> FloatArray:
        """nu_dot (eq. 227), unchecked contiguous float64 inputs: the hot path.

        Args:
            rotation0: R_0, shape (3, 3).
            q: joint angles [rad], shape (n,).
            nu: [v_0 (tail frame) m/s; w_0 (tail frame) rad/s; q_dot rad/s], shape (6+n,).
            tau: joint torques [N m], shape (n,).
            wrenches: external [force (inertial) N; moment about the CM (body frame) N m]
                per body, tail first, shape (n+1, 6), or None.

        Returns:
            [v_0' (tail frame) m/s^2; w_0' rad/s^2; q_ddot rad/s^2], shape (6+n,).
        """
        out = np.empty(nu.shape[0])
        w = self.no_wrench if wrenches is None else wrenches
        _aba_floating(self.params, rotation0, q, nu, tau, w, self.work, out)
        return out

    def prescribed(
        self,
        rotation0: FloatArray,
        q: FloatArray,
        nu: FloatArray,
        qdd: FloatArray,
        wrenches: FloatArray | None = None,
    ) -> tuple[FloatArray, FloatArray]:
        """Base acceleration [v_0'; w_0'] (tail frame) [m/s^2, rad/s^2], shape (6,), and
        joint torques [N m], shape (n,), of prescribed joints (eq. 228); unchecked inputs
        as :meth:`forward_dynamics`, qdd [rad/s^2] shape (n,)."""
        accel, tau = np.empty(6), np.empty(q.shape[0])
        w = self.no_wrench if wrenches is None else wrenches
        _prescribed(self.params, rotation0, q, nu, qdd, w, self.work, accel, tau)
        return accel, tau

    def prescribed_on_ground(
        self, rotation0: FloatArray, position0: FloatArray, q: FloatArray, nu: FloatArray,
        qdd: FloatArray,
    ) -> tuple[FloatArray, FloatArray]:  # fmt: skip
        """:meth:`prescribed` under this model's ground (eqs. 228, 231-236): what one RK4
        stage of :func:`simulate_prescribed_fast` evaluates. position0: x_0 [m], (3,)."""
        accel, tau = np.empty(6), np.empty(q.shape[0])
        _stage(self.params, self.ground, rotation0, position0, q, nu, qdd, self.work, accel, tau)
        return accel, tau

    def ground_force_list(
        self, rotation0: FloatArray, position0: FloatArray, q: FloatArray, nu: FloatArray
    ) -> FloatArray:
        """The ground's wrenches on every body (eqs. 231-236), (n+1, 6); unchecked inputs."""
        _chain(self.params, q, nu, self.work)
        _ground_on_chain(self.params, self.ground, rotation0, position0, nu, self.work)
        return self.work[18].copy()


def _checked(model: SnakeModel, rotation0: ArrayLike, q: ArrayLike, nu: ArrayLike) -> tuple[
    FloatArray, FloatArray, FloatArray
]:  # fmt: skip
    return (
        np.ascontiguousarray(checked_rotation(rotation0)),
        np.ascontiguousarray(joint_vector(model, q, "q")),
        np.ascontiguousarray(checked_nu(model, nu)),
    )


def floating_forward_dynamics(
    model: SnakeModel,
    rotation0: ArrayLike,
    q: ArrayLike,
    nu: ArrayLike,
    tau: ArrayLike,
    wrenches: ArrayLike | None = None,
) -> FloatArray:
    """nu_dot = M*⁻¹ (Bᵀ Q - N* nu) (eq. 227) by the floating-base articulated-body
    recursion, O(n); equals :func:`floating.floating_forward_dynamics`.

    Args:
        model: the snake.
        rotation0: R_0, shape (3, 3).
        q: joint angles [rad], shape (n,).
        nu: [v_0 (tail frame) m/s; w_0 (tail frame) rad/s; q_dot rad/s], shape (6+n,).
        tau: joint torques [N m], shape (n,).
        wrenches: external [force (inertial) N; moment about the CM (body frame) N m] per
            body, tail first, shape (n+1, 6), or None.

    Returns:
        [v_0' (tail frame) m/s^2; w_0' rad/s^2; q_ddot rad/s^2], shape (6+n,).
    """
    fm = FastFloatingModel(model)
    r0, q_arr, nu_arr = _checked(model, rotation0, q, nu)
    tau_arr = np.ascontiguousarray(joint_vector(model, tau, "tau"))
    return fm.forward_dynamics(r0, q_arr, nu_arr, tau_arr, fm.wrench_array(wrenches))


def prescribed_joint_dynamics(
    model: SnakeModel,
    rotation0: ArrayLike,
    q: ArrayLike,
    nu: ArrayLike,
    qdd: ArrayLike,
    wrenches: ArrayLike | None = None,
) -> tuple[FloatArray, FloatArray]:
    """The base's acceleration when the joints follow a prescribed motion, and the torques
    that make them (eq. 228), O(n); equals :func:`floating.prescribed_joint_dynamics`.

    Args:
        model: the snake.
        rotation0: R_0, shape (3, 3).
        q: joint angles [rad], shape (n,).
        nu: [v_0; w_0; q_dot], shape (6+n,).
        qdd: the joints' accelerations [rad/s^2], shape (n,).
        wrenches: external wrenches per body, see :func:`floating_forward_dynamics`.

    Returns:
        a = [v_0' m/s^2; w_0' rad/s^2] (tail frame), shape (6,), and tau [N m], shape (n,).
    """
    fm = FastFloatingModel(model)
    r0, q_arr, nu_arr = _checked(model, rotation0, q, nu)
    qdd_arr = np.ascontiguousarray(joint_vector(model, qdd, "qdd"))
    return fm.prescribed(r0, q_arr, nu_arr, qdd_arr, fm.wrench_array(wrenches))


def ground_force_list(model: SnakeModel, ground: Ground, state: FloatingState) -> FloatArray:
    """The ground's wrenches on every body at ``state`` (eqs. 231-236), shape (n+1, 6);
    equals :func:`floating.ground_force_list`."""
    fm = FastFloatingModel(model, ground)
    r0, q_arr, nu_arr = _checked(model, state.rotation, state.q, state.nu)
    position = np.ascontiguousarray(state.position, dtype=np.float64)
    return fm.ground_force_list(r0, position, q_arr, nu_arr)


def _sample_motion(
    motion: MotionFn, times: list[float], n: int
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """motion(t) at ``times`` into (len(times), n) arrays of q, q_dot, q_ddot.

    Raises:
        StateError: a sample that is not finite (the literal path's check of its stages).
    """
    qs, qds, qdds = (np.empty((len(times), n)) for _ in range(3))
    for row, t in enumerate(times):
        qs[row], qds[row], qdds[row] = motion(t)
    finite = np.isfinite(qs).all(axis=1) & np.isfinite(qds).all(axis=1)
    finite &= np.isfinite(qdds).all(axis=1)
    if not finite.all():
        t_bad = times[int(np.argmin(finite))]
        raise StateError(f"the motion is not finite at t = {t_bad:.6g} s (q, q_dot, q_ddot)")
    return qs, qds, qdds


def simulate_prescribed_fast(
    model: SnakeModel,
    motion: MotionFn,
    t_end: float,
    dt: float,
    start: FloatingState | None = None,
    every: int = 1,
    progress: Callable[[float], None] | None = None,
) -> FloatingRun:
    """:func:`floating.simulate_prescribed`, compiled: the base of a snake whose joints follow
    ``motion`` exactly (eq. 228), integrated by the quaternion RK4 (eq. 230) under gravity
    and the model's ground (if any, eqs. 231-236).

    The gait is sampled in Python at the stage times of a chunk of steps, then a compiled
    loop integrates the chunk. Same arguments, checks and results as the literal one.

    Args:
        model: the snake (its ``ground`` acts when not None).
        motion: the joints' (q, q_dot, q_ddot)(t) [rad, rad/s, rad/s^2].
        t_end: duration [s].
        dt: step [s].
        start: the initial pose (default: :func:`floating.rest_state`); the joints start at
            motion(0), the base with :func:`floating.momentum_free_base_velocity`.
        every: keep every ``every``-th step.
        progress: called with the fraction done (0..1) about a hundred times.

    Raises:
        SimulationError: ``dt`` over the ground's :func:`ground.stable_step` (eq. 237,
            :func:`floating.check_step`), or a state that left the finite numbers.
        StateError: a motion that is not finite at a stage time.

    Returns:
        The samples at t = 0, every dt, ..., t_end.
    """
    check_step(dt, model)
    n = model.n_joints
    fm = FastFloatingModel(model)
    state = rest_state(model) if start is None else start
    q0, qd0, _ = (np.asarray(x, dtype=float) for x in motion(0.0))
    base = momentum_free_base_velocity(model, state.rotation, q0, qd0)
    position = np.array(state.position, dtype=float)
    quaternion = np.array(state.quaternion, dtype=float)
    times, positions, quaternions = [0.0], [position], [quaternion]
    qs, nus, taus = [q0], [np.concatenate([base, qd0])], []
    steps = round(t_end / dt)
    report = max(1, steps // 100)
    for first in range(0, steps, CHUNK):
        m = min(CHUNK, steps - first)
        stage_times = [(first + j // 2) * dt + (dt / 2 if j % 2 else 0.0) for j in range(2 * m + 1)]
        s_q, s_qd, s_qdd = _sample_motion(motion, stage_times, n)
        out_pos, out_quat = np.empty((m, 3)), np.empty((m, 4))
        out_base, out_tau = np.empty((m, 6)), np.empty((m, n))
        rk4_prescribed_steps(
            fm.params, fm.ground, position, quaternion, base, s_q, s_qd, s_qdd, dt,
            out_pos, out_quat, out_base, out_tau,
        )  # fmt: skip
        finite = (
            np.isfinite(out_base).all(axis=1)
            & np.isfinite(s_qd[2::2]).all(axis=1)
            & np.isfinite(out_pos).all(axis=1)
        )
        done = m if finite.all() else int(np.argmin(finite))
        index = np.arange(first, first + done)
        kept = (index + 1) % every == 0
        starts = index % every == 0  # the torques at t_i = the samples' torques
        taus.extend(out_tau[:done][starts])
        times.extend(float((i + 1) * dt) for i in index[kept])
        positions.extend(out_pos[:done][kept])
        quaternions.extend(out_quat[:done][kept])
        qs.extend(s_q[2::2][:done][kept])
        nus.extend(np.concatenate([out_base[:done], s_qd[2::2][:done]], axis=1)[kept])
        if progress is not None:
            for i in index[(index + 1) % report == 0]:
                progress(float(i + 1) / steps)
        if done < m:
            raise SimulationError(
                f"the state left the finite numbers at t = {(first + done + 1) * dt:.6g} s: use "
                f"a smaller dt or a softer ground"
            )
        position, quaternion, base = out_pos[-1], out_quat[-1], out_base[-1]
    if steps % every == 0:  # the last sample's torques: no step starts there
        t_last = times[-1]
        _, _, qdd_last = motion(t_last)
        r0 = np.empty((3, 3))
        quaternion_matrix(quaternions[-1], r0)
        nu_last = np.ascontiguousarray(nus[-1])
        _, tau_last = fm.prescribed_on_ground(
            r0,
            np.ascontiguousarray(positions[-1]),
            np.ascontiguousarray(qs[-1]),
            nu_last,
            np.asarray(qdd_last, dtype=float),
        )
        taus.append(tau_last)
    pos_arr, quat_arr, q_arr = np.array(positions), np.array(quaternions), np.array(qs)
    com, heading = mass_centre_and_heading(
        fm.params, pos_arr, quat_arr, np.ascontiguousarray(q_arr)
    )
    return FloatingRun(
        np.array(times), pos_arr, quat_arr, q_arr, np.array(nus), com, heading, np.array(taus)
    )


class FastBaseTracker(BaseTracker):
    """:class:`floating.BaseTracker` on the compiled kernels: every step's Hermite joint
    motion (eq. 239) sampled at its three stage times at once (numpy), then one compiled RK4
    step per step (:func:`rk4_prescribed_steps`). What the dynamics node runs.

    Raises:
        SimulationError: a step the ground does not allow.
    """

    #: The Hermite basis (eq. 239) at the stage times s = 0, 1/2, 1 of a step.
    _STAGES = hermite_basis(np.array([0.0, 0.5, 1.0]))

    def __init__(self, model: SnakeModel, dt: float) -> None:
        super().__init__(model, dt)
        self._fast = FastFloatingModel(model)

    def _stages(self, qs: FloatArray, qds: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """q, q_dot, q_ddot at the three stage times of every step, shape (m, 3, n) each."""
        dt = self.dt
        q0 = np.vstack([self.state.q, qs[:-1]])[:, None, :]
        qd0 = np.vstack([self.state.nu[6:], qds[:-1]])[:, None, :]
        q1, qd1 = qs[:, None, :], qds[:, None, :]
        h, d, a = (x[:, None, :, None] for x in self._STAGES)
        q = h[0] * q0 + h[1] * dt * qd0 + h[2] * q1 + h[3] * dt * qd1
        qd = (d[0] * q0 + d[2] * q1) / dt + d[1] * qd0 + d[3] * qd1
        qdd = (a[0] * q0 + a[2] * q1) / dt**2 + (a[1] * qd0 + a[3] * qd1) / dt
        return np.ascontiguousarray(q), np.ascontiguousarray(qd), np.ascontiguousarray(qdd)

    def advance(self, t: float, qs: FloatArray, qds: FloatArray) -> FloatingState:
        """As :meth:`floating.BaseTracker.advance`, compiled."""
        qs, qds = np.asarray(qs, dtype=float), np.asarray(qds, dtype=float)
        m, n = qs.shape[0], self.model.n_joints
        if m == 0:
            return self.state
        s_q, s_qd, s_qdd = self._stages(qs, qds)
        out_pos, out_quat = np.empty((m, 3)), np.empty((m, 4))
        out_base, out_tau = np.empty((m, 6)), np.empty((m, n))
        position, quaternion = self.state.position, self.state.quaternion
        base = np.ascontiguousarray(self.state.nu[:6])
        params, ground = self._fast.params, self._fast.ground
        for i in range(m):
            rk4_prescribed_steps(
                params, ground, position, quaternion, base, s_q[i], s_qd[i], s_qdd[i], self.dt,
                out_pos[i : i + 1], out_quat[i : i + 1], out_base[i : i + 1], out_tau[i : i + 1],
            )  # fmt: skip
            position, quaternion, base = out_pos[i], out_quat[i], out_base[i]
        finite = np.isfinite(out_base).all(axis=1) & np.isfinite(out_pos).all(axis=1)
        done = m if finite.all() else int(np.argmin(finite))
        if done > 0:
            k = done - 1
            nu = np.concatenate([out_base[k], qds[k]])
            self.state = FloatingState(out_pos[k].copy(), out_quat[k].copy(), qs[k].copy(), nu)
        if done < m:
            raise SimulationError(
                f"the state left the finite numbers at t = {t + (done + 1) * self.dt:.6g} s: use "
                f"a smaller dt or a softer ground"
            )
        return self.state


def warm_up() -> None:
    """Compile this module's kernels now (seconds on the first use after an install, then
    loaded from numba's cache), not in the middle of a run: a short run on the ground and
    the checked dynamics."""
    model = SnakeModel.uniform(2, 0.3, 0.1, 0.02, gravity=(0.0, 0.0, -9.81), base="floating")
    model = replace(model, ground=Ground())
    still = np.zeros(2)
    simulate_prescribed_fast(model, lambda t: (still, still, still), 0.002, 0.001)
    nu = np.zeros(8)
    floating_forward_dynamics(model, np.eye(3), still, nu, still)
    ground_force_list(model, Ground(), rest_state(model))
