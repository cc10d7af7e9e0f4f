"""The MFM snake as an arm of this family (docs/flexible.md, "A snake in this family").

The fixed-tail snake of :mod:`snake_dynamics.mfm` (body frames at the centres of mass, long
axis e2, joint k turning body k about a_k in both neighbours' frames, mfm.md eq. 48) is a
serial arm whose links are the snake's bodies: link k's frame sits at joint k with x along
e2 and z along a_k, so the fixed rotation before joint k is C_(k-1)ᵀ C_k with
C_k = [e2, a_k x e2, a_k] in body k's axes (C_0 = I, the tail's frame is the inertial one),
(F114). With every link rigid the two families must give the same M* and forces; this is
the first step of elastic snake links (the issue's part 3: not yet in the robot configs).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from snake_dynamics.errors import ModelError
from snake_dynamics.flexible.model import FlexibleArm, RigidLink
from snake_dynamics.model import SnakeModel

FloatArray = NDArray[np.float64]


def link_axes(axis: FloatArray) -> FloatArray:
    """C = [e2, a x e2, a]: a link frame's axes in its body's axes, (3, 3) (columns).

    Raises:
        ModelError: an axis along the body (a roll joint), which this mapping cannot place.
    """
    a = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    if abs(a[1]) > 1e-12:
        raise ModelError(f"a joint axis must be across the body (no e2 part), got {a.tolist()}")
    x = np.array([0.0, 1.0, 0.0])
    return np.column_stack([x, np.cross(a, x), a])


def arm_from_snake(model: SnakeModel) -> FlexibleArm:
    """The snake's n moving bodies as rigid links on its fixed tail (F114).

    Args:
        model: the fixed-tail MFM snake.

    Returns:
        The arm: link k at joint k, its centre of mass L_k/2 along x, its inertia C_kᵀ J_k C_k.
    """
    links = []
    previous = np.eye(3)
    for k in range(1, model.n_joints + 1):
        c = link_axes(model.axes[k - 1])
        length = float(model.lengths[k])
        links.append(
            RigidLink(
                mass=float(model.masses[k]),
                com=(length / 2, 0.0, 0.0),
                inertia=_rows(c.T @ model.inertias[k] @ c),
                distal=(length, 0.0, 0.0),
                joint_rotation=_rows(previous.T @ c),
            )
        )
        previous = c
    g = model.gravity
    return FlexibleArm(tuple(links), gravity=(float(g[0]), float(g[1]), float(g[2])), name="snake")


def _rows(m: FloatArray) -> tuple[tuple[float, float, float], ...]:
    return tuple((float(r[0]), float(r[1]), float(r[2])) for r in m)
