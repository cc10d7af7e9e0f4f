"""MFM kinetics, literal form: M* = BᵀMB, N* q_dot, F* = BᵀQ and the equation of motion.

Each function is one line of the paper; the fast forms in :mod:`snake_dynamics.mfm.recursive`
compute the same quantities recursively and are tested against these.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from snake_dynamics.errors import StateError
from snake_dynamics.mfm.kinematics import b_matrix, b_matrix_dot, frame_kinematics, joint_vector
from snake_dynamics.mfm.lie import hat
from snake_dynamics.model import SnakeModel

FloatArray = NDArray[np.float64]


def body_angular_velocities(model: SnakeModel, q: ArrayLike, qd: ArrayLike) -> FloatArray:
    """Body-frame angular velocities omega^(b) (eqs. 29, 44): angular rows of B q_dot, (n, 3)."""
    x_dot = (b_matrix(model, q) @ joint_vector(model, qd, "qd")).reshape(model.n_joints, 6)
    return x_dot[:, 3:]


def angular_velocity_matrix(model: SnakeModel, q: ArrayLike, qd: ArrayLike) -> FloatArray:
    """D = blockdiag(0_3, hat(omega^(b))) over the moving bodies (eq. 73), shape (6n, 6n)."""
    n = model.n_joints
    d = np.zeros((6 * n, 6 * n))
    for b, w in enumerate(body_angular_velocities(model, q, qd)):
        d[6 * b + 3 : 6 * b + 6, 6 * b + 3 : 6 * b + 6] = hat(w)
    return d


def mass_matrix(model: SnakeModel, q: ArrayLike) -> FloatArray:
    """Reduced mass matrix M* = Bᵀ M B (eq. 82), plus the joints' armature (eq. 471).

    Args:
        model: the snake.
        q: joint angles [rad], shape (n,).

    Returns:
        Symmetric positive-definite M*, shape (n, n) [kg m^2].
    """
    b = b_matrix(model, q)
    return model.with_armature(b.T @ model.block_mass_matrix @ b)


def bias_forces(model: SnakeModel, q: ArrayLike, qd: ArrayLike) -> FloatArray:
    """Velocity-product term N* q_dot = Bᵀ (M B_dot + D M B) q_dot (eq. 83).

    Args:
        model: the snake.
        q: joint angles [rad], shape (n,).
        qd: joint rates [rad/s], shape (n,).

    Returns:
        N* q_dot, shape (n,) [N m].
    """
    qd = joint_vector(model, qd, "qd")
    b = b_matrix(model, q)
    m = model.block_mass_matrix
    n_star = b.T @ (m @ b_matrix_dot(model, q, qd) + angular_velocity_matrix(model, q, qd) @ m @ b)
    return n_star @ qd


def body_wrenches(model: SnakeModel, wrenches: ArrayLike | None) -> FloatArray:
    """Validate external wrenches: per moving body [force (inertial) N; moment (body) N m].

    Raises:
        StateError: wrong shape (must be (n, 6)) or non-finite values.
    """
    n = model.n_joints
    if wrenches is None:
        return np.zeros((n, 6))
    w = np.asarray(wrenches, dtype=float)
    if w.shape != (n, 6) or not np.all(np.isfinite(w)):
        raise StateError(f"wrenches must be finite with shape ({n}, 6), got shape {w.shape}")
    return w


def force_list(
    model: SnakeModel, q: ArrayLike, tau: ArrayLike, wrenches: ArrayLike | None = None
) -> FloatArray:
    """Force and moment list Q (eq. 75, signs corrected): per moving body b,
    [m_b g + F_ext (inertial); tau_b a_b - tau_{b+1} a_{b+1} + M_ext (body frame)].

    Joint k's motor acts +tau_k a_k on body k and -tau_k a_k on body k-1 (the axis a_k has
    the same components in both frames); the reaction on the fixed tail is not listed.

    Returns:
        Q, shape (6n,).
    """
    tau = joint_vector(model, tau, "tau")
    frame_kinematics(model, q)  # validates q
    w = body_wrenches(model, wrenches)
    n = model.n_joints
    moments = tau[:, None] * model.axes
    moments[:-1] -= tau[1:, None] * model.axes[1:]
    q_list = np.empty((n, 6))
    q_list[:, :3] = model.masses[1:, None] * model.gravity[None, :] + w[:, :3]
    q_list[:, 3:] = moments + w[:, 3:]
    return q_list.reshape(6 * n)


def generalized_forces(
    model: SnakeModel, q: ArrayLike, tau: ArrayLike, wrenches: ArrayLike | None = None
) -> FloatArray:
    """Essential generalized forces F* = Bᵀ Q (eq. 79); F* == tau for pure joint torques.

    Args:
        model: the snake.
        q: joint angles [rad], shape (n,).
        tau: joint torques [N m], shape (n,).
        wrenches: optional external [force (inertial); moment (body frame)] on each moving
            body's CM, shape (n, 6) [N, N m]. Gravity m_b g is always included.

    Returns:
        F*, shape (n,) [N m].
    """
    return b_matrix(model, q).T @ force_list(model, q, tau, wrenches)


def forward_dynamics(
    model: SnakeModel,
    q: ArrayLike,
    qd: ArrayLike,
    tau: ArrayLike,
    wrenches: ArrayLike | None = None,
) -> FloatArray:
    """Joint accelerations q_ddot = M*^{-1} (F* - N* q_dot) (eq. 84).

    Args:
        model: the snake.
        q: joint angles [rad], shape (n,).
        qd: joint rates [rad/s], shape (n,).
        tau: joint torques [N m], shape (n,).
        wrenches: optional external wrenches, see :func:`generalized_forces`.

    Returns:
        q_ddot [rad/s^2], shape (n,).
    """
    import scipy.linalg  # here, not at the top: the package's names stay light for launch files

    rhs = generalized_forces(model, q, tau, wrenches) - bias_forces(model, q, qd)
    return np.asarray(scipy.linalg.cho_solve(scipy.linalg.cho_factor(mass_matrix(model, q)), rhs))


def inverse_dynamics(
    model: SnakeModel,
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    wrenches: ArrayLike | None = None,
) -> FloatArray:
    """Joint torques that produce q_ddot: tau = M* q_ddot + N* q_dot - F*(tau = 0) (eq. 81).

    Args:
        model: the snake.
        q: joint angles [rad], shape (n,).
        qd: joint rates [rad/s], shape (n,).
        qdd: joint accelerations [rad/s^2], shape (n,).
        wrenches: optional external wrenches, see :func:`generalized_forces`.

    Returns:
        tau [N m], shape (n,).
    """
    qdd = joint_vector(model, qdd, "qdd")
    passive = generalized_forces(model, q, np.zeros(model.n_joints), wrenches)
    return mass_matrix(model, q) @ qdd + bias_forces(model, q, qd) - passive


def kinetic_energy(model: SnakeModel, q: ArrayLike, qd: ArrayLike) -> float:
    """K = 1/2 X_dotᵀ M X_dot = 1/2 q_dotᵀ M* q_dot (eq. 65) [J]."""
    qd = joint_vector(model, qd, "qd")
    return float(0.5 * qd @ mass_matrix(model, q) @ qd)


def potential_energy(model: SnakeModel, q: ArrayLike) -> float:
    """Gravitational potential V = -sum_b m_b g . r_b of the moving bodies [J]."""
    centres = frame_kinematics(model, q).centres[1:]
    return float(-np.sum(model.masses[1:] * (centres @ model.gravity)))
