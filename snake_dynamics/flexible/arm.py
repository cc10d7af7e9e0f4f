"""The paper's example: the 4-DOF arm and its PD manoeuvre (docs/flexible.md, "The 4-DOF arm").

Links 1 and 4 rigid, 2 and 3 elastic, two modes of each kind (torsion, xy and xz flexure) on
each elastic link, q in R^16 (F113). The paper's Table I is not in its text; the parameters
here are an aluminium arm of about a metre, chosen and documented in docs/flexible.md.
The frames are the paper's (F114): joint 1 slews about the vertical, R^(1/2) =
Rx(-pi/2) Rz(-pi/2) Rz(q2) turns link 2 up (q2 = 0) into the vertical plane, and joints
2 to 4 pitch in that plane.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from snake_dynamics.flexible.dynamics import FlexibleModel, FlexibleResult, PDManoeuvre
from snake_dynamics.flexible.model import ALUMINIUM, ElasticLink, FlexibleArm, RigidLink, Section

#: Rx(-pi/2) Rz(-pi/2): the fixed rotation before joint 2 (F114).
_R12 = ((0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (1.0, 0.0, 0.0))

#: Initial joint angles (F113 ordering) [rad]: (0, pi/6, 2pi/3, pi/6).
Q_START = (0.0, math.pi / 6, 2 * math.pi / 3, math.pi / 6)
#: The targets from 0.5 s (joints 2-4 to pi/3) and from 3 s (joint 1 to pi/4) [rad].
Q_SLEW_START = 0.5
Q_SLEW_1 = 3.0
T_END = 6.0


def paper_arm(modes: int = 2, damping: float = 0.01, stiffness_scale: float = 1.0) -> FlexibleArm:
    """The 4-DOF arm of the paper's Section VI with the parameters of docs/flexible.md.

    Args:
        modes: assumed modes of each kind on links 2 and 3.
        damping: modal damping ratio of the elastic links [-] (1 %).
        stiffness_scale: multiplies E and G (a stiffer arm for the rigid limit).
    """
    mat = type(ALUMINIUM)(
        ALUMINIUM.young * stiffness_scale, ALUMINIUM.shear * stiffness_scale, ALUMINIUM.density
    )
    column = RigidLink(
        mass=4.0,
        com=(0.0, 0.0, 0.15),
        inertia=((0.0325, 0.0, 0.0), (0.0, 0.0325, 0.0), (0.0, 0.0, 0.005)),
        distal=(0.0, 0.0, 0.30),
        armature=0.05,
    )
    # links 2 and 3: half a metre of tube, clamped at the joint, a mass at the tip
    elastic = functools.partial(
        ElasticLink,
        length=0.5,
        material=mat,
        torsion_modes=modes,
        xy_modes=modes,
        xz_modes=modes,
        boundary="clamped-mass",
        damping=damping,
    )
    upper = elastic(
        section=Section.tube(0.040, 0.002),
        tip_mass=1.0,
        tip_inertia=(1.0e-3, 1.0e-3, 1.0e-3),
        joint_rotation=_R12,
        armature=0.05,
    )
    fore = elastic(
        section=Section.tube(0.030, 0.002),
        tip_mass=0.5,
        tip_inertia=(4.0e-4, 4.0e-4, 4.0e-4),
        armature=0.02,
    )
    hand = RigidLink(
        mass=0.5,
        com=(0.075, 0.0, 0.0),
        inertia=((2.0e-4, 0.0, 0.0), (0.0, 1.2e-3, 0.0), (0.0, 0.0, 1.2e-3)),
        distal=(0.15, 0.0, 0.0),
        armature=0.005,
    )
    return FlexibleArm((column, upper, fore, hand), gravity=(0.0, 0.0, -9.81), name="paper_arm")


def paper_manoeuvre() -> PDManoeuvre:
    """PD hold at the start, (q2, q3, q4) -> (pi/3, pi/3, pi/3) at 0.5 s, q1 -> pi/4 at 3 s."""
    start = np.array(Q_START)
    mid = np.array([0.0, math.pi / 3, math.pi / 3, math.pi / 3])
    end = mid.copy()
    end[0] = math.pi / 4
    return PDManoeuvre(
        kp=np.array([200.0, 300.0, 100.0, 10.0]),
        kd=np.array([40.0, 50.0, 15.0, 0.5]),
        switch_times=np.array([0.0, Q_SLEW_START, Q_SLEW_1]),
        targets=np.vstack([start, mid, end]),
    )


def run_paper_manoeuvre(
    model: FlexibleModel,
    linearized: bool,
    t_end: float = T_END,
    dt: float | None = None,
    every: int = 10,
) -> FlexibleResult:
    """The 6 s manoeuvre from rest, undeformed, at the start angles (F113)."""
    q0 = np.zeros(model.n)
    q0[:4] = Q_START
    man = paper_manoeuvre()
    step = dt if dt is not None else model.stable_step(q0, man.kp, man.kd)
    return model.simulate(man.inputs(step, t_end), q0, np.zeros(model.n), linearized, every)
