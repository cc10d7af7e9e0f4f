"""The quaternion RK4 of the floating base under prescribed joints (eqs. 228, 230),
compiled: the quaternion's rate and the steps over a chunk of stage samples.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from snake_dynamics.floating.prescribed import (
    prescribed_stage,
)
from snake_dynamics.floating.workspace import (
    FloatingParams,
    floating_workspace,
    quaternion_matrix,
)
from snake_dynamics.jit import compiled

FloatArray = NDArray[np.float64]


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
            prescribed_stage(
                params, ground, rotation, s_pos, qs[row], nu, qdds[row], work, accel, tau
            )
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
