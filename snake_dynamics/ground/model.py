"""The floor a snake lies on: the plane z = 0, its contact and friction parameters, and the
largest RK4 step they allow (docs/mfm.md, "The snake on the ground", eqs. 231-237).

Each body is a cylinder of its radius about its long axis e2, or, with a ``width``, a box
of that width (along its e1) and twice its radius high (along its e3): a servo's flat
underside. :func:`stable_step` is the largest RK4 step the ground's forces allow (eq. 237).
The forces themselves are :mod:`snake_dynamics.ground.wrenches` (numpy) and
:mod:`snake_dynamics.ground.kernel` (compiled).
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
#: The tolerance below which a body's axis counts as vertical (its lowest point is then on
#: the axis, and it has no direction along or across in the ground plane).
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
