"""The paper's fixed-tail Moving Frame Method (docs/mfm.md, "Kinematics of the chain" to
"Inverse dynamics").

This face names the literal model, light enough for a launch file: the frames and the B
matrix (:mod:`.kinematics`, eqs. 17, 56), M*, N* q_dot, F* and the dynamics
(:mod:`.kinetics`, eqs. 79, 82-84), and the Lie algebra they use (:mod:`.lie`). The compiled
forms load numba and are imported by module: :mod:`.spatial` (the kernels both recursions
share), :mod:`.recursive` (the same quantities in O(n), the servo law) and
:mod:`.integrators` (the RK4 loops, ``simulate``, ``simulate_gait``).
"""

from snake_dynamics.mfm.kinematics import (
    FrameKinematics,
    b_matrix,
    b_matrix_dot,
    frame_kinematics,
    joint_vector,
    link_poses,
)
from snake_dynamics.mfm.kinetics import (
    bias_forces,
    body_wrenches,
    forward_dynamics,
    generalized_forces,
    inverse_dynamics,
    kinetic_energy,
    mass_matrix,
    potential_energy,
)
from snake_dynamics.mfm.lie import axis_rotation, frame_connection, hat, vee

__all__ = [
    "FrameKinematics",
    "axis_rotation",
    "b_matrix",
    "b_matrix_dot",
    "bias_forces",
    "body_wrenches",
    "forward_dynamics",
    "frame_connection",
    "frame_kinematics",
    "generalized_forces",
    "hat",
    "inverse_dynamics",
    "joint_vector",
    "kinetic_energy",
    "link_poses",
    "mass_matrix",
    "potential_energy",
    "vee",
]
