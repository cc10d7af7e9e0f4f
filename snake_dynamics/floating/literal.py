"""The MFM with a floating base: the tail gets 6 DOF (docs/mfm.md, "The floating base",
eqs. 221-230). Literal form, as :mod:`snake_dynamics.mfm.kinetics` for the fixed tail.

The base pose is (x_0, R_0) in the inertial frame; the generalised velocity is
nu = [v_0; w_0; q_dot], with the tail's CM velocity v_0 and angular velocity w_0 both in
the tail's body frame (so x_0' = R_0 v_0, R_0' = R_0 hat(w_0)). B now maps nu to the
Cartesian velocities of all n+1 bodies, the tail included, and M*, N* and F* follow from
it exactly as in eqs. (81)-(84). The base orientation is integrated as a unit quaternion
with classical RK4 and renormalised after each step (:func:`rk4_floating_step`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike, NDArray
from scipy.spatial.transform import Rotation

from snake_dynamics.errors import SimulationError, StateError
from snake_dynamics.floating.state import (
    FloatingRun,
    FloatingState,
    MotionFn,
    centre_of_mass,
    check_step,
    checked_nu,
    checked_rotation,
    heading,
    lying_state,
    rest_state,
    world_poses,
)
from snake_dynamics.ground import Ground, ground_wrenches
from snake_dynamics.mfm import (
    FrameKinematics,
    b_matrix,
    b_matrix_dot,
    frame_kinematics,
    hat,
    joint_vector,
)
from snake_dynamics.model import SnakeModel

FloatArray = NDArray[np.float64]


class FloatingTerms(NamedTuple):
    """Everything eq. (227) needs at one state, from one pass of the kinematics.

    Attributes:
        b: the floating B (eq. 222), shape (6(n+1), 6+n).
        b_dot: B_dot along nu (eq. 223), same shape.
        m_star: M* = Bᵀ M B (eq. 224), shape (6+n, 6+n).
        x_dot: B nu per body [CM velocity (inertial); w^(b) (body)], shape (n+1, 6).
        bias: N* nu (eq. 225), shape (6+n,).
        kin: the chain's kinematics in the tail's frame (R_b^0, r_b^0, ...).
    """

    b: FloatArray
    b_dot: FloatArray
    m_star: FloatArray
    x_dot: FloatArray
    bias: FloatArray
    kin: FrameKinematics


def _base_frame_b(model: SnakeModel, kin: FrameKinematics, b_fixed: FloatArray) -> FloatArray:
    """B in the tail's frame, B_0(q), with B = P(R_0) B_0(q) (eq. 222).

    Block rows per body b = 0..n ([linear; angular], 6 each), block columns
    [v_0 | w_0 | q_dot]: body b's linear rows are [I, -hat(r_b^0), B_v^0(b, :)] and its
    angular rows [0, (R_b^0)ᵀ, B_w(b, :)], where r_b^0, R_b^0 are body b's CM and
    orientation in the tail's frame and B_v^0, B_w the fixed-tail blocks (eq. 56). The
    tail's own rows are [I, 0, 0] and [0, I, 0].
    """
    n = model.n_joints
    out = np.zeros((n + 1, 6, 6 + n))
    out[:, :3, :3] = np.eye(3)
    out[:, :3, 3:6] = -hat(kin.centres)
    out[:, 3:, 3:6] = kin.rotations.transpose(0, 2, 1)
    out[1:, :, 6:] = b_fixed.reshape(n, 6, n)
    return out.reshape(6 * (n + 1), 6 + n)


def _rotate_linear_rows(rotation0: FloatArray, b: FloatArray) -> FloatArray:
    """P(R_0) B: the linear rows of every body rotated into the inertial frame (eq. 222)."""
    blocks = b.reshape(-1, 6, b.shape[1]).copy()
    blocks[:, :3, :] = np.einsum("ij,bjk->bik", rotation0, blocks[:, :3, :])
    return blocks.reshape(b.shape)


def floating_terms(
    model: SnakeModel, rotation0: ArrayLike, q: ArrayLike, nu: ArrayLike
) -> FloatingTerms:
    """B, B_dot, M*, X_dot and N* nu at one state (eqs. 222-225).

    B_dot = P' B_0 + P B_0' (eq. 223), with P' the linear rows' R_0 hat(w_0) and
    B_0' = [0, -hat(r_b^0'), B_v^0'] (linear), [0, -hat(w_b^0) (R_b^0)ᵀ, B_w'] (angular),
    where r_b^0' and w_b^0 (body b's frame) are the fixed-tail velocities B q_dot and the
    joint columns' rate is the fixed-tail B_dot (docs/mfm.md, "Time derivative of B").
    N* nu = Bᵀ (M B_dot nu + D M B nu), D = blockdiag(0, hat(w^(b))) over all bodies: per
    body, D M X_dot = [0; w^(b) x J_b w^(b)].

    Args:
        model: the snake.
        rotation0: R_0, shape (3, 3).
        q: joint angles [rad], shape (n,).
        nu: [v_0; w_0; q_dot], shape (6+n,).
    """
    r0 = checked_rotation(rotation0)
    nu = checked_nu(model, nu)
    n = model.n_joints
    qd = nu[6:]
    kin = frame_kinematics(model, q)
    b_fixed = b_matrix(model, q, kin)
    b0 = _base_frame_b(model, kin, b_fixed)
    b = _rotate_linear_rows(r0, b0)
    relative = (b_fixed @ qd).reshape(n, 6)  # fixed-tail [r_b^0'; w_b^0]
    b0_dot = np.zeros((n + 1, 6, 6 + n))
    b0_dot[1:, :3, 3:6] = -hat(relative[:, :3])
    b0_dot[1:, 3:, 3:6] = -hat(relative[:, 3:]) @ kin.rotations[1:].transpose(0, 2, 1)
    b0_dot[1:, :, 6:] = b_matrix_dot(model, q, qd, kin).reshape(n, 6, n)
    b_dot = _rotate_linear_rows(r0, b0_dot.reshape(b0.shape))
    b_dot.reshape(n + 1, 6, -1)[:, :3] += np.einsum(
        "ij,bjk->bik", r0 @ hat(nu[3:6]), b0.reshape(n + 1, 6, -1)[:, :3]
    )
    m = model.full_block_mass_matrix
    x_dot = (b @ nu).reshape(n + 1, 6)
    gyro = np.zeros((n + 1, 6))
    spin = np.einsum("bij,bj->bi", model.inertias, x_dot[:, 3:])
    gyro[:, 3:] = np.cross(x_dot[:, 3:], spin)
    bias = b.T @ (m @ (b_dot @ nu) + gyro.reshape(-1))
    return FloatingTerms(b, b_dot, model.with_armature(b.T @ m @ b), x_dot, bias, kin)


def floating_b_matrix(model: SnakeModel, rotation0: ArrayLike, q: ArrayLike) -> FloatArray:
    """B with X_dot = B nu over all n+1 bodies (eqs. 221, 222); it does not depend on x_0.

    Args:
        model: the snake.
        rotation0: R_0, shape (3, 3).
        q: joint angles [rad], shape (n,).

    Returns:
        B, shape (6(n+1), 6+n).
    """
    kin = frame_kinematics(model, q)
    return _rotate_linear_rows(
        checked_rotation(rotation0), _base_frame_b(model, kin, b_matrix(model, q, kin))
    )


def floating_mass_matrix(model: SnakeModel, rotation0: ArrayLike, q: ArrayLike) -> FloatArray:
    """M* = Bᵀ M B with the floating B (eq. 224), plus the joints' armature (eq. 471), shape
    (6+n, 6+n); R_0 drops out (the linear rows are rotated by an orthogonal R_0, so
    M* = B_0ᵀ M B_0)."""
    b = floating_b_matrix(model, rotation0, q)
    return model.with_armature(b.T @ model.full_block_mass_matrix @ b)


def body_velocities(
    model: SnakeModel, rotation0: ArrayLike, q: ArrayLike, nu: ArrayLike
) -> FloatArray:
    """X_dot = B nu per body: [CM velocity (inertial) m/s; w^(b) (body frame) rad/s], (n+1, 6)."""
    b = floating_b_matrix(model, rotation0, q)
    return (b @ checked_nu(model, nu)).reshape(model.n_joints + 1, 6)


def floating_force_list(
    model: SnakeModel, tau: ArrayLike, wrenches: ArrayLike | None = None
) -> FloatArray:
    """Q over all bodies (eq. 226): body b gets [m_b g + F_ext; tau_b a_b - tau_{b+1} a_{b+1}
    + M_ext] with tau_0 = tau_{n+1} = 0: the tail now carries the reaction -tau_1 a_1.

    Args:
        model: the snake.
        tau: joint torques [N m], shape (n,).
        wrenches: external [force (inertial) N; moment (body frame) N m] per body, tail
            first, shape (n+1, 6), or None.

    Returns:
        Q, shape (6(n+1),).
    """
    tau = joint_vector(model, tau, "tau")
    n = model.n_joints
    w = np.zeros((n + 1, 6)) if wrenches is None else np.asarray(wrenches, dtype=float)
    if w.shape != (n + 1, 6) or not np.all(np.isfinite(w)):
        raise StateError(f"wrenches must be finite with shape ({n + 1}, 6), got shape {w.shape}")
    moments = np.zeros((n + 1, 3))
    moments[1:] += tau[:, None] * model.axes
    moments[:-1] -= tau[:, None] * model.axes
    out = np.empty((n + 1, 6))
    out[:, :3] = model.masses[:, None] * model.gravity[None, :] + w[:, :3]
    out[:, 3:] = moments + w[:, 3:]
    return out.reshape(-1)


def floating_forward_dynamics(
    model: SnakeModel,
    rotation0: ArrayLike,
    q: ArrayLike,
    nu: ArrayLike,
    tau: ArrayLike,
    wrenches: ArrayLike | None = None,
    terms: FloatingTerms | None = None,
) -> FloatArray:
    """nu_dot = M*^{-1} (Bᵀ Q - N* nu) (eq. 227).

    Args:
        model: the snake.
        rotation0: R_0, shape (3, 3).
        q: joint angles [rad], shape (n,).
        nu: [v_0; w_0; q_dot], shape (6+n,).
        tau: joint torques [N m], shape (n,).
        wrenches: external wrenches per body, see :func:`floating_force_list`.
        terms: :func:`floating_terms` of this state, if the caller has them already.

    Returns:
        [v_0' (tail frame); w_0'; q_ddot], shape (6+n,).
    """
    terms = floating_terms(model, rotation0, q, nu) if terms is None else terms
    rhs = terms.b.T @ floating_force_list(model, tau, wrenches) - terms.bias
    return np.asarray(scipy.linalg.cho_solve(scipy.linalg.cho_factor(terms.m_star), rhs))


def prescribed_joint_dynamics(
    model: SnakeModel,
    rotation0: ArrayLike,
    q: ArrayLike,
    nu: ArrayLike,
    qdd: ArrayLike,
    wrenches: ArrayLike | None = None,
    terms: FloatingTerms | None = None,
) -> tuple[FloatArray, FloatArray]:
    """The base's acceleration when the joints follow a prescribed motion, and the torques
    that make them (eq. 228): with M* split into base (b) and joint (j) blocks,
    M*_bb a = (F*(0) - N* nu)_b - M*_bj q_ddot, tau = M*_jb a + M*_jj q_ddot - (F*(0) - N* nu)_j.

    Args:
        model: the snake.
        rotation0: R_0, shape (3, 3).
        q: joint angles [rad], shape (n,).
        nu: [v_0; w_0; q_dot], shape (6+n,).
        qdd: the joints' accelerations [rad/s^2], shape (n,).
        wrenches: external wrenches per body, see :func:`floating_force_list`.
        terms: :func:`floating_terms` of this state, if the caller has them already.

    Returns:
        a = [v_0'; w_0'] (tail frame), shape (6,), and tau [N m], shape (n,).
    """
    qdd = joint_vector(model, qdd, "qdd")
    terms = floating_terms(model, rotation0, q, nu) if terms is None else terms
    m_star = terms.m_star
    free = terms.b.T @ floating_force_list(model, np.zeros(model.n_joints), wrenches)
    free = free - terms.bias
    a: FloatArray = np.asarray(
        np.linalg.solve(m_star[:6, :6], free[:6] - m_star[:6, 6:] @ qdd), dtype=float
    )
    tau: FloatArray = m_star[6:, :6] @ a + m_star[6:, 6:] @ qdd - free[6:]
    return a, tau


def momentum(model: SnakeModel, state: FloatingState) -> tuple[FloatArray, FloatArray]:
    """Linear momentum and angular momentum about the inertial origin, both in the
    inertial frame (eq. 229): p = sum m_b r_b', L = sum (r_b x m_b r_b' + R_b J_b w^(b)).

    Returns:
        p [kg m/s] and L [kg m^2/s], shape (3,) each.
    """
    rotations, centres = world_poses(model, state)
    x_dot = body_velocities(model, state.rotation, state.q, state.nu)
    linear = model.masses[:, None] * x_dot[:, :3]
    spin = np.einsum("bij,bjk,bk->bi", rotations, model.inertias, x_dot[:, 3:])
    return linear.sum(axis=0), (np.cross(centres, linear) + spin).sum(axis=0)


def floating_energy(model: SnakeModel, state: FloatingState) -> float:
    """K + V = 1/2 nuᵀ M* nu - sum m_b g . r_b over all bodies [J] (eqs. 65, 229)."""
    _, centres = world_poses(model, state)
    m_star = floating_mass_matrix(model, state.rotation, state.q)
    return float(
        0.5 * state.nu @ m_star @ state.nu - np.sum(model.masses * (centres @ model.gravity))
    )


def ground_force_list(
    model: SnakeModel, ground: Ground, state: FloatingState, terms: FloatingTerms | None = None
) -> FloatArray:
    """The ground's wrenches on every body at ``state`` (eqs. 231-236), shape (n+1, 6).

    Args:
        model: the snake.
        ground: the ground's parameters.
        state: the snake's state.
        terms: :func:`floating_terms` of ``state``, if the caller has them already.
    """
    r0 = state.rotation
    if terms is None:
        terms = floating_terms(model, r0, state.q, state.nu)
    rotations = r0 @ terms.kin.rotations
    centres = state.position + terms.kin.centres @ r0.T
    omegas = np.einsum("bij,bj->bi", rotations, terms.x_dot[:, 3:])
    return ground_wrenches(
        ground, model.lengths, model.radii, rotations, centres, terms.x_dot[:, :3], omegas
    )


def momentum_free_base_velocity(
    model: SnakeModel, rotation0: ArrayLike, q: ArrayLike, qd: ArrayLike
) -> FloatArray:
    """The base velocity [v_0; w_0] (tail frame) with which joints moving at ``qd`` leave the
    snake's momentum zero: the base rows of M* nu vanish (they are the linear and angular
    momentum, eq. 229, in the tail's frame), so M*_bb [v_0; w_0] = -M*_bj q_dot.

    Returns:
        [v_0; w_0], shape (6,).
    """
    qd = joint_vector(model, qd, "qd")
    m_star = floating_mass_matrix(model, rotation0, q)
    return np.asarray(np.linalg.solve(m_star[:6, :6], -m_star[:6, 6:] @ qd), dtype=float)


def _quaternion_rate(quaternion: FloatArray, omega_body: FloatArray) -> FloatArray:
    """quat' = 1/2 quat (x) (w_0, 0), scalar last (eq. 230)."""
    x, y, z, w = quaternion
    ox, oy, oz = omega_body
    return 0.5 * np.array(
        [
            w * ox + y * oz - z * oy,
            w * oy + z * ox - x * oz,
            w * oz + x * oy - y * ox,
            -x * ox - y * oy - z * oz,
        ]
    )


#: nu_dot = accel(t, state) for :func:`rk4_floating_step`; the joint part of nu_dot is
#: ignored (and may be anything) when the joints are prescribed.
AccelFn = Callable[[float, FloatingState], FloatArray]
#: (q, q_dot) = joints(t) when the joints are prescribed.
JointFn = Callable[[float], tuple[FloatArray, FloatArray]]


def rk4_floating_step(
    accel: AccelFn, state: FloatingState, t: float, dt: float, joints: JointFn | None = None
) -> FloatingState:
    """One classical RK4 step of (x_0, quat, q, nu)' = (R_0 v_0, 1/2 quat (x) w_0, q_dot,
    nu_dot), the quaternion renormalised after the step (eq. 230). With ``joints``, q and
    q_dot are not integrated but read at the stage times (prescribed joints).

    Args:
        accel: nu_dot at (t, state).
        state: the state at t.
        t: time [s].
        dt: step [s].
        joints: prescribed (q, q_dot)(t), or None.

    Returns:
        The state at t + dt.
    """

    def rate(tt: float, s: FloatingState) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        nu_dot = accel(tt, s)
        x_dot = Rotation.from_quat(s.quaternion).apply(s.nu[:3])
        return x_dot, _quaternion_rate(s.quaternion, s.nu[3:6]), s.nu[6:], nu_dot

    def at(tt: float, s: FloatingState) -> FloatingState:
        if joints is None:
            return s
        q, qd = joints(tt)
        nu = s.nu.copy()
        nu[6:] = qd
        return FloatingState(s.position, s.quaternion, np.asarray(q, dtype=float), nu)

    def moved(k: tuple[FloatArray, ...], h: float) -> FloatingState:
        quat = state.quaternion + h * k[1]
        return FloatingState(
            state.position + h * k[0],
            quat / np.linalg.norm(quat),
            state.q + h * k[2],
            state.nu + h * k[3],
        )

    s1 = at(t, state)
    k1 = rate(t, s1)
    k2 = rate(t + dt / 2, at(t + dt / 2, moved(k1, dt / 2)))
    k3 = rate(t + dt / 2, at(t + dt / 2, moved(k2, dt / 2)))
    k4 = rate(t + dt, at(t + dt, moved(k3, dt)))
    k = tuple((a + 2 * b + 2 * c + d) / 6 for a, b, c, d in zip(k1, k2, k3, k4, strict=True))
    return at(t + dt, moved(k, dt))


def prescribed_torques_and_acceleration(
    model: SnakeModel, state: FloatingState, qdd: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Eq. (228) at ``state`` under gravity and the model's ground: the base acceleration
    [v_0'; w_0'] (tail frame) and the joint torques [N m] that give the joints ``qdd``."""
    rotation = state.rotation
    terms = floating_terms(model, rotation, state.q, state.nu)
    ground = model.ground
    wrenches = None if ground is None else ground_force_list(model, ground, state, terms)
    return prescribed_joint_dynamics(model, rotation, state.q, state.nu, qdd, wrenches, terms)


def prescribed_base_step(
    model: SnakeModel, motion: MotionFn, state: FloatingState, t: float, dt: float
) -> FloatingState:
    """One RK4 step (:func:`rk4_floating_step`) of the base of a snake whose joints follow
    ``motion`` exactly (eq. 228): the joints' q and q_dot are read from it at the stage times.

    Raises:
        SimulationError: the state left the finite numbers.
    """

    def accel(tt: float, s: FloatingState) -> FloatArray:
        out = np.zeros(6 + model.n_joints)
        out[:6] = prescribed_torques_and_acceleration(model, s, motion(tt)[2])[0]
        return out

    def joints(tt: float) -> tuple[FloatArray, FloatArray]:
        q, qd, _ = motion(tt)
        return q, qd

    state = rk4_floating_step(accel, state, t, dt, joints)
    if not (np.all(np.isfinite(state.nu)) and np.all(np.isfinite(state.position))):
        raise SimulationError(
            f"the state left the finite numbers at t = {t + dt:.6g} s: use a smaller dt or a "
            f"softer ground"
        )
    return state


def hermite_basis(s: ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The cubic Hermite basis of eq. (239) at s (0 to 1 over a step): the rows h00, h10,
    h01, h11, and their first and second derivatives in s.

    Returns:
        Values, first and second derivatives, each shape (4, *s.shape).
    """
    s = np.asarray(s, dtype=float)
    values = np.array(
        [2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s, 3 * s**2 - 2 * s**3, s**3 - s**2]
    )
    rates = np.array([6 * s**2 - 6 * s, 3 * s**2 - 4 * s + 1, 6 * s - 6 * s**2, 3 * s**2 - 2 * s])
    accelerations = np.array([12 * s - 6, 6 * s - 4, 6 - 12 * s, 6 * s - 2])
    return values, rates, accelerations


def hermite_motion(
    t0: float, dt: float, q0: FloatArray, qd0: FloatArray, q1: FloatArray, qd1: FloatArray
) -> MotionFn:
    """The cubic through (q0, q_dot0) at t0 and (q1, q_dot1) at t0 + dt, with its rates
    (eq. 239, :func:`hermite_basis`): how a step's joint samples drive
    :func:`prescribed_base_step` when only the samples at the step's ends are known (the
    dynamics node's joints)."""

    def motion(t: float) -> tuple[FloatArray, FloatArray, FloatArray]:
        h, d, a = hermite_basis((t - t0) / dt)
        q = h[0] * q0 + h[1] * dt * qd0 + h[2] * q1 + h[3] * dt * qd1
        qd = (d[0] * q0 + d[2] * q1) / dt + d[1] * qd0 + d[3] * qd1
        qdd = (a[0] * q0 + a[2] * q1) / dt**2 + (a[1] * qd0 + a[3] * qd1) / dt
        return q, qd, qdd

    return motion


class BaseTracker:
    """The floating base under joints known only by their samples, step by step: what the
    dynamics node runs beside its joint simulation on a floating robot (eqs. 228, 239).

    Args:
        model: the snake, ``base: floating`` (its ground and gravity act).
        dt: the step between samples [s] (checked against eq. 237).

    Raises:
        SimulationError: a step the ground does not allow.
    """

    def __init__(self, model: SnakeModel, dt: float) -> None:
        check_step(dt, model)
        self.model, self.dt = model, dt
        self.state = lying_state(model)

    def reset(self, q: FloatArray, qd: FloatArray) -> None:
        """Keep the pose; the joints jump to (q, q_dot), the base to the velocity that leaves
        the snake's momentum zero (:func:`momentum_free_base_velocity`)."""
        s = self.state
        base = momentum_free_base_velocity(self.model, s.rotation, q, qd)
        self.state = FloatingState(
            s.position, s.quaternion, np.array(q, dtype=float), np.concatenate([base, qd])
        )

    def advance(self, t: float, qs: FloatArray, qds: FloatArray) -> FloatingState:
        """Step the base from time t [s] through the joints' samples at t + dt, t + 2 dt, ...

        Args:
            t: the time of the current state [s].
            qs: joint angles at the ends of the steps [rad], shape (steps, n).
            qds: joint rates at the ends of the steps [rad/s], shape (steps, n).

        Returns:
            The state after the last step.

        Raises:
            SimulationError: the state left the finite numbers (the tracker keeps its last
                finite state).
        """
        state = self.state
        for i, (q1, qd1) in enumerate(zip(qs, qds, strict=True)):
            t0 = t + i * self.dt
            motion = hermite_motion(t0, self.dt, state.q, state.nu[6:], q1, qd1)
            state = prescribed_base_step(self.model, motion, state, t0, self.dt)
            self.state = state
        return state


def simulate_prescribed(
    model: SnakeModel,
    motion: MotionFn,
    t_end: float,
    dt: float,
    start: FloatingState | None = None,
    every: int = 1,
    progress: Callable[[float], None] | None = None,
) -> FloatingRun:
    """Integrate the base of a snake whose joints follow ``motion`` exactly (eq. 228) with
    :func:`prescribed_base_step`, under gravity and the model's ground (if any).

    Args:
        model: the snake (its ``ground`` acts when not None).
        motion: the joints' (q, q_dot, q_ddot)(t).
        t_end: duration [s].
        dt: step [s].
        start: the initial pose (default: :func:`rest_state`); the joints start at
            motion(0), the base with :func:`momentum_free_base_velocity` (the snake starts at
            rest as a whole).
        every: keep every ``every``-th step.
        progress: called with the fraction done (0..1) about a hundred times.

    Raises:
        SimulationError: ``dt`` over the ground's :func:`stable_step`, or a state that left
            the finite numbers.

    Returns:
        The samples at t = 0, every dt, ..., t_end.
    """
    check_step(dt, model)
    state = rest_state(model) if start is None else start
    q0, qd0, _ = motion(0.0)
    nu = np.concatenate([momentum_free_base_velocity(model, state.rotation, q0, qd0), qd0])
    state = FloatingState(state.position, state.quaternion, np.asarray(q0, dtype=float), nu)
    steps = round(t_end / dt)
    rows, times = [state], [0.0]
    report = max(1, steps // 100)
    for i in range(steps):
        state = prescribed_base_step(model, motion, state, i * dt, dt)
        if (i + 1) % every == 0:
            rows.append(state)
            times.append((i + 1) * dt)
        if progress is not None and (i + 1) % report == 0:
            progress((i + 1) / steps)
    torques = [
        prescribed_torques_and_acceleration(model, s, motion(t)[2])[1]
        for t, s in zip(times, rows, strict=True)
    ]
    return FloatingRun(
        np.array(times),
        np.array([s.position for s in rows]),
        np.array([s.quaternion for s in rows]),
        np.array([s.q for s in rows]),
        np.array([s.nu for s in rows]),
        np.array([centre_of_mass(model, s) for s in rows]),
        np.array([heading(model, s) for s in rows]),
        np.array(torques),
    )
