"""The base acceleration and joint torques of prescribed joints (eq. 228) by Newton-Euler
with the base acceleration unknown, O(n), free or on the ground (eqs. 231-236).

The kernels work in the tail's frame at the current instant, frozen, about the tail's CM,
with the spatial vectors of :mod:`snake_dynamics.mfm.spatial` (angular first); see
:mod:`snake_dynamics.floating.recursive` for the frame and the velocity convention.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from snake_dynamics.floating.workspace import (
    FloatingParams,
    FloatingWorkspace,
    body_forces,
    chain_twists,
    ground_on_chain,
    solve6,
)
from snake_dynamics.jit import compiled

FloatArray = NDArray[np.float64]


@compiled
def prescribed_dynamics(
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
    tau_k = S_kᵀ (F_k + IC_k a_0) + J_a,k qdd_k. The armature (eq. 471) turns with its joint
    alone, so it leaves the base's motion unchanged and adds its own torque only. Writes
    accel = [v_0'; w_0'] (tail frame) and tau.
    """
    chain_twists(params, q, nu, work)
    prescribed_at_chain(params, rotation0, nu, qdd, wrenches, work, accel, tau)


@compiled
def prescribed_at_chain(
    params: FloatingParams,
    rotation0: FloatArray,
    nu: FloatArray,
    qdd: FloatArray,
    wrenches: FloatArray,
    work: FloatingWorkspace,
    accel: FloatArray,
    tau: FloatArray,
) -> None:
    """:func:`prescribed_dynamics` at the state :func:`chain_twists` left in ``work``."""
    n = qdd.shape[0]
    body_forces(params, rotation0, nu, wrenches, work)
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
    solve6(root, p0, acc)
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
        tau[k] = total + params[7][k] * qdd[k]


@compiled
def prescribed_stage(
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
    chain_twists(params, q, nu, work)
    ground_on_chain(params, ground, rotation0, position0, nu, work)
    prescribed_at_chain(params, rotation0, nu, qdd, work[18], work, accel, tau)
