"""Joint <-> servo channel map and calibration, from the ``servos:`` section of robot.yaml.

Joint limits come from the model (``model.links[].limits``), so the dynamics, the URDF
and the servos share one set. The pulse mapping is PROTOCOL.md's "Calibration":
servo angle s = direction * clamp(a, min, max) + zero_offset, pulse = centre + s * range
/ travel. Angles here are radians; the wire uses integer centidegrees. A joint whose servo
brings its potentiometer out has a ``feedback:`` calibration (PROTOCOL.md's "Feedback"):
the ADC readings at two known joint angles; the firmware then reports that joint's angle as
measured, the others as its estimate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from snake_dynamics import SnakeModel
from snake_dynamics.robot import Robot

from .errors import DriverError
from .protocol import (
    ADC_MAX,
    MAX_CHANNELS,
    ConfigChannel,
    ConfigFeedback,
    ConfigSystem,
    SetTargets,
    WatchdogAction,
)

_CHANNEL_KEYS = {
    "channel",
    "direction",
    "zero_offset_deg",
    "pulse_min_us",
    "pulse_max_us",
    "travel_deg",
    "feedback",
}
_FEEDBACK_KEYS = {"adc_lo", "angle_lo_deg", "adc_hi", "angle_hi_deg"}
_DRIVER_KEYS = {"watchdog_ms", "watchdog_action", "telemetry_period_ms", "servo_speed_deg_s"}
_SECTION_KEYS = {"defaults", "joints", "driver"}


def _unknown_keys(where: str, keys: Iterable[Any], known: set[str]) -> None:
    """Raise for keys outside ``known``: one line naming them and the known ones."""
    extra = sorted(str(k) for k in set(keys) - known)
    if extra:
        raise CalibrationError(f"{where}: unknown keys {extra}; known keys {sorted(known)}")


class CalibrationError(DriverError, ValueError):
    """A servo section that cannot drive the robot; the message names the field."""


def to_cdeg(angle_rad: float) -> int:
    """Radians to integer centidegrees (rounded half away from zero)."""
    value = math.degrees(angle_rad) * 100.0
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


def from_cdeg(cdeg: int) -> float:
    """Integer centidegrees to radians."""
    return math.radians(cdeg / 100.0)


@dataclass(frozen=True)
class FeedbackCalibration:
    """Two points of a servo's potentiometer: the firmware maps ADC readings between them
    linearly to joint angles, clamped to the angles between them (PROTOCOL.md, "Feedback").

    Attributes:
        adc_lo: ADC reading at angle_lo [counts of 1/1024 of the reference], < adc_hi.
        angle_lo: joint angle at adc_lo [rad].
        adc_hi: ADC reading at angle_hi [counts], <= 1023.
        angle_hi: joint angle at adc_hi [rad]; lower than angle_lo for a reversed pot.
    """

    adc_lo: int
    angle_lo: float
    adc_hi: int
    angle_hi: float

    def config_message(self, channel: int) -> ConfigFeedback:
        """The CONFIG_FEEDBACK message that loads this calibration for a channel."""
        return ConfigFeedback(
            channel, True, self.adc_lo, to_cdeg(self.angle_lo), self.adc_hi, to_cdeg(self.angle_hi)
        )


@dataclass(frozen=True)
class ChannelCalibration:
    """One joint's servo.

    Attributes:
        joint: joint name (``joint_k``).
        channel: servo channel 0..15.
        direction: +1 or -1 (servo angle per joint angle).
        zero_offset: servo angle at joint angle 0 [rad].
        lower: lower joint limit [rad].
        upper: upper joint limit [rad].
        pulse_min_us: shortest pulse [us].
        pulse_max_us: longest pulse [us].
        travel: servo angle swept by the pulse range [rad].
        feedback: the potentiometer's calibration, or None: no feedback (the firmware's
            estimate stands for the angle).
    """

    joint: str
    channel: int
    direction: int
    zero_offset: float
    lower: float
    upper: float
    pulse_min_us: int
    pulse_max_us: int
    travel: float
    feedback: FeedbackCalibration | None = None

    def clamp(self, angle: float) -> float:
        """The angle within the joint limits [rad]."""
        return min(max(angle, self.lower), self.upper)

    def pulse_us(self, angle: float) -> int:
        """The pulse width the firmware outputs for joint angle ``angle`` [rad] (PROTOCOL.md)."""
        cdeg = min(max(to_cdeg(angle), to_cdeg(self.lower)), to_cdeg(self.upper))
        servo = self.direction * cdeg + to_cdeg(self.zero_offset)
        centre = (self.pulse_min_us + self.pulse_max_us) / 2.0
        pulse = centre + servo * (self.pulse_max_us - self.pulse_min_us) / to_cdeg(self.travel)
        return int(min(max(math.floor(pulse + 0.5), self.pulse_min_us), self.pulse_max_us))

    def config_message(self) -> ConfigChannel:
        """The CONFIG_CHANNEL message that loads this calibration into the firmware."""
        return ConfigChannel(
            channel=self.channel,
            direction=self.direction,
            zero_offset_cdeg=to_cdeg(self.zero_offset),
            min_cdeg=to_cdeg(self.lower),
            max_cdeg=to_cdeg(self.upper),
            pulse_min_us=self.pulse_min_us,
            pulse_max_us=self.pulse_max_us,
            travel_cdeg=to_cdeg(self.travel),
        )


@dataclass(frozen=True)
class ServoMap:
    """All channels, in joint order, and the firmware's system settings."""

    channels: tuple[ChannelCalibration, ...]
    system: ConfigSystem

    @property
    def joint_names(self) -> list[str]:
        """Joint names in channel-map order."""
        return [c.joint for c in self.channels]

    def by_joint(self) -> dict[str, ChannelCalibration]:
        """Calibration per joint name."""
        return {c.joint: c for c in self.channels}

    def config_messages(self) -> list[ConfigChannel | ConfigFeedback | ConfigSystem]:
        """Everything the firmware needs after a (re)connect: system, channels, then each
        channel's feedback (off where there is none, clearing an earlier session's)."""
        return [
            self.system,
            *(c.config_message() for c in self.channels),
            *(
                ConfigFeedback(c.channel, on=False)
                if c.feedback is None
                else c.feedback.config_message(c.channel)
                for c in self.channels
            ),
        ]

    def targets(
        self, positions: Mapping[str, float], duration_ms: int = 0
    ) -> tuple[SetTargets, list[str]]:
        """One SET_TARGETS frame for the channels 0 .. max channel, and the clamped joints.

        Joints without a new position keep their previous target only if the caller
        passes them; every mapped joint must be in ``positions``.

        Raises:
            CalibrationError: a mapped joint is missing from ``positions``.
        """
        missing = [c.joint for c in self.channels if c.joint not in positions]
        if missing:
            raise CalibrationError(f"no position for joints {missing}")
        size = max(c.channel for c in self.channels) + 1
        cdeg = [0] * size
        clamped = []
        for c in self.channels:
            angle = positions[c.joint]
            safe = c.clamp(angle)
            if safe != angle:
                clamped.append(c.joint)
            cdeg[c.channel] = to_cdeg(safe)
        return SetTargets(tuple(cdeg), duration_ms=duration_ms), clamped


def _number(section: Mapping[str, Any], key: str, where: str, default: float) -> float:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise CalibrationError(f"{where}.{key} must be a finite number, got {value!r}")
    return float(value)


def _feedback(spec: Any, where: str) -> FeedbackCalibration | None:
    """A joint's ``feedback:`` entry (null: none), checked as the firmware checks it."""
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        raise CalibrationError(f"{where} must be a mapping {sorted(_FEEDBACK_KEYS)} or null")
    if set(spec) != _FEEDBACK_KEYS:
        raise CalibrationError(f"{where} needs exactly the keys {sorted(_FEEDBACK_KEYS)}")
    adc_lo, adc_hi = spec["adc_lo"], spec["adc_hi"]
    lo, hi = _number(spec, "angle_lo_deg", where, 0.0), _number(spec, "angle_hi_deg", where, 0.0)
    if not all(isinstance(a, int) and not isinstance(a, bool) for a in (adc_lo, adc_hi)) or not (
        0 <= adc_lo < adc_hi <= ADC_MAX
    ):
        raise CalibrationError(
            f"{where}: need integer readings 0 <= adc_lo < adc_hi <= {ADC_MAX}, "
            f"got {adc_lo!r} and {adc_hi!r}"
        )
    if not (-180.0 <= lo <= 180.0 and -180.0 <= hi <= 180.0) or round(lo * 100) == round(hi * 100):
        raise CalibrationError(
            f"{where}: need two different angles within [-180, 180] deg, got {lo} and {hi}"
        )
    return FeedbackCalibration(adc_lo, math.radians(lo), adc_hi, math.radians(hi))


def servo_map(spec: Mapping[str, Any], model: SnakeModel, where: str = "servos") -> ServoMap:
    """Build and validate the servo map (see config/robot.yaml for the format).

    Raises:
        CalibrationError: unknown keys, unknown joints, a joint without a channel, duplicate
            channels, or a value outside PROTOCOL.md's calibration ranges.
    """
    _unknown_keys(where, spec, _SECTION_KEYS)
    defaults = dict(spec.get("defaults") or {})
    joints = spec.get("joints")
    if not isinstance(joints, Mapping):
        raise CalibrationError(f"{where}.joints must map joint names to channels")
    unknown = set(joints) - set(model.joint_names)
    if unknown:
        raise CalibrationError(f"{where}.joints: unknown joints {sorted(unknown)}")
    channels = []
    for k, joint in enumerate(model.joint_names):
        if joint not in joints:
            raise CalibrationError(
                f"{where}.joints.{joint} is missing (every joint needs a channel)"
            )
        entry = {**defaults, **dict(joints[joint] or {})}
        here = f"{where}.joints.{joint}"
        _unknown_keys(here, entry, _CHANNEL_KEYS)
        channel = entry.get("channel")
        if (
            isinstance(channel, bool)
            or not isinstance(channel, int)
            or not 0 <= channel < MAX_CHANNELS
        ):
            raise CalibrationError(
                f"{here}.channel must be an integer 0..{MAX_CHANNELS - 1}, got {channel!r}"
            )
        direction = entry.get("direction", 1)
        if direction not in (1, -1):
            raise CalibrationError(f"{here}.direction must be 1 or -1, got {direction!r}")
        offset = _number(entry, "zero_offset_deg", here, 0.0)
        pulse_min = _number(entry, "pulse_min_us", here, 500)
        pulse_max = _number(entry, "pulse_max_us", here, 2500)
        travel = _number(entry, "travel_deg", here, 180.0)
        lower, upper = (math.degrees(x) for x in model.joint_limits[k])
        if not -180.0 <= lower < upper <= 180.0:
            raise CalibrationError(
                f"model links[{k}].limits must lie in [-180, 180] deg for a servo"
            )
        if abs(offset) > 180.0 or not 0.0 < travel <= 360.0:
            raise CalibrationError(
                f"{here}: need |zero_offset_deg| <= 180 and 0 < travel_deg <= 360"
            )
        if not (
            500 <= pulse_min < pulse_max <= 2500
            and pulse_min.is_integer()
            and pulse_max.is_integer()
        ):
            raise CalibrationError(
                f"{here}: need integer pulses 500 <= pulse_min_us < pulse_max_us <= 2500"
            )
        channels.append(
            ChannelCalibration(
                joint,
                channel,
                int(direction),
                math.radians(offset),
                math.radians(lower),
                math.radians(upper),
                int(pulse_min),
                int(pulse_max),
                math.radians(travel),
                _feedback(entry.get("feedback"), f"{here}.feedback"),
            )
        )
    used = [c.channel for c in channels]
    if len(set(used)) != len(used):
        raise CalibrationError(f"{where}.joints: channels must be distinct, got {used}")
    return ServoMap(tuple(channels), _system(spec.get("driver") or {}, f"{where}.driver"))


def _system(spec: Mapping[str, Any], where: str) -> ConfigSystem:
    _unknown_keys(where, spec, _DRIVER_KEYS)
    action = str(spec.get("watchdog_action", "hold"))
    if action not in ("hold", "limp"):
        raise CalibrationError(f"{where}.watchdog_action must be hold or limp, got {action!r}")
    watchdog = _number(spec, "watchdog_ms", where, 500)
    period = _number(spec, "telemetry_period_ms", where, 20)
    speed = _number(spec, "servo_speed_deg_s", where, 600.0)
    if not (0 <= watchdog <= 60000 and 0 <= period <= 60000 and 0 < speed <= 655.35):
        raise CalibrationError(
            f"{where}: need 0 <= watchdog_ms, telemetry_period_ms <= 60000 "
            "and 0 < servo_speed_deg_s <= 655"
        )
    return ConfigSystem(
        watchdog_ms=int(watchdog),
        watchdog_action=WatchdogAction.HOLD if action == "hold" else WatchdogAction.LIMP,
        telemetry_period_ms=int(period),
        servo_speed_cdeg_s=round(speed * 100),
    )


def load_servo_map(path: str | Path) -> tuple[SnakeModel, ServoMap]:
    """The model and the servo map of a robot YAML file.

    Raises:
        CalibrationError: for a missing or invalid ``servos:`` section (naming the file).
        ModelError: for an invalid ``model:`` section.
    """
    robot = Robot.load(path)
    return robot.model, servos_of(robot)


def servos_of(robot: Robot) -> ServoMap:
    """The servo map of a robot read once (its ``servos:`` section).

    Raises:
        CalibrationError: for a missing or invalid ``servos:`` section (naming the file).
    """
    spec = robot.section("servos")
    if not isinstance(spec, Mapping):
        raise CalibrationError(f"{robot.path}: no 'servos:' section (joint -> channel map)")
    try:
        return servo_map(spec, robot.model)
    except CalibrationError as exc:
        raise CalibrationError(f"{robot.path}: {exc}") from None


def channel_positions(servos: ServoMap, angles_cdeg: Sequence[int]) -> dict[str, float]:
    """Joint angles [rad] from a telemetry angle list indexed by channel."""
    return {
        c.joint: from_cdeg(angles_cdeg[c.channel])
        for c in servos.channels
        if c.channel < len(angles_cdeg)
    }
