"""The MuJoCo plant's plant-file keys: ``mujoco:`` (the engine's contact and integration)
and ``effects:`` (what the MFM model leaves out), with their defaults and where each default
comes from (docs/hardware.md, "A plant that is not the model"). No MuJoCo import here: a
plant file is checked before anything starts, on a machine without MuJoCo too.

Every default is a figure for the MG996R-class servos of config/robot.yaml (6 V, the
TowerPro datasheet: stall torque 1.08 N m, no-load speed 7.48 rad/s, stall current 2.5 A)
or a typical hobby-servo figure; each constant below names its source.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from snake_dynamics.errors import ModelError

#: MuJoCo's integrators a plant may take.
INTEGRATORS = ("Euler", "implicitfast", "implicit", "RK4")
#: MuJoCo's friction cones.
CONES = ("pyramidal", "elliptic")

_MUJOCO_KEYS = (
    "timestep",
    "integrator",
    "cone",
    "contact_timeconst",
    "contact_dampratio",
    "contact_impedance",
    "rail_radius",
)
_EFFECT_KEYS = (
    "seed",
    "servo_spread",
    "backlash",
    "frictionloss",
    "armature",
    "battery",
    "bracket",
)
_BATTERY_KEYS = ("open_voltage", "nominal_voltage", "resistance", "stall_current", "idle_current")
_BRACKET_KEYS = ("stiffness", "damping")


@dataclass(frozen=True)
class MujocoParams:
    """The engine's own settings (plant-file ``mujoco:``).

    Attributes:
        timestep: MuJoCo's step h [s]; the plant's 1 ms step is a whole number of them.
            0.5 ms: the stiffest explicit spring (a bracket on the head, 200 N m/rad on
            ~1.7e-4 kg m^2) then rings at omega h = 0.54, inside semi-implicit Euler's 2.
        integrator: MuJoCo's integrator (``implicitfast``: the servo's damping and the
            torque-speed line's slope implicit, MuJoCo's recommendation).
        cone: MuJoCo's friction cone (``elliptic``: Coulomb's circle, as the model's).
        contact_timeconst: solref[0], the contact's time constant [s]; MuJoCo asks for at
            least two steps. 2 ms: about the model's contact (25 000 N/m per point on a
            0.1 kg body rings at ~1.6 ms per radian).
        contact_dampratio: solref[1], the contact's damping ratio (1: critical).
        contact_impedance: solimp (d0, d_width, width [m]): the constraint's impedance,
            MuJoCo's default (0.9, 0.95, 0.001).
        rail_radius: a flat underside (the ground's ``width`` > 0) is two capsules of this
            radius [m] along the body at its bottom edges (MuJoCo's contact frame of a
            capsule lies along its axis, so friction along and across a body are its
            two tangents); round bodies are one capsule of the body's radius. 1 mm: the
            printed shell's rounded edge; the rails then bear where the model's box corners
            do (at 5 mm, 4 mm inboard, a crawl went 12 % less far).
    """

    timestep: float = 0.0005
    integrator: str = "implicitfast"
    cone: str = "elliptic"
    contact_timeconst: float = 0.002
    contact_dampratio: float = 1.0
    contact_impedance: tuple[float, float, float] = (0.9, 0.95, 0.001)
    rail_radius: float = 0.001


#: The MG996R's stall current at 6 V [A] (TowerPro datasheet: 2.5 A).
MG996R_STALL_CURRENT = 2.5
#: Its idle current [A] (datasheet: 10 mA at 6 V).
MG996R_IDLE_CURRENT = 0.01
#: A small brushed motor's electrical time constant L / R [s]: 0.5-2 ms for the 280/370
#: sizes (motor datasheets' terminal inductance over resistance).
ELECTRICAL_TIME_CONSTANT = 0.001


@dataclass(frozen=True)
class Battery:
    """The servos' supply: an open-circuit voltage behind an internal resistance
    (docs/hardware.md, eq. 250). Every servo's stall torque and no-load speed are the
    plant's at ``nominal_voltage`` and scale with the terminal voltage.

    Attributes:
        open_voltage: the pack's open-circuit voltage [V]: 5 NiMH cells at 1.2 V.
        nominal_voltage: the voltage the servo parameters hold at [V] (the datasheet's 6 V).
        resistance: internal resistance plus wiring [ohm], > 0: five AA NiMH cells of
            ~20 mOhm each (cell datasheets: 15-30 mOhm) plus ~0.05 Ohm of leads, switch and
            connectors.
        stall_current: one servo's current at stall at ``nominal_voltage`` [A] (datasheet
            2.5 A); current is torque over k_t = stall_torque / stall_current.
        idle_current: one powered servo's current at rest [A] (datasheet 10 mA).

    The motors' current follows their torque with the electrical time constant
    :data:`ELECTRICAL_TIME_CONSTANT` (which also keeps the loop of current, voltage and
    torque from ringing from step to step).
    """

    open_voltage: float = 6.0
    nominal_voltage: float = 6.0
    resistance: float = 0.15
    stall_current: float = MG996R_STALL_CURRENT
    idle_current: float = MG996R_IDLE_CURRENT


@dataclass(frozen=True)
class Bracket:
    """The compliant bracket between a servo's horn and the next body: a passive torsional
    spring and damper about the joint axis (eq. 252).

    Attributes:
        stiffness: [N m/rad] > 0; 200: a printed PLA bracket and a plastic horn spline
            deflect ~0.3 deg under the stall torque (1.08 N m / 0.0054 rad), an estimate
            for a stiff bracket, not a measurement.
        damping: [N m s/rad] >= 0; 0.02: about 5 % of critical on the head body.
    """

    stiffness: float = 200.0
    damping: float = 0.02


@dataclass(frozen=True)
class Effects:
    """What the MFM model leaves out (plant-file ``effects:``; each off at 0 or null).

    Attributes:
        seed: the servo spread's generator seed.
        servo_spread: each joint's K, D, T_s and w_0 times its own factor drawn uniformly in
            [1 - spread, 1 + spread] (eq. 249). 0.15: hobby servos of one batch differ by
            10-20 % in torque and speed (issue 37; reviewers' bench tests of MG996R clones).
        backlash: the gear train's free play, full width [rad] (eq. 251). 0.0087 (0.5 deg):
            a metal-gear hobby servo's typical play at the horn; needs the bracket, through
            whose spring the teeth meet.
        frictionloss: the gears' Coulomb friction at the output [N m], MuJoCo's
            ``frictionloss`` (eq. 253). 0.03: an estimate, ~3 % of the stall torque (spur
            gear trains of 4-5 stages lose 5-10 % of the motor torque, part of it Coulomb).
        armature: the rotor's inertia through the gear ratio [kg m^2], MuJoCo's
            ``armature`` (eq. 254). 0.003: the motor's mechanical time constant (20 ms, the
            middle of 10-30 ms for iron-core brushed motors of the 280/370 size) times the
            torque-speed slope T_s / w_0 = 0.144 N m s/rad.
        battery: the supply's sag (None: an ideal supply).
        bracket: the horn-to-body spring (None: rigid).
    """

    seed: int = 3
    servo_spread: float = 0.15
    backlash: float = 0.0087
    frictionloss: float = 0.03
    armature: float = 0.003
    battery: Battery | None = Battery()
    bracket: Bracket | None = Bracket()

    @property
    def horns(self) -> bool:
        """Whether each servo's horn is a body of its own (a bracket, with or without
        backlash, between it and the next body)."""
        return self.bracket is not None


#: Every effect off: the MuJoCo plant as close to the MFM plant as its engine allows.
NO_EFFECTS = Effects(
    servo_spread=0.0, backlash=0.0, frictionloss=0.0, armature=0.0, battery=None, bracket=None
)


def _number(value: object, where: str, low: float, closed: bool, unit: str) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    ok = ok and math.isfinite(float(value))  # type: ignore[arg-type]
    ok = ok and (float(value) >= low if closed else float(value) > low)  # type: ignore[arg-type]
    if not ok:
        bound = f"{'>=' if closed else '>'} {low:g}"
        raise ModelError(f"{where} must be a number {bound} {unit}, got {value!r}")
    return float(value)  # type: ignore[arg-type]


def _mapping(value: object, where: str, keys: tuple[str, ...]) -> Mapping[str, object]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ModelError(f"{where} must be a mapping with keys {list(keys)}, got {value!r}")
    unknown = sorted(set(value) - set(keys))
    if unknown:
        raise ModelError(f"{where}: unknown keys {unknown}; allowed {list(keys)}")
    return value


def mujoco_from_dict(doc: object) -> MujocoParams:
    """The ``mujoco:`` section (None: the defaults).

    Raises:
        ModelError: unknown keys, bad values; one line naming the key.
    """
    spec = _mapping(doc, "mujoco", _MUJOCO_KEYS)
    base = MujocoParams()
    timestep = _number(spec.get("timestep", base.timestep), "mujoco.timestep", 0.0, False, "s")
    substeps = 1e-3 / timestep
    if timestep > 1e-3 or abs(substeps - round(substeps)) > 1e-9:
        raise ModelError(
            f"mujoco.timestep must divide the plant's 1 ms step (0.001, 0.0005, ...), "
            f"got {timestep!r}"
        )
    for key, choices in (("integrator", INTEGRATORS), ("cone", CONES)):
        value = spec.get(key, getattr(base, key))
        if value not in choices:
            raise ModelError(f"mujoco.{key} must be one of {list(choices)}, got {value!r}")
    timeconst = _number(
        spec.get("contact_timeconst", base.contact_timeconst),
        "mujoco.contact_timeconst",
        0.0,
        False,
        "s",
    )
    if timeconst < 2.0 * timestep:
        raise ModelError(
            f"mujoco.contact_timeconst must be at least two steps (2 x mujoco.timestep = "
            f"{2.0 * timestep:g} s): MuJoCo's contact is unstable below, got {timeconst!r}"
        )
    impedance = spec.get("contact_impedance", list(base.contact_impedance))
    if (
        not isinstance(impedance, list | tuple)
        or len(impedance) != 3
        or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in impedance)
        or not (0.0 < impedance[0] < 1.0 and 0.0 < impedance[1] < 1.0 and impedance[2] > 0.0)
    ):
        raise ModelError(
            "mujoco.contact_impedance must be [d0, d_width, width] with 0 < d0, d_width < 1 "
            f"and width > 0 m, got {impedance!r}"
        )
    return MujocoParams(
        timestep=timestep,
        integrator=str(spec.get("integrator", base.integrator)),
        cone=str(spec.get("cone", base.cone)),
        contact_timeconst=timeconst,
        contact_dampratio=_number(
            spec.get("contact_dampratio", base.contact_dampratio),
            "mujoco.contact_dampratio",
            0.0,
            False,
            "",
        ),
        contact_impedance=(float(impedance[0]), float(impedance[1]), float(impedance[2])),
        rail_radius=_number(
            spec.get("rail_radius", base.rail_radius), "mujoco.rail_radius", 0.0, False, "m"
        ),
    )


def effects_from_dict(doc: object) -> Effects:
    """The ``effects:`` section (None: every effect at its default).

    Raises:
        ModelError: unknown keys, bad values, or effects that need another (backlash
            without a bracket, a bracket without a rotor); one line naming the key.
    """
    spec = _mapping(doc, "effects", _EFFECT_KEYS)
    base = Effects()
    seed = spec.get("seed", base.seed)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ModelError(f"effects.seed must be an integer >= 0, got {seed!r}")
    spread = _number(
        spec.get("servo_spread", base.servo_spread), "effects.servo_spread", 0.0, True, ""
    )
    if spread >= 0.5:
        raise ModelError(f"effects.servo_spread must be below 0.5 (a ratio), got {spread!r}")
    battery: Battery | None = base.battery
    if "battery" in spec:
        battery = None if spec["battery"] is None else _battery(spec["battery"])
    bracket: Bracket | None = base.bracket
    if "bracket" in spec:
        bracket = None if spec["bracket"] is None else _bracket(spec["bracket"])
    effects = Effects(
        seed=seed,
        servo_spread=spread,
        backlash=_number(spec.get("backlash", base.backlash), "effects.backlash", 0.0, True, "rad"),
        frictionloss=_number(
            spec.get("frictionloss", base.frictionloss), "effects.frictionloss", 0.0, True, "N m"
        ),
        armature=_number(
            spec.get("armature", base.armature), "effects.armature", 0.0, True, "kg m^2"
        ),
        battery=battery,
        bracket=bracket,
    )
    if effects.backlash > 0.0 and effects.bracket is None:
        raise ModelError(
            "effects.backlash needs effects.bracket: the teeth meet through the bracket's "
            "spring (give a bracket, or backlash: 0)"
        )
    if effects.bracket is not None and effects.armature <= 0.0:
        raise ModelError(
            "effects.bracket needs effects.armature > 0 kg m^2: the horn it couples to the "
            "body turns with the rotor's inertia"
        )
    return effects


def _battery(doc: object) -> Battery:
    spec = _mapping(doc, "effects.battery", _BATTERY_KEYS)
    base = Battery()
    values = {}
    for key, unit, closed in (
        ("open_voltage", "V", False),
        ("nominal_voltage", "V", False),
        ("resistance", "ohm", False),
        ("stall_current", "A", False),
        ("idle_current", "A", True),
    ):
        values[key] = _number(
            spec.get(key, getattr(base, key)), f"effects.battery.{key}", 0.0, closed, unit
        )
    return Battery(**values)


def _bracket(doc: object) -> Bracket:
    spec = _mapping(doc, "effects.bracket", _BRACKET_KEYS)
    base = Bracket()
    return Bracket(
        stiffness=_number(
            spec.get("stiffness", base.stiffness),
            "effects.bracket.stiffness",
            0.0,
            False,
            "N m/rad",
        ),
        damping=_number(
            spec.get("damping", base.damping), "effects.bracket.damping", 0.0, True, "N m s/rad"
        ),
    )
