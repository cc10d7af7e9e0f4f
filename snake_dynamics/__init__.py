"""MFM dynamics core of mfm_snake (no ROS): model, kinematics, kinetics, gaits, URDF.

The public API follows the Moving Frame Method paper (IMECE2019-10434): :func:`link_poses`
(E, eq. 17), :func:`b_matrix` (eq. 56), :func:`mass_matrix` (M*, eq. 82),
:func:`bias_forces` (N* q_dot, eq. 83), :func:`generalized_forces` (F*, eq. 79),
:func:`forward_dynamics` (eq. 84), :func:`inverse_dynamics` and :func:`simulate` (RK4), and
the servos that move the joints (:class:`ServoModel`, eqs. 201-206).
These are the literal forms; :mod:`snake_dynamics.fast` holds the recursive, compiled ones.

The names below load their module on first use (PEP 562), so that importing one module of
the package (``snake_dynamics.model`` for a launch file's graph, the errors for a node) does
not pull in numba and scipy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .errors import (
        DivergenceError,
        GaitError,
        ModelError,
        SimulationError,
        SnakeDynamicsError,
        StateError,
    )
    from .gaits import (
        GAITS,
        Gait,
        JointTrajectory,
        make_gait,
        staggered_quintic,
    )
    from .integrators import (
        Servo,
        SimulationResult,
        joint_response,
        prescribed_torques,
        simulate,
        simulate_gait,
    )
    from .kinematics import (
        b_matrix,
        b_matrix_dot,
        link_poses,
    )
    from .kinetics import (
        bias_forces,
        forward_dynamics,
        generalized_forces,
        inverse_dynamics,
        kinetic_energy,
        mass_matrix,
        potential_energy,
    )
    from .model import (
        SnakeModel,
    )
    from .servo import (
        ServoModel,
        ServoParams,
    )

#: Submodule -> the public names it defines.
_MODULES = {
    "errors": (
        "DivergenceError",
        "GaitError",
        "ModelError",
        "SimulationError",
        "SnakeDynamicsError",
        "StateError",
    ),
    "gaits": (
        "GAITS",
        "Gait",
        "JointTrajectory",
        "make_gait",
        "staggered_quintic",
    ),
    "integrators": (
        "Servo",
        "SimulationResult",
        "joint_response",
        "prescribed_torques",
        "simulate",
        "simulate_gait",
    ),
    "kinematics": (
        "b_matrix",
        "b_matrix_dot",
        "link_poses",
    ),
    "kinetics": (
        "bias_forces",
        "forward_dynamics",
        "generalized_forces",
        "inverse_dynamics",
        "kinetic_energy",
        "mass_matrix",
        "potential_energy",
    ),
    "model": ("SnakeModel",),
    "servo": (
        "ServoModel",
        "ServoParams",
    ),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}
__all__ = [
    "GAITS",
    "DivergenceError",
    "Gait",
    "GaitError",
    "JointTrajectory",
    "ModelError",
    "Servo",
    "ServoModel",
    "ServoParams",
    "SimulationError",
    "SimulationResult",
    "SnakeDynamicsError",
    "SnakeModel",
    "StateError",
    "b_matrix",
    "b_matrix_dot",
    "bias_forces",
    "forward_dynamics",
    "generalized_forces",
    "inverse_dynamics",
    "joint_response",
    "kinetic_energy",
    "link_poses",
    "make_gait",
    "mass_matrix",
    "potential_energy",
    "prescribed_torques",
    "simulate",
    "simulate_gait",
    "staggered_quintic",
]


def __getattr__(name: str) -> Any:
    """Load a public name's submodule when the name is first used."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
