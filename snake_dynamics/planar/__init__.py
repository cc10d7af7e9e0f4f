"""The planar snakes (docs/models.md): SE(2) (:mod:`.se2`), the kinematic snake of lateral
undulation (:mod:`.kinematic`), the wheeled snake by Kane's method (:mod:`.wheeled`, with
its operation count, :mod:`.op_count`), and the cross-checks of both against the floating
MFM on the ground (:mod:`.crosscheck`). The modules share some names (``link_poses``,
``constraint_matrix``, ``simulate``): those are imported by module.
"""

from snake_dynamics.planar import se2
from snake_dynamics.planar.crosscheck import (
    Convergence,
    convergence_error,
    coulomb_ground,
    floating_twin,
    viscous_ground,
    wheeled_cycle_displacement,
)
from snake_dynamics.planar.kinematic import DIAGONAL_TOL, LateralUndulation, cycle_displacement
from snake_dynamics.planar.op_count import OperationCount
from snake_dynamics.planar.wheeled import (
    KaneConstants,
    WheeledRun,
    WheeledSnake,
    kane_matrices,
    kane_recursion,
    link_positions,
    link_speeds,
)

__all__ = [
    "DIAGONAL_TOL",
    "Convergence",
    "KaneConstants",
    "LateralUndulation",
    "OperationCount",
    "WheeledRun",
    "WheeledSnake",
    "convergence_error",
    "coulomb_ground",
    "cycle_displacement",
    "floating_twin",
    "kane_matrices",
    "kane_recursion",
    "link_positions",
    "link_speeds",
    "se2",
    "viscous_ground",
    "wheeled_cycle_displacement",
]
