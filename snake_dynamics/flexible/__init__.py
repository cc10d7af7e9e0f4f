"""Elastic links: the flexible-manipulator model of the dual Lie group paper (docs/flexible.md).

The paper's dual algebra (:mod:`.dual`), the assumed modes (:mod:`.modes`), the arm of rigid
and elastic links (:mod:`.model`), its compiled Kane's equations, nonlinear and linearised in
the elastic coordinates (:mod:`.kernel`, :mod:`.dynamics`), and the paper's 4-DOF example
(:mod:`.arm`).
"""

from snake_dynamics.flexible.arm import paper_arm, paper_manoeuvre, run_paper_manoeuvre
from snake_dynamics.flexible.dynamics import (
    FlexibleModel,
    FlexibleResult,
    PDManoeuvre,
    StageInputs,
    warm_up,
)
from snake_dynamics.flexible.model import (
    ALUMINIUM,
    ElasticLink,
    FlexibleArm,
    Material,
    RigidLink,
    Section,
    arm_from_dict,
    arm_from_yaml,
    elastic_stiffness,
)
from snake_dynamics.flexible.modes import BendingModes, TorsionModes, bending_modes, torsion_modes

__all__ = [
    "ALUMINIUM",
    "BendingModes",
    "ElasticLink",
    "FlexibleArm",
    "FlexibleModel",
    "FlexibleResult",
    "Material",
    "PDManoeuvre",
    "RigidLink",
    "Section",
    "StageInputs",
    "TorsionModes",
    "arm_from_dict",
    "arm_from_yaml",
    "bending_modes",
    "elastic_stiffness",
    "paper_arm",
    "paper_manoeuvre",
    "run_paper_manoeuvre",
    "torsion_modes",
    "warm_up",
]
