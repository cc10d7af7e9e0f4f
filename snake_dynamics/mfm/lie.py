"""SO(3)/SE(3) helpers of the Moving Frame Method: the hat map and frame connections."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


def hat(v: FloatArray) -> FloatArray:
    """Skew-symmetric matrix of a 3-vector, the so(3) element of eq. (12).

    Args:
        v: vector(s), shape (..., 3).

    Returns:
        Matrices with ``hat(v) @ w == cross(v, w)``, shape (..., 3, 3).
    """
    v = np.asarray(v, dtype=float)
    out = np.zeros((*v.shape[:-1], 3, 3))
    out[..., 0, 1] = -v[..., 2]
    out[..., 0, 2] = v[..., 1]
    out[..., 1, 0] = v[..., 2]
    out[..., 1, 2] = -v[..., 0]
    out[..., 2, 0] = -v[..., 1]
    out[..., 2, 1] = v[..., 0]
    return out


def vee(m: FloatArray) -> FloatArray:
    """Inverse of :func:`hat`: the 3-vector of a skew-symmetric matrix (eq. 12).

    Args:
        m: matrices, shape (..., 3, 3).

    Returns:
        Vectors, shape (..., 3).
    """
    m = np.asarray(m, dtype=float)
    return np.stack([m[..., 2, 1], m[..., 0, 2], m[..., 1, 0]], axis=-1)


def axis_rotation(axis: FloatArray, angle: float) -> FloatArray:
    """Active rotation by ``angle`` about a unit ``axis`` (Rodrigues), as in eqs. (18), (33).

    Args:
        axis: unit vector, shape (3,).
        angle: rotation angle [rad].

    Returns:
        Rotation matrix R in SO(3), shape (3, 3).
    """
    k = hat(axis)
    rotation: FloatArray = np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)
    return rotation


def frame_connection(rotation: FloatArray, translation: FloatArray) -> FloatArray:
    """Frame connection matrix E = [[R, x], [0, 1]] in SE(3) (eq. 17).

    Args:
        rotation: R, shape (3, 3).
        translation: x [m], shape (3,).

    Returns:
        E, shape (4, 4).
    """
    e = np.eye(4)
    e[:3, :3] = rotation
    e[:3, 3] = translation
    return e
