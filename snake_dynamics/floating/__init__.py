"""The free tail: the floating-base MFM of a snake on its ground (docs/mfm.md, "The floating
base" and "The snake on the ground", eqs. 221-239).

The shared vocabulary (:mod:`.state`: the state, rest and lying states, a model on its
ground, runs and their locomotion, the step check), the literal equations for reading and
for the tests (:mod:`.literal`), and their recursive, compiled forms, one algorithm a
module: the packed model, workspace and chain (:mod:`.workspace`), the articulated-body
recursion (:mod:`.aba`, eq. 227), prescribed joints (:mod:`.prescribed`, eq. 228), the
quaternion RK4 (:mod:`.rk4`, eq. 230), world poses (:mod:`.poses`), the checked wrappers
and the prescribed-joint run (:mod:`.recursive`), and the base tracker the dynamics node
runs (:mod:`.tracker`, eq. 239). Code outside the package imports from here.
"""

from snake_dynamics.floating.aba import forward_dynamics_on_ground
from snake_dynamics.floating.literal import floating_mass_matrix, momentum_free_base_velocity
from snake_dynamics.floating.poses import body_pose, mass_centre_and_heading
from snake_dynamics.floating.recursive import (
    FastFloatingModel,
    floating_forward_dynamics,
    ground_force_list,
    prescribed_joint_dynamics,
    simulate_prescribed_fast,
    warm_up,
)
from snake_dynamics.floating.rk4 import quaternion_rate
from snake_dynamics.floating.state import (
    FloatingRun,
    FloatingState,
    Locomotion,
    MotionFn,
    centre_of_mass,
    check_step,
    heading,
    locomotion,
    lying_state,
    on_the_ground,
    rest_state,
    world_poses,
)
from snake_dynamics.floating.tracker import FastBaseTracker
from snake_dynamics.floating.workspace import (
    FloatingParams,
    FloatingWorkspace,
    floating_workspace,
    quaternion_matrix,
)

__all__ = [
    "FastBaseTracker",
    "FastFloatingModel",
    "FloatingParams",
    "FloatingRun",
    "FloatingState",
    "FloatingWorkspace",
    "Locomotion",
    "MotionFn",
    "body_pose",
    "centre_of_mass",
    "check_step",
    "floating_forward_dynamics",
    "floating_mass_matrix",
    "floating_workspace",
    "forward_dynamics_on_ground",
    "ground_force_list",
    "heading",
    "locomotion",
    "lying_state",
    "mass_centre_and_heading",
    "momentum_free_base_velocity",
    "on_the_ground",
    "prescribed_joint_dynamics",
    "quaternion_matrix",
    "quaternion_rate",
    "rest_state",
    "simulate_prescribed_fast",
    "warm_up",
    "world_poses",
]
