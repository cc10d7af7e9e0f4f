"""Ground contact and anisotropic friction of a snake on the plane z = 0 (docs/mfm.md,
"The snake on the ground", eqs. 231-236).

Each body is a cylinder of its radius about its long axis e2, or, with a ``width``, a box
of that width (along its e1) and twice its radius high (along its e3): a servo's flat
underside. Contact points are the lowest points of ``contacts`` cross-sections spread
evenly along the body, or the four corners of each box cross-section (eq. 231); a
point below z = 0 gets a spring-damper normal force (eq. 232), and a friction force in the
plane with separate coefficients along and across the body, whose directions are the
horizontal projection of the body's axis and its normal (eq. 233). Friction is
regularised Coulomb (tanh with a velocity scale, eq. 234), optionally with a different
coefficient when the body slides backwards (towards the tail), plus an optional viscous
part acting at the body's centre of mass while the body touches the ground (eq. 235, the
planar snake models' friction). :func:`stable_step` is the largest RK4 step these forces
allow (eq. 237). The wrenches go into the force list of the floating-base
MFM (:func:`snake_dynamics.floating.literal.floating_force_list`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import NDArray

from snake_dynamics.errors import ModelError

FloatArray = NDArray[np.float64]
#: The vertical (the inertial frame's e3) and the tolerance below which a body's axis
#: counts as vertical (its lowest point is then on the axis).
_UP = np.array([0.0, 0.0, 1.0])
VERTICAL_TOL = 1e-9


@dataclass(frozen=True)
class Ground:
    """The ground plane z = 0 and its friction (a robot YAML's ``model.ground:``).

    Attributes:
        stiffness: normal spring per contact point of a round body [N/m] (> 0); a box's
            cross-section shares it between its two corners on the ground.
        damping: normal damper per contact point of a round body [N s/m] (>= 0), shared
            as the stiffness; it only pushes.
        mu_along: Coulomb coefficient along a body, sliding forwards (towards the head).
        mu_across: Coulomb coefficient across a body.
        mu_backward: Coulomb coefficient along a body sliding backwards (default: mu_along).
        velocity_scale: tanh regularisation of Coulomb friction [m/s] (> 0).
        viscous_along: viscous coefficient along a body, at its CM [N s/m] (>= 0).
        viscous_across: viscous coefficient across a body, at its CM [N s/m] (>= 0).
        contacts: contact cross-sections per body (>= 1; 1: the middle; else the ends and
            between).
        width: width of each body's flat underside [m] (>= 0): the body is a box of this
            width and twice its radius high, with contact points at the corners of each
            cross-section; 0: a round body, its lowest point.
    """

    stiffness: float = 2.0e4
    damping: float = 40.0
    mu_along: float = 0.1
    mu_across: float = 0.5
    mu_backward: float | None = None
    velocity_scale: float = 1.0e-2
    viscous_along: float = 0.0
    viscous_across: float = 0.0
    contacts: int = 3
    width: float = 0.0

    def __post_init__(self) -> None:
        positive = {"stiffness", "velocity_scale"}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "contacts":
                if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 16:
                    raise ModelError(f"ground.contacts must be an integer 1..16, got {value!r}")
                continue
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ModelError(f"ground.{f.name} must be a number, got {value!r}")
            low_ok = value > 0.0 if f.name in positive else value >= 0.0
            if not (math.isfinite(value) and low_ok):
                bound = "> 0" if f.name in positive else ">= 0"
                raise ModelError(f"ground.{f.name} must be finite and {bound}, got {value!r}")

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> Ground:
        """The ``ground:`` mapping of a robot YAML; unknown keys are an error.

        Raises:
            ModelError: unknown keys or invalid values, naming the field.
        """
        if not isinstance(spec, Mapping):
            raise ModelError(
                f"model.ground must be a mapping of ground parameters or wheels, got {spec!r}"
            )
        allowed = {f.name for f in fields(cls)}
        unknown = set(spec) - allowed
        if unknown:
            raise ModelError(f"ground: unknown keys {sorted(unknown)}; allowed {sorted(allowed)}")
        return cls(**spec)

    @property
    def backward(self) -> float:
        """The along coefficient when sliding backwards."""
        return self.mu_along if self.mu_backward is None else self.mu_backward


def stable_step(ground: Ground, masses: FloatArray, gravity: float) -> float:
    """The largest RK4 step [s] the ground allows for bodies of ``masses`` (eq. 237):
    the lightest body's contact must not ring faster than one radian per step,
    dt <= sqrt(m_min / (contacts k)), its normal damping and viscous friction must not
    decay faster than 2.5 per step, dt <= 2.5 m_min / (contacts d) and
    dt <= 2.5 m_min / max(viscous), and the regularised Coulomb slope mu m g / v_s per body
    gives dt <= 2.5 v_s / (mu_max g) (a box's corners share k and d, eq. 232, so a flat
    underside rests as stiffly as a round one). RK4's stability interval on the real axis
    is 2.78.

    Args:
        ground: the ground's parameters.
        masses: the bodies' masses [kg].
        gravity: |g| [m/s^2].

    Returns:
        The step bound [s] (inf if nothing bounds it).
    """
    m_min = float(np.min(masses))
    bounds = [math.sqrt(m_min / (ground.contacts * ground.stiffness))]
    if ground.damping > 0.0:
        bounds.append(2.5 * m_min / (ground.contacts * ground.damping))
    viscous = max(ground.viscous_along, ground.viscous_across)
    if viscous > 0.0:
        bounds.append(2.5 * m_min / viscous)
    mu = max(ground.mu_along, ground.mu_across, ground.backward)
    if mu > 0.0 and gravity > 0.0:
        bounds.append(2.5 * ground.velocity_scale / (mu * gravity))
    return min(bounds)


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
