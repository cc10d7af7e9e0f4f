"""MFM dynamics core of mfm_snake (no ROS): the model families and what drives them.

The package is arranged by model family (docs/design.md, "The dynamics core"):

* at the top: the robot description (:mod:`.model`, :mod:`.urdf`), the ground
  (:mod:`.ground`), the servos (:mod:`.servo`), the gaits (:mod:`.gaits`) and the errors;
* :mod:`.mfm`: the fixed-tail Moving Frame Method of the paper (IMECE2019-10434), literal
  (:mod:`.mfm.kinematics`, :mod:`.mfm.kinetics`) beside recursive and compiled
  (:mod:`.mfm.recursive`, on the shared kernels of :mod:`.mfm.spatial`), and the integrators;
* :mod:`.floating`: the free tail on the ground, literal and recursive;
* :mod:`.planar`: the planar snakes (SE(2), the kinematic and the wheeled snake);
* :mod:`.sim`: the simulators behind the nodes and the emulated robot's plant.

Imported here are the names of the literal fixed-tail model, light enough for a launch file:
:func:`link_poses` (E, eq. 17), :func:`b_matrix` (eq. 56), :func:`mass_matrix` (M*, eq. 82),
:func:`bias_forces` (N* q_dot, eq. 83), :func:`generalized_forces` (F*, eq. 79),
:func:`forward_dynamics` (eq. 84), :func:`inverse_dynamics`, and the servo model
(:class:`ServoModel`, eqs. 201-206). The compiled integrators (numba) are imported from
:mod:`snake_dynamics.mfm.integrators` (``simulate``, ``simulate_gait``).
"""

from snake_dynamics.errors import (
    GaitError,
    IdentificationError,
    ModelError,
    SimulationError,
    SingularConfigurationError,
    SnakeDynamicsError,
    SnakeError,
    StateError,
)
from snake_dynamics.gaits import GAITS, Gait, JointTrajectory, make_gait, staggered_quintic
from snake_dynamics.mfm import (
    b_matrix,
    b_matrix_dot,
    bias_forces,
    forward_dynamics,
    generalized_forces,
    inverse_dynamics,
    kinetic_energy,
    link_poses,
    mass_matrix,
    potential_energy,
)
from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import ServoModel, ServoParams

__all__ = [
    "GAITS",
    "Gait",
    "GaitError",
    "IdentificationError",
    "JointTrajectory",
    "ModelError",
    "ServoModel",
    "ServoParams",
    "SimulationError",
    "SingularConfigurationError",
    "SnakeDynamicsError",
    "SnakeError",
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
    "staggered_quintic",
]
