"""World poses of the floating-base snake from its packed state, compiled (eq. 221): the
snake's centre of mass and heading per sample, one body's pose.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from snake_dynamics.floating.workspace import (
    FloatingParams,
    quaternion_matrix,
)
from snake_dynamics.jit import compiled
from snake_dynamics.mfm.spatial import (
    body_frames,
)

FloatArray = NDArray[np.float64]


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
