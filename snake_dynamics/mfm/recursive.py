"""The recursive, compiled fixed-tail MFM: the quantities of :mod:`.kinetics`, in O(n) or O(n^2).

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

Each joint's armature J_a (the servo rotor's inertia through its gears) adds to M*'s
diagonal (eq. 471): to M*_kk by composite bodies, J_a,k q_ddot_k to tau_k by Newton-Euler,
J_a,k to the articulated recursion's d_k, and J_a,k q_dot_k^2 / 2 to the kinetic energy.

All kernels are compiled with numba (``cache=True``: the first call in a fresh checkout
compiles for a few seconds, later processes load the cache).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from snake_dynamics.errors import StateError
from snake_dynamics.jit import compiled, inlined
from snake_dynamics.mfm.kinematics import joint_vector
from snake_dynamics.mfm.kinetics import body_wrenches
from snake_dynamics.mfm.spatial import (
    articulated_backward_pass,
    articulated_forward_pass,
    body_frames,
    dot6,
    external_forces,
    force_cross_inertia,
    velocities,
)
from snake_dynamics.model import SnakeModel

FloatArray = NDArray[np.float64]


@compiled
def _frames(
    axes: FloatArray, offsets: FloatArray, masses: FloatArray, inertias: FloatArray, q: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """:func:`body_frames` into new arrays: rot, pos, twists, M-blocks."""
    n = q.shape[0]
    rot, pos = np.empty((n + 1, 3, 3)), np.empty((n + 1, 3))
    twist, inert = np.empty((n, 6)), np.empty((n, 6, 6))
    body_frames(axes, offsets, masses, inertias, q, rot, pos, twist, inert)
    return rot, pos, twist, inert


@compiled
def _rnea(
    axes: FloatArray,
    offsets: FloatArray,
    masses: FloatArray,
    inertias: FloatArray,
    armature: FloatArray,
    gravity: FloatArray,
    q: FloatArray,
    qd: FloatArray,
    qdd: FloatArray,
    wrenches: FloatArray,
) -> FloatArray:
    """tau = M* qdd + N* qd - F*(tau=0) (M* with eq. 471's armature): recursive Newton-Euler
    on the MFM frames."""
    n = q.shape[0]
    rot, pos, s, inert = _frames(axes, offsets, masses, inertias, q)
    v, c, f = np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6))
    velocities(s, qd, v, c)
    external_forces(masses, gravity, rot, pos, wrenches, f)
    acc = np.zeros(6)
    gyro = np.empty(6)
    for k in range(n):
        for i in range(6):
            acc[i] += c[k, i] + s[k, i] * qdd[k]
        force_cross_inertia(v[k], inert[k], gyro)
        for i in range(6):
            ia = 0.0
            for j in range(6):
                ia += inert[k, i, j] * acc[j]
            f[k, i] = ia + gyro[i] - f[k, i]
    tau = np.empty(n)
    for k in range(n - 1, -1, -1):
        tau[k] = dot6(s[k], f[k]) + armature[k] * qdd[k]
        if k > 0:
            for i in range(6):
                f[k - 1, i] += f[k, i]
    return tau


@compiled
def _crba(
    axes: FloatArray,
    offsets: FloatArray,
    masses: FloatArray,
    inertias: FloatArray,
    armature: FloatArray,
    q: FloatArray,
) -> FloatArray:
    """M*_ij = S_iᵀ (sum_{b>=j} I_b) S_j (eq. 82 by composite bodies) + diag(J_a) (eq. 471)."""
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
            mstar[i, j] = dot6(s[i], fj)
            mstar[j, i] = mstar[i, j]
        mstar[j, j] += armature[j]
    return mstar


#: Scratch arrays of :func:`_aba` for n joints: views into one :func:`workspace` buffer.
AbaWorkspace = tuple[
    FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray,
    FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray,
]  # fmt: skip


@compiled
def workspace(n: int) -> FloatArray:
    """The scratch buffer of :func:`forward_dynamics_into` for n joints, 80 n + 60 floats
    (one per thread: the kernel writes it)."""
    return np.empty(80 * n + 60)


@compiled
def _workspace_views(buf: FloatArray, n: int) -> AbaWorkspace:
    """The arrays of :func:`_aba` as views into ``buf`` (:func:`workspace`), no copy."""
    if buf.size != 80 * n + 60:
        raise StateError("the workspace does not fit the model: make it with workspace(n)")
    r, a, v = 9 * (n + 1), 12 * (n + 1), 42 * n + 24  # ends of rot, pos, the rows of 6
    rows = buf[a:v].reshape((5 * n + 2, 6))  # S, v, c, p, U, two scratch vectors: one reshape
    o = v + 36 * n  # after the articulated inertias: d and u, then the root's 6x6
    return (
        buf[:r].reshape((n + 1, 3, 3)),  # rot
        buf[r:a].reshape((n + 1, 3)),  # pos
        rows[:n],  # twists S
        buf[v:o].reshape((n, 6, 6)),  # articulated inertias
        rows[n : 2 * n],  # v
        rows[2 * n : 3 * n],  # c
        rows[3 * n : 4 * n],  # bias forces
        rows[4 * n : 5 * n],  # U = IA S
        buf[o : o + n],  # d = Sᵀ U
        buf[o + n : o + 2 * n],  # u = tau - Sᵀ p
        rows[5 * n],  # scratch spatial vector
        buf[o + 2 * n : o + 2 * n + 36].reshape((6, 6)),  # handed to the (fixed) root: ignored
        rows[5 * n + 1],
    )


@compiled
def aba_workspace(n: int) -> AbaWorkspace:
    """Scratch arrays for :func:`_aba` (allocated once per run, not per call)."""
    return _workspace_views(workspace(n), n)


@inlined
def _aba_frames(
    axes: FloatArray,
    offsets: FloatArray,
    masses: FloatArray,
    inertias: FloatArray,
    q: FloatArray,
    qd: FloatArray,
    work: AbaWorkspace,
) -> None:
    """:func:`_aba`'s first part: the frames, twists and M-blocks of q and the velocities of
    q_dot, into ``work``."""
    rot, pos, s, art, v, c = work[0], work[1], work[2], work[3], work[4], work[5]
    body_frames(axes, offsets, masses, inertias, q, rot, pos, s, art)
    velocities(s, qd, v, c)


@inlined
def _aba_passes(
    masses: FloatArray,
    armature: FloatArray,
    gravity: FloatArray,
    tau: FloatArray,
    wrenches: FloatArray,
    work: AbaWorkspace,
    qdd: FloatArray,
) -> None:
    """:func:`_aba`'s second part, on the frames in ``work``: the bias forces, the backward
    and the forward pass (the M-blocks become articulated inertias; ``armature`` (n,) adds to
    each d_k, eq. 471)."""
    rot, pos, s, art, v, c, bias, u_vec, d, u, gyro, root_art, root_bias = work
    external_forces(masses, gravity, rot, pos, wrenches, bias)
    for k in range(qdd.shape[0]):
        force_cross_inertia(v[k], art[k], gyro)
        for i in range(6):
            bias[k, i] = gyro[i] - bias[k, i]
    articulated_backward_pass(art, s, bias, c, tau, armature, u_vec, d, u, root_art, root_bias)
    gyro[:] = 0.0  # reused: the spatial acceleration, zero at the inertial base
    articulated_forward_pass(s, c, u_vec, d, u, gyro, qdd)


@compiled
def _aba(
    axes: FloatArray,
    offsets: FloatArray,
    masses: FloatArray,
    inertias: FloatArray,
    armature: FloatArray,
    gravity: FloatArray,
    q: FloatArray,
    qd: FloatArray,
    tau: FloatArray,
    wrenches: FloatArray,
    work: AbaWorkspace,
    qdd: FloatArray,
) -> None:
    """qdd = q_ddot of eq. (84) (M* with eq. 471's armature) by the articulated-body recursion
    on the MFM frames, O(n)."""
    _aba_frames(axes, offsets, masses, inertias, q, qd, work)
    _aba_passes(masses, armature, gravity, tau, wrenches, work, qdd)


@compiled
def _energy_sums(
    masses: FloatArray,
    armature: FloatArray,
    gravity: FloatArray,
    pos: FloatArray,
    inert: FloatArray,
    v: FloatArray,
    qd: FloatArray,
) -> tuple[float, float]:
    """Kinetic 1/2 (sum v_bᵀ I_b v_b + sum J_a,k qd_k^2) (eqs. 65, 471) and potential
    -sum m_b g.r_b [J] of a state's frames (:func:`body_frames`' positions and M-blocks,
    :func:`velocities`' twists)."""
    kinetic = potential = 0.0  # sums in locals: one through an array is not vectorised
    for k in range(v.shape[0]):
        kinetic += armature[k] * qd[k] * qd[k]
        blk, vk = inert[k], v[k]
        for i in range(6):
            kinetic += vk[i] * (
                blk[i, 0] * vk[0]
                + blk[i, 1] * vk[1]
                + blk[i, 2] * vk[2]
                + blk[i, 3] * vk[3]
                + blk[i, 4] * vk[4]
                + blk[i, 5] * vk[5]
            )
        for i in range(3):
            potential -= masses[k + 1] * gravity[i] * pos[k + 1, i]
    return 0.5 * kinetic, potential


@compiled
def _energies(
    axes: FloatArray,
    offsets: FloatArray,
    masses: FloatArray,
    inertias: FloatArray,
    armature: FloatArray,
    gravity: FloatArray,
    qs: FloatArray,
    qds: FloatArray,
) -> FloatArray:
    """Per sample: kinetic (eq. 65) and potential energy [J] (:func:`_energy_sums`)."""
    n = qs.shape[1]
    out = np.empty((qs.shape[0], 2))
    rot, pos = np.empty((n + 1, 3, 3)), np.empty((n + 1, 3))
    s, inert, v, c = np.empty((n, 6)), np.empty((n, 6, 6)), np.empty((n, 6)), np.empty((n, 6))
    for row in range(qs.shape[0]):
        body_frames(axes, offsets, masses, inertias, qs[row], rot, pos, s, inert)
        velocities(s, qds[row], v, c)
        out[row, 0], out[row, 1] = _energy_sums(masses, armature, gravity, pos, inert, v, qds[row])
    return out


#: The model arrays the kernels take: (axes, offsets, masses, inertias, armature, gravity,
#: no_wrench).
Params = tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]


@compiled
def model_views(packed: FloatArray) -> Params:
    """The model arrays of :attr:`FastModel.packed` (23 n + 16 floats) as views, no copy."""
    n = (packed.size - 16) // 23
    if n < 1 or packed.size != 23 * n + 16:
        raise StateError("not a packed model: pass FastModel(model).packed")
    m, i, g = 6 * n + 3, 7 * n + 4, 16 * n + 13  # ends of offsets, masses, inertias
    return (
        packed[: 3 * n].reshape((n, 3)),  # axes
        packed[3 * n : m].reshape((n + 1, 3)),  # offsets
        packed[m:i],  # masses
        packed[i:g].reshape((n + 1, 3, 3)),  # inertias
        packed[g + 3 : g + 3 + n],  # armature
        packed[g : g + 3],  # gravity
        packed[g + 3 + n :].reshape((n, 6)),  # no wrench: zeros
    )


@compiled
def forward_dynamics_into(
    packed: FloatArray,
    work: FloatArray,
    q: FloatArray,
    qd: FloatArray,
    tau: FloatArray,
    qdd: FloatArray,
) -> None:
    """qdd = q_ddot of eq. (84), no wrenches, into preallocated arrays: the compiled entry.

    No allocation and one call from Python (like ``pin.aba(model, data, q, v, tau)``): for
    a caller's own loop. :meth:`FastModel.forward_dynamics` is the allocating form.

    Args:
        packed: the model, :attr:`FastModel.packed`.
        work: scratch, :func:`workspace` (n) (one per thread).
        q: joint angles [rad], shape (n,).
        qd: joint rates [rad/s], shape (n,).
        tau: joint torques [N m], shape (n,).
        qdd: out: joint accelerations [rad/s^2], shape (n,).

    Raises:
        StateError: arrays whose sizes do not fit the model.
    """
    axes, offsets, masses, inertias, armature, gravity, no_wrench = model_views(packed)
    n = axes.shape[0]
    if q.size != n or qd.size != n or tau.size != n or qdd.size != n:
        raise StateError("q, qd, tau and qdd must each hold one float per joint of the model")
    work_views = _workspace_views(work, n)
    _aba(axes, offsets, masses, inertias, armature, gravity, q, qd, tau, no_wrench, work_views, qdd)


@compiled
def _forward_dynamics(
    axes: FloatArray,
    offsets: FloatArray,
    masses: FloatArray,
    inertias: FloatArray,
    armature: FloatArray,
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
        armature,
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
def servo_torque_into(
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
    servo_torque_into(servo, u, q, qd, out)
    return out


@compiled
def servo_torques(servo: FloatArray, us: FloatArray, qs: FloatArray, qds: FloatArray) -> FloatArray:
    """:func:`servo_torque` at every sample: inputs (N, 3n), states (N, n) -> torques (N, n)."""
    out = np.empty(qs.shape)
    for i in range(qs.shape[0]):
        servo_torque_into(servo, us[i], qs[i], qds[i], out[i])
    return out


@compiled
def inverse_dynamics_rows(
    params: Params, qs: FloatArray, qds: FloatArray, qdds: FloatArray
) -> FloatArray:
    """tau of eq. (81) at every sample, no wrenches: states (m, n) each -> torques (m, n)
    [N m] (:func:`_rnea` row by row, one call from Python)."""
    axes, offsets, masses, inertias, armature, gravity, no_wrench = params
    out = np.empty(qs.shape)
    for i in range(qs.shape[0]):
        out[i] = _rnea(
            axes, offsets, masses, inertias, armature, gravity, qs[i], qds[i], qdds[i], no_wrench
        )
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
    energy: FloatArray,
) -> None:
    """qdd = q_ddot (eq. 84) under :func:`servo_torque` with input u (:func:`_aba`);
    ``tau``: scratch (n,); ``energy`` of size 2 (else empty: not computed) gets the state's
    :func:`_energy_sums` from the same frames."""
    (axes, offsets, masses, inertias, armature, gravity, no_wrench), servo = params
    servo_torque_into(servo, u, q, qd, tau)
    _aba_frames(axes, offsets, masses, inertias, q, qd, work)
    if energy.size == 2:  # before the backward pass turns the M-blocks into articulated ones
        energy[0], energy[1] = _energy_sums(
            masses, armature, gravity, work[1], work[3], work[4], qd
        )
    _aba_passes(masses, armature, gravity, tau, no_wrench, work, qdd)


@compiled
def servo_accel_kernel(
    params: ServoParams, q: FloatArray, qd: FloatArray, u: FloatArray
) -> FloatArray:
    """q_ddot (eq. 84) under :func:`servo_torque` with input u = [tau_ff; q_ref; q_dot_ref]."""
    n = q.shape[0]
    qdd = np.empty(n)
    _servo_accel(params, q, qd, u, aba_workspace(n), np.empty(n), qdd, qdd[:0])
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
    energies: FloatArray,
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
        energies: out: kinetic (eq. 65) and potential energy at the start of each step [J],
            from the first stage's frames, shape (m, 2); or shape (0, 2): not computed.

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
        energy = energies[i] if energies.shape[0] else a1[:0]
        _servo_accel(params, q, qd, u0, work, tau, a1, energy)
        for k in range(n):
            v2[k] = qd[k] + half * a1[k]
            q_stage[k] = q[k] + half * qd[k]
        _servo_accel(params, q_stage, v2, u_half, work, tau, a2, a2[:0])
        for k in range(n):
            v3[k] = qd[k] + half * a2[k]
            q_stage[k] = q[k] + half * v2[k]
        _servo_accel(params, q_stage, v3, u_half, work, tau, a3, a3[:0])
        for k in range(n):
            v4[k] = qd[k] + dt * a3[k]
            q_stage[k] = q[k] + dt * v3[k]
        _servo_accel(params, q_stage, v4, u1, work, tau, a4, a4[:0])
        for k in range(n):
            q[k] += sixth * (qd[k] + 2.0 * v2[k] + 2.0 * v3[k] + v4[k])
            qd[k] += sixth * (a1[k] + 2.0 * a2[k] + 2.0 * a3[k] + a4[k])
            qs[i, k], qds[i, k], qdds[i, k] = q[k], qd[k], a1[k]


# --------------------------------------------------------------------------- public API
class FastModel:
    """A :class:`SnakeModel` packed as contiguous arrays for the compiled kernels."""

    __slots__ = (
        "armature", "axes", "gravity", "inertias", "kernel_model", "masses", "model", "no_wrench",
        "offsets", "packed", "params",
    )  # fmt: skip

    def __init__(self, model: SnakeModel) -> None:
        self.model = model
        #: the model as one array (:func:`model_views`), for :func:`forward_dynamics_into`
        self.packed = np.concatenate(
            [
                np.ravel(np.asarray(a, dtype=np.float64))
                for a in (model.axes, model.offsets, model.masses, model.inertias, model.gravity)
            ]
            + [np.asarray(model.armature, dtype=np.float64), np.zeros(6 * model.n_joints)]
        )
        self.params: Params = model_views(self.packed)
        (
            self.axes, self.offsets, self.masses, self.inertias, self.armature, self.gravity,
            self.no_wrench,
        ) = self.params  # fmt: skip
        #: the model arguments :func:`_aba`'s and :func:`_rnea`'s entries take first: (axes,
        #: offsets, masses, inertias, armature, gravity)
        self.kernel_model = self.params[:6]

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
        return _forward_dynamics(*self.kernel_model, q, qd, tau, w)

    def inverse_dynamics(
        self, q: FloatArray, qd: FloatArray, qdd: FloatArray, wrenches: FloatArray | None = None
    ) -> FloatArray:
        """tau for q_ddot (eq. 81), unchecked float64 inputs of shape (n,)."""
        w = self.no_wrench if wrenches is None else wrenches
        return _rnea(*self.kernel_model, q, qd, qdd, w)


def _state(model: SnakeModel, values: ArrayLike, name: str) -> FloatArray:
    return np.ascontiguousarray(joint_vector(model, values, name))


def mass_matrix(model: SnakeModel, q: ArrayLike) -> FloatArray:
    """M* (eqs. 82, 471) by composite bodies, O(n^2); equals :func:`kinetics.mass_matrix`."""
    p = FastModel(model)
    return _crba(p.axes, p.offsets, p.masses, p.inertias, p.armature, _state(model, q, "q"))


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
        p.armature,
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
    passive = _rnea(*p.kernel_model, _state(model, q, "q"), zero, zero, p.wrench_array(wrenches))
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
    return _energies(*p.kernel_model, qs, qds)
