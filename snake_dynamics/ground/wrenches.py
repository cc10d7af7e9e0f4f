"""Contact and friction wrenches of the ground on a snake's bodies, in numpy (docs/mfm.md,
"The snake on the ground", eqs. 231-236).

Contact points are the lowest points of ``contacts`` cross-sections spread evenly along
each body, or the four corners of each box cross-section (eq. 231); a point below z = 0
gets a spring-damper normal force (eq. 232), and a friction force in the plane with
separate coefficients along and across the body, whose directions are the horizontal
projection of the body's axis and its normal (eq. 233). Friction is regularised Coulomb
(tanh with a velocity scale, eq. 234), optionally with a different coefficient when the
body slides backwards (towards the tail), plus an optional viscous part acting at the
body's centre of mass while the body touches the ground (eq. 235, the planar snake models'
friction). The wrenches go into the force list of the floating-base MFM
(:func:`snake_dynamics.floating.literal.floating_force_list`); their compiled twin is
:mod:`snake_dynamics.ground.kernel`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from snake_dynamics.ground.model import VERTICAL_TOL, Ground

FloatArray = NDArray[np.float64]
#: The vertical, the inertial frame's e3.
_UP = np.array([0.0, 0.0, 1.0])


def contact_points(
    lengths: FloatArray,
    radii: FloatArray,
    rotations: FloatArray,
    centres: FloatArray,
    count: int,
    width: float = 0.0,
) -> FloatArray:
    """Contact points of each body (eq. 231), at ``count`` cross-sections spread evenly over
    s in [-L_b/2, L_b/2] (the middle alone for ``count`` 1). A round body (``width`` 0):
    the lowest point of each, c = r_b + s R_b e2 - rho_b d / |d| with
    d = e3 - (e3 . u) u, u = R_b e2. A box (``width`` w > 0): the four corners of each,
    c = r_b + R_b (±w/2, s, ±rho_b).

    Args:
        lengths: L_b [m], shape (B,).
        radii: rho_b [m], shape (B,).
        rotations: R_b, shape (B, 3, 3).
        centres: r_b [m], shape (B, 3).
        count: cross-sections per body.
        width: the flat underside's width w [m] (0: round bodies).

    Returns:
        Points in the inertial frame [m], shape (B, count, 3), or (B, 4 count, 3) for a box.
    """
    s = np.linspace(-0.5, 0.5, count) if count > 1 else np.zeros(1)
    axis = rotations[:, :, 1]  # u = R_b e2
    along = (s[None, :, None] * lengths[:, None, None]) * axis[:, None, :]
    if width > 0.0:
        corners = np.array([[-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0], [1.0, 1.0]])
        across = 0.5 * width * corners[None, :, 0, None] * rotations[:, None, :, 0]
        up = corners[None, :, 1, None] * radii[:, None, None] * rotations[:, None, :, 2]
        offsets = (along[:, :, None, :] + (across + up)[:, None, :, :]).reshape(
            len(lengths), 4 * len(s), 3
        )
        return centres[:, None, :] + offsets
    down = _UP[None, :] - (axis @ _UP)[:, None] * axis
    norm = np.linalg.norm(down, axis=1)
    down = np.where(norm[:, None] > VERTICAL_TOL, down / np.maximum(norm, VERTICAL_TOL)[:, None], 0)
    return centres[:, None, :] + along - radii[:, None, None] * down[:, None, :]


def _directions(axis: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Horizontal unit directions along (t) and across (n = e3 x t) each body (eq. 233);
    zero for a vertical body."""
    t = axis.copy()
    t[:, 2] = 0.0
    norm = np.linalg.norm(t, axis=1)
    t = np.where(norm[:, None] > VERTICAL_TOL, t / np.maximum(norm, VERTICAL_TOL)[:, None], 0)
    return t, np.cross(_UP[None, :], t)


def ground_wrenches(
    ground: Ground,
    lengths: FloatArray,
    radii: FloatArray,
    rotations: FloatArray,
    centres: FloatArray,
    velocities: FloatArray,
    omegas: FloatArray,
) -> FloatArray:
    """Contact and friction wrenches on every body (eqs. 231-236).

    Args:
        ground: the ground's parameters.
        lengths: L_b [m], shape (B,).
        radii: rho_b [m], shape (B,).
        rotations: R_b, shape (B, 3, 3).
        centres: CM positions r_b [m], shape (B, 3).
        velocities: CM velocities (inertial) [m/s], shape (B, 3).
        omegas: angular velocities (inertial) [rad/s], shape (B, 3).

    Returns:
        Per body [force (inertial) N; moment about the CM (body frame) N m], shape (B, 6):
        the layout of the force list's external wrenches.
    """
    points = contact_points(lengths, radii, rotations, centres, ground.contacts, ground.width)
    arms = points - centres[:, None, :]
    point_vel = velocities[:, None, :] + np.cross(omegas[:, None, :], arms)
    depth = -points[..., 2]
    touching = depth > 0.0
    share = 0.5 if ground.width > 0.0 else 1.0  # a box's two corners on the ground
    spring = share * (ground.stiffness * depth - ground.damping * point_vel[..., 2])
    normal = np.where(touching, np.maximum(spring, 0.0), 0)  # eq. 232
    t, n = _directions(rotations[:, :, 1])
    v_along = np.einsum("bpi,bi->bp", point_vel, t)
    v_across = np.einsum("bpi,bi->bp", point_vel, n)
    mu_along = np.where(v_along > 0.0, ground.mu_along, ground.backward)
    scale = ground.velocity_scale
    f_along = -normal * mu_along * np.tanh(v_along / scale)  # eq. 234
    f_across = -normal * ground.mu_across * np.tanh(v_across / scale)
    forces = (
        normal[..., None] * _UP
        + f_along[..., None] * t[:, None, :]
        + f_across[..., None] * n[:, None, :]
    )
    total_force = forces.sum(axis=1)
    moment = np.cross(arms, forces).sum(axis=1)  # about the CM, inertial
    if ground.viscous_along > 0.0 or ground.viscous_across > 0.0:  # eq. 235
        on = np.asarray(touching.any(axis=1), dtype=bool)[:, None]
        viscous = -(
            ground.viscous_along * np.einsum("bi,bi->b", velocities, t)[:, None] * t
            + ground.viscous_across * np.einsum("bi,bi->b", velocities, n)[:, None] * n
        )
        total_force = total_force + np.where(on, viscous, 0.0)
    out = np.empty((len(lengths), 6))
    out[:, :3] = total_force
    out[:, 3:] = np.einsum("bji,bj->bi", rotations, moment)  # R_b^T (eq. 236)
    return out
