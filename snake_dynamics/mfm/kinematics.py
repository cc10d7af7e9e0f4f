"""MFM kinematics of the serial snake: frame connections E, the B-matrix and its rate.

The literal, readable form: each function computes one quantity of the paper and names
its equation (see docs/mfm.md for the corrected B-matrix appendix).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from snake_dynamics.errors import StateError
from snake_dynamics.mfm.lie import axis_rotation, frame_connection
from snake_dynamics.model import SnakeModel

FloatArray = NDArray[np.float64]


def joint_vector(model: SnakeModel, values: ArrayLike, name: str) -> FloatArray:
    """Validate a per-joint vector (q, q_dot, q_ddot, tau): shape (n,), finite.

    Raises:
        StateError: wrong shape or NaN/inf; the message names the vector.
    """
    try:
        vec = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise StateError(f"{name} must be numbers, got {values!r}") from exc
    if vec.shape != (model.n_joints,):
        raise StateError(f"{name} must have shape ({model.n_joints},), got {vec.shape}")
    if not np.all(np.isfinite(vec)):
        raise StateError(f"{name} must be finite, got {vec.tolist()}")
    return vec


def relative_frame_connection(model: SnakeModel, k: int, theta: float) -> FloatArray:
    """E^(k/k-1) = T(l_{k-1}) Rot(a_k, theta_k) T(l_k), joint k from body k-1 (eq. 48),
    formed as its product [[R, R l_k + l_{k-1}], [0, 1]].

    Args:
        model: the snake.
        k: joint index 1..n.
        theta: joint angle theta_k [rad].

    Returns:
        E^(k/k-1), shape (4, 4).
    """
    rotation = axis_rotation(model.axes[k - 1], theta)
    return frame_connection(rotation, rotation @ model.offsets[k] + model.offsets[k - 1])


def link_poses(model: SnakeModel, q: ArrayLike) -> FloatArray:
    """Absolute frame connections E^(b) of bodies 0..n (eqs. 17, 46): E_b = E_{b-1} E^(b/b-1).

    Args:
        model: the snake.
        q: joint angles [rad], shape (n,).

    Returns:
        E per body, tail first (E_0 = I, the inertial frame), shape (n+1, 4, 4); the
        rotation block is R^(b), the translation the CM position x_C^(b) [m].
    """
    q = joint_vector(model, q, "q")
    poses = np.empty((model.n_joints + 1, 4, 4))
    poses[0] = np.eye(4)
    for k in range(1, model.n_joints + 1):
        poses[k] = poses[k - 1] @ relative_frame_connection(model, k, q[k - 1])
    return poses


class FrameKinematics(NamedTuple):
    """Per-body and per-joint geometry in the inertial frame, derived from E (eq. 17).

    Attributes:
        rotations: R^(b), shape (n+1, 3, 3).
        centres: CM positions r_b [m], shape (n+1, 3).
        pivots: joint positions p_k = r_{k-1} + R_{k-1} l_{k-1} [m], shape (n, 3).
        joint_axes: z_k = R_{k-1} a_k in the inertial frame, shape (n, 3).
    """

    rotations: FloatArray
    centres: FloatArray
    pivots: FloatArray
    joint_axes: FloatArray


def frame_kinematics(model: SnakeModel, q: ArrayLike) -> FrameKinematics:
    """R^(b), r_b, joint pivots p_k and world joint axes z_k from :func:`link_poses`."""
    poses = link_poses(model, q)
    rotations, centres = poses[:, :3, :3], poses[:, :3, 3]
    parent_rot = rotations[:-1]
    pivots = centres[:-1] + np.einsum("kij,kj->ki", parent_rot, model.offsets[:-1])
    joint_axes = np.einsum("kij,kj->ki", parent_rot, model.axes)
    return FrameKinematics(rotations, centres, pivots, joint_axes)


def _lower_mask(n: int) -> NDArray[np.bool_]:
    """mask[b, k] = joint k (1..n) moves body b (1..n), i.e. k <= b (zeros of eq. 57)."""
    return np.tril(np.ones((n, n), dtype=bool))


def _stack_blocks(linear: FloatArray, angular: FloatArray) -> FloatArray:
    """Assemble (n, n, 3) linear and angular blocks [b, k] into the (6n, n) layout of eq. (54)."""
    n = linear.shape[0]
    blocks = np.concatenate([linear, angular], axis=2)  # [b, k, 6]
    return np.ascontiguousarray(blocks.transpose(0, 2, 1).reshape(6 * n, n))


def b_matrix(model: SnakeModel, q: ArrayLike, kin: FrameKinematics | None = None) -> FloatArray:
    """B with X_dot = B q_dot (eq. 56), X_dot per body = [x_dot_C (inertial); omega (body)].

    Block (b, k), for joint k <= b (the appendix, eqs. 85-114, corrected in docs/mfm.md):
    linear ``z_k x (r_b - p_k)``, angular ``R_b^T z_k``; zero for k > b.

    Args:
        model: the snake.
        q: joint angles [rad], shape (n,).
        kin: :func:`frame_kinematics` of q, if the caller has it already.

    Returns:
        B, shape (6n, n) [m/rad for linear rows, 1 for angular rows].
    """
    kin = frame_kinematics(model, q) if kin is None else kin
    n = model.n_joints
    mask = _lower_mask(n)[:, :, None]
    arm = kin.centres[1:, None, :] - kin.pivots[None, :, :]  # r_b - p_k, [b, k]
    linear = np.cross(np.broadcast_to(kin.joint_axes[None], arm.shape), arm) * mask
    angular = np.einsum("bji,kj->bki", kin.rotations[1:], kin.joint_axes) * mask
    return _stack_blocks(linear, angular)


def b_matrix_dot(
    model: SnakeModel, q: ArrayLike, qd: ArrayLike, kin: FrameKinematics | None = None
) -> FloatArray:
    """Time rate B_dot of the B-matrix along q_dot (needed by N*, eq. 83).

    With omega_k the inertial angular velocity of body k, z_dot_k = omega_k x z_k,
    r_dot_b = sum_k B_v(b,k) q_dot_k and p_dot_k = r_dot_k - omega_k x (R_k l_k):
    linear ``z_dot_k x (r_b - p_k) + z_k x (r_dot_b - p_dot_k)``,
    angular ``R_b^T [z_k x (omega_b - omega_k)]`` (docs/mfm.md, "Time derivative of B").

    Args:
        model: the snake.
        q: joint angles [rad], shape (n,).
        qd: joint rates [rad/s], shape (n,).
        kin: :func:`frame_kinematics` of q, if the caller has it already.

    Returns:
        B_dot, shape (6n, n).
    """
    kin = frame_kinematics(model, q) if kin is None else kin
    qd = joint_vector(model, qd, "qd")
    n = model.n_joints
    mask = _lower_mask(n)[:, :, None]
    omega = np.cumsum(kin.joint_axes * qd[:, None], axis=0)  # [k]
    z_dot = np.cross(omega, kin.joint_axes)
    b = b_matrix(model, q, kin).reshape(n, 6, n)
    r_dot = np.einsum("bik,k->bi", b[:, :3, :], qd)  # CM velocities [b]
    cm_arm = np.einsum("kij,kj->ki", kin.rotations[1:], model.offsets[1:])  # R_k l_k
    p_dot = r_dot - np.cross(omega, cm_arm)
    arm = kin.centres[1:, None, :] - kin.pivots[None, :, :]
    arm_dot = r_dot[:, None, :] - p_dot[None, :, :]
    z = np.broadcast_to(kin.joint_axes[None], arm.shape)
    linear = (np.cross(np.broadcast_to(z_dot[None], arm.shape), arm) + np.cross(z, arm_dot)) * mask
    rel = np.cross(z, omega[:, None, :] - omega[None, :, :])  # z_k x (omega_b - omega_k)
    angular = np.einsum("bji,bkj->bki", kin.rotations[1:], rel) * mask
    return _stack_blocks(linear, angular)
