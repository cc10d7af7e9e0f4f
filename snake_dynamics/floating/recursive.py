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

The kernels live by algorithm beside this module: :mod:`.workspace` (packing, scratch arrays,
the chain), :mod:`.aba` (eq. 227), :mod:`.prescribed` (eq. 228), :mod:`.rk4` (eq. 230),
:mod:`.poses` (eq. 221), :mod:`.tracker` (the base tracker, eq. 239); this module packs a
model for them (:class:`FastFloatingModel`) and holds the checked public wrappers. They are
compiled with numba (``cache=True``, :mod:`snake_dynamics.jit`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from snake_dynamics.errors import SimulationError, StateError
from snake_dynamics.floating.aba import aba_floating
from snake_dynamics.floating.literal import (
    momentum_free_base_velocity,
)
from snake_dynamics.floating.poses import mass_centre_and_heading
from snake_dynamics.floating.prescribed import (
    prescribed_dynamics,
    prescribed_stage,
)
from snake_dynamics.floating.rk4 import rk4_prescribed_steps
from snake_dynamics.floating.state import (
    FloatingRun,
    FloatingState,
    MotionFn,
    check_step,
    checked_nu,
    checked_rotation,
    rest_state,
)
from snake_dynamics.floating.workspace import (
    FloatingParams,
    FloatingWorkspace,
    chain_twists,
    floating_workspace,
    ground_on_chain,
    quaternion_matrix,
)
from snake_dynamics.ground import Ground
from snake_dynamics.ground.kernel import ground_parameters
from snake_dynamics.mfm import joint_vector
from snake_dynamics.model import SnakeModel

FloatArray = NDArray[np.float64]


#: Steps per compiled chunk of :func:`simulate_prescribed_fast`.
CHUNK = 512


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
            packed(model.armature),
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
        aba_floating(self.params, rotation0, q, nu, tau, w, self.work, out)
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
        prescribed_dynamics(self.params, rotation0, q, nu, qdd, w, self.work, accel, tau)
        return accel, tau

    def prescribed_on_ground(
        self, rotation0: FloatArray, position0: FloatArray, q: FloatArray, nu: FloatArray,
        qdd: FloatArray,
    ) -> tuple[FloatArray, FloatArray]:  # fmt: skip
        """:meth:`prescribed` under this model's ground (eqs. 228, 231-236): what one RK4
        stage of :func:`simulate_prescribed_fast` evaluates. position0: x_0 [m], (3,)."""
        accel, tau = np.empty(6), np.empty(q.shape[0])
        prescribed_stage(
            self.params, self.ground, rotation0, position0, q, nu, qdd, self.work, accel, tau
        )
        return accel, tau

    def ground_force_list(
        self, rotation0: FloatArray, position0: FloatArray, q: FloatArray, nu: FloatArray
    ) -> FloatArray:
        """The ground's wrenches on every body (eqs. 231-236), (n+1, 6); unchecked inputs."""
        chain_twists(self.params, q, nu, self.work)
        ground_on_chain(self.params, self.ground, rotation0, position0, nu, self.work)
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
