"""nu_dot of the floating-base snake (eq. 227) by the articulated-body recursion with the
tail as a 6-DOF root, O(n), free or on its ground (eqs. 231-236, 240).

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
    articulated_backward_pass,
    articulated_forward_pass,
    body_forces,
    chain_twists,
    ground_on_chain,
    solve6,
)
from snake_dynamics.jit import compiled, inlined

FloatArray = NDArray[np.float64]


@compiled
def aba_floating(
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

    The backward pass of the fixed tail (:func:`.articulated_backward_pass`, each joint's d_k
    with its armature, eq. 471), body 1 handing its articulated inertia and bias to the root;
    the root's spatial acceleration [w_0'; v_0'] solves IA_0 a_0 = -p_0 (6x6); the forward
    pass starts from a_0. Writes nu_dot = [v_0'; w_0'; q_ddot].
    """
    chain_twists(params, q, nu, work)
    aba_at_chain(params, rotation0, nu, tau, wrenches, work, nu_dot)


@inlined
def aba_at_chain(
    params: FloatingParams,
    rotation0: FloatArray,
    nu: FloatArray,
    tau: FloatArray,
    wrenches: FloatArray,
    work: FloatingWorkspace,
    nu_dot: FloatArray,
) -> None:
    """:func:`aba_floating` at the state :func:`chain_twists` left in ``work``."""
    body_forces(params, rotation0, nu, wrenches, work)
    s, art, c, bias, u_vec, d, u = work[2], work[3], work[5], work[6], work[7], work[8], work[9]
    root, p0, acc = work[10], work[11], work[12]
    articulated_backward_pass(art, s, bias, c, tau, params[7], u_vec, d, u, root, p0)
    for i in range(6):
        p0[i] = -p0[i]
    solve6(root, p0, acc)
    nu_dot[0], nu_dot[1], nu_dot[2] = acc[3], acc[4], acc[5]
    nu_dot[3], nu_dot[4], nu_dot[5] = acc[0], acc[1], acc[2]
    articulated_forward_pass(s, c, u_vec, d, u, acc, nu_dot[6:])


@inlined
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
    chain_twists(params, q, nu, work)
    ground_on_chain(params, ground, rotation0, position0, nu, work)
    aba_at_chain(params, rotation0, nu, tau, work[18], work, nu_dot)
