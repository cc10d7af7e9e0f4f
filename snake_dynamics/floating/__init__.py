"""The free tail: the floating-base MFM of a snake on its ground (docs/mfm.md, "The floating
base" and "The snake on the ground", eqs. 221-239).

The shared vocabulary (:mod:`.state`: the state, rest and lying states, a model on its
ground, runs and their locomotion, the step check), the literal equations for reading and
for the tests (:mod:`.literal`), and their recursive, compiled forms (:mod:`.recursive`
and the kernels beside it), with the base tracker the dynamics node runs. Code outside the
package imports from here.
"""

from snake_dynamics.floating.literal import floating_mass_matrix, momentum_free_base_velocity
from snake_dynamics.floating.recursive import (
    FastBaseTracker,
    FastFloatingModel,
    FloatingParams,
    FloatingWorkspace,
    body_pose,
    floating_forward_dynamics,
    floating_workspace,
    forward_dynamics_on_ground,
    ground_force_list,
    mass_centre_and_heading,
    prescribed_joint_dynamics,
    quaternion_matrix,
    quaternion_rate,
    simulate_prescribed_fast,
    warm_up,
)
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
