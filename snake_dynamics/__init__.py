"""MFM dynamics core of mfm_snake (no ROS): model, kinematics, kinetics, gaits, URDF.

The public API follows the Moving Frame Method paper (IMECE2019-10434): :func:`link_poses`
(E, eq. 17), :func:`b_matrix` (eq. 56), :func:`mass_matrix` (M*, eq. 82),
:func:`bias_forces` (N* q_dot, eq. 83), :func:`generalized_forces` (F*, eq. 79),
:func:`forward_dynamics` (eq. 84), :func:`inverse_dynamics` and :func:`simulate` (RK4).
These are the literal forms; :mod:`snake_dynamics.fast` holds the recursive, compiled ones.
"""

from __future__ import annotations

from .errors import (
    DivergenceError,
    GaitError,
    ModelError,
    SimulationError,
    SnakeDynamicsError,
    StateError,
)
from .gaits import GAITS, Gait, JointTrajectory, make_gait, staggered_quintic
from .integrators import Servo, SimulationResult, prescribed_torques, simulate, simulate_gait
from .kinematics import b_matrix, b_matrix_dot, link_poses
from .kinetics import (
    bias_forces,
    forward_dynamics,
    generalized_forces,
    inverse_dynamics,
    kinetic_energy,
    mass_matrix,
    potential_energy,
)
from .model import SnakeModel

__all__ = [
    "GAITS",
    "DivergenceError",
    "Gait",
    "GaitError",
    "JointTrajectory",
    "ModelError",
    "Servo",
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
