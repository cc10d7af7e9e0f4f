"""The snake of a :class:`SnakeModel` as MuJoCo's MJCF text: the same bodies, frames, masses,
inertias, pivots and joint axes (docs/models.md, eq. 48), on a plane with MuJoCo's own soft
contacts and anisotropic friction by explicit floor-geom pairs. Shared by the MuJoCo plant
(:mod:`snake_dynamics.sim.mujoco_plant.engine`) and ``bench/locomotion.py``. Text only: no
MuJoCo import.

Body b's frame is its CM with the long axis y, as the model's; body k sits
(L_{k-1} + L_k) / 2 along its parent's y, its hinge ``joint_k`` at -L_k / 2 (the pivot)
about a_k (the same vector in the parent's and the child's frame). With ``horns`` a servo
horn body ``horn_k`` sits at the pivot on a hinge ``servo_k`` and carries body k on
``joint_k``: the body's joint angle is servo_k + joint_k. Geoms collide only through the
``<pair>`` list; friction (mu_along, mu_across) lies along and across each body because a
capsule's contact frame has its first tangent on the capsule's axis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from snake_dynamics.model import SnakeModel

FloatArray = NDArray[np.float64]

#: A horn body's mass [kg] and inertia [kg m^2]: MuJoCo needs a moving body to have some;
#: its rotation's inertia is the hinge's armature (the rotor through the gears).
HORN_MASS = 1e-4
HORN_INERTIA = 1e-9
#: The gears' friction loss's impedance (MuJoCo's solimpfriction): MuJoCo's friction loss
#: is a soft constraint, which lets a joint creep under a torque below it; at 0.999 (the
#: default 0.9) a head joint with the rotor's armature crept 0.03 mrad in 0.5 s under 2/3 of
#: it, against 3 mrad at the default (test_mujoco_plant.py).
FRICTION_IMPEDANCE = (0.999, 0.9999, 0.001)


@dataclass(frozen=True)
class MjcfOptions:
    """How the model becomes MJCF.

    Attributes:
        timestep: MuJoCo's step [s].
        integrator: MuJoCo's integrator name.
        cone: ``pyramidal`` or ``elliptic``.
        solref: the contacts' (time constant [s], damping ratio), None: MuJoCo's default.
        solimp: the contacts' impedance (d0, d_width, width [m]), None: MuJoCo's default.
        rail_radius: with the ground's ``width`` > 0, two capsules of this radius [m] along
            each body at its bottom edges; None, or a round body: one capsule of the body's
            radius.
        horns: a horn body per joint between the servo and the body (see the module).
        armature: rotor inertia through the gears on each servo's hinge [kg m^2].
        frictionloss: the gears' Coulomb friction on each servo's hinge [N m].
        motors: a ``<general>`` motor per servo hinge, force = ctrl - D qdot (D set at run
            time in ``biasprm[2]``).
        floor_friction: the torsional and rolling coefficients after (along, across).
    """

    timestep: float = 0.001
    integrator: str = "RK4"
    cone: str = "pyramidal"
    solref: tuple[float, float] | None = None
    solimp: tuple[float, float, float] | None = None
    rail_radius: float | None = None
    horns: bool = False
    armature: float = 0.0
    frictionloss: float = 0.0
    motors: bool = False
    floor_friction: tuple[float, float, float] = (0.005, 0.0001, 0.0001)


def _num(x: float) -> str:
    return repr(float(x))


def _vec(v: Sequence[float] | FloatArray) -> str:
    return " ".join(_num(x) for x in v)


def snake_mjcf(model: SnakeModel, options: MjcfOptions, actuators: Sequence[str] = ()) -> str:
    """The MJCF of ``model``: a free tail on a plane with gravity if it has a ``ground``
    (friction mu_along, mu_across), else a fixed tail in the model's gravity and no floor.

    Args:
        model: the snake (masses and inertias as given: scale them before).
        options: see :class:`MjcfOptions`.
        actuators: more ``<actuator>`` lines (e.g. a benchmark's position servos).
    """
    ground = model.ground
    n = model.n_joints
    height = float(np.max(model.radii))
    servo_hinge = "servo" if options.horns else "joint"
    lines = [
        f'<mujoco model="{model.name}">',
        '  <compiler angle="radian" inertiafromgeom="false" autolimits="true"/>',
        f'  <option timestep="{_num(options.timestep)}" integrator="{options.integrator}" '
        f'cone="{options.cone}" gravity="{_vec(model.gravity)}"/>',
        "  <worldbody>",
    ]
    if ground is not None:
        lines.append(
            '    <geom name="floor" type="plane" size="0 0 1" contype="0" conaffinity="0"/>'
        )
    joint_extras = ""
    if options.armature > 0.0:
        joint_extras += f' armature="{_num(options.armature)}"'
    if options.frictionloss > 0.0:
        joint_extras += (
            f' frictionloss="{_num(options.frictionloss)}" '
            f'solimpfriction="{_vec(FRICTION_IMPEDANCE)}"'
        )
    geoms: list[str] = []

    def body_geoms(b: int, indent: str) -> None:
        half = 0.5 * float(model.lengths[b])
        radius = float(model.radii[b])
        rail = options.rail_radius
        width = 0.0 if ground is None else ground.width
        if rail is None or width <= 0.0:
            geoms.append(f"body_{b}")
            lines.append(
                f'{indent}<geom name="body_{b}" type="capsule" size="{_num(radius)}" '
                f'fromto="0 {_num(-half)} 0 0 {_num(half)} 0" contype="0" conaffinity="0"/>'
            )
            return
        x, z, end = 0.5 * width - rail, -radius + rail, half - rail
        for side, sx in (("l", -x), ("r", x)):
            name = f"body_{b}_{side}"
            geoms.append(name)
            lines.append(
                f'{indent}<geom name="{name}" type="capsule" size="{_num(rail)}" '
                f'fromto="{_num(sx)} {_num(-end)} {_num(z)} {_num(sx)} {_num(end)} {_num(z)}" '
                'contype="0" conaffinity="0"/>'
            )

    def body(b: int, indent: str) -> None:
        j = model.inertias[b]
        full = [j[0, 0], j[1, 1], j[2, 2], j[0, 1], j[0, 2], j[1, 2]]
        half = 0.5 * float(model.lengths[b])
        opened = 1
        if b == 0:
            lines.append(f'{indent}<body name="body_0" pos="0 0 {_num(height)}">')
            if ground is not None:
                lines.append(f'{indent}  <freejoint name="base"/>')
        else:
            axis = _vec(model.axes[b - 1])
            pivot = 0.5 * float(model.lengths[b - 1])
            if options.horns:
                lines.append(f'{indent}<body name="horn_{b}" pos="0 {_num(pivot)} 0">')
                lines.append(
                    f'{indent}  <joint name="servo_{b}" type="hinge" pos="0 0 0" '
                    f'axis="{axis}"{joint_extras}/>'
                )
                lines.append(
                    f'{indent}  <inertial pos="0 0 0" mass="{_num(HORN_MASS)}" '
                    f'diaginertia="{_vec([HORN_INERTIA] * 3)}"/>'
                )
                indent += "  "
                opened = 2
                lines.append(f'{indent}<body name="body_{b}" pos="0 {_num(half)} 0">')
                lines.append(
                    f'{indent}  <joint name="joint_{b}" type="hinge" pos="0 {_num(-half)} 0" '
                    f'axis="{axis}"/>'
                )
            else:
                lines.append(f'{indent}<body name="body_{b}" pos="0 {_num(pivot + half)} 0">')
                lines.append(
                    f'{indent}  <joint name="joint_{b}" type="hinge" pos="0 {_num(-half)} 0" '
                    f'axis="{axis}"{joint_extras}/>'
                )
        lines.append(
            f'{indent}  <inertial pos="0 0 0" mass="{_num(model.masses[b])}" '
            f'fullinertia="{_vec(full)}"/>'
        )
        body_geoms(b, indent + "  ")
        if b < n:
            body(b + 1, indent + "  ")
        for k in range(opened):
            lines.append(f"{indent[: len(indent) - 2 * k]}</body>")

    body(0, "    ")
    lines.append("  </worldbody>")
    if ground is not None:
        mu = _vec([ground.mu_along, ground.mu_across, *options.floor_friction])
        soft = ""
        if options.solref is not None:
            soft += f' solref="{_vec(options.solref)}"'
        if options.solimp is not None:
            soft += f' solimp="{_vec(options.solimp)}"'
        lines.append("  <contact>")
        for geom in geoms:
            lines.append(
                f'    <pair geom1="floor" geom2="{geom}" condim="3" friction="{mu}"{soft}/>'
            )
        lines.append("  </contact>")
    extra = list(actuators)
    if options.motors:
        extra = [
            f'    <general name="motor_{k}" joint="{servo_hinge}_{k}" gaintype="fixed" '
            'gainprm="1" biastype="affine" biasprm="0 0 0"/>'
            for k in range(1, n + 1)
        ] + extra
    if extra:
        lines += ["  <actuator>", *extra, "  </actuator>"]
    lines.append("</mujoco>")
    return "\n".join(lines) + "\n"
