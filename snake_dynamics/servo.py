"""The servo model: a hobby position servo driving one joint (docs/mfm.md, eqs. 201-206).

Per joint k, with the reference (q_ref, q_dot_ref) seen ``dead_time`` late:

* the position error e = q_ref(t - T_d) - q loses a ``deadband`` (eq. 202),
* the position loop asks for u = K e_db + D (q_dot_ref(t - T_d) - q_dot) (eq. 203); a pulse
  carries the angle alone, so wherever pulses drive the servo (the prediction of
  ``dynamics_node``, ``snake simulate --ground`` and on wheels, the emulated robot's plants,
  ``snake identify``'s fits) q_dot_ref = 0 and D damps the joint's own rate; only the paper's
  validation loop (``snake simulate`` of a fixed-tail robot with ``--servo-stiffness`` and
  ``--servo-damping``, :func:`snake_dynamics.mfm.integrators.simulate_gait`) gives the loop
  the gait's rate, beside its inverse-dynamics feed-forward,
* the motor delivers u clamped to its torque-speed line: at most the stall torque at rest,
  falling linearly to zero at the no-load speed when driving, and at most the stall torque
  when braking (eqs. 204, 205).

:class:`ServoParams` holds one servo's six parameters (SI units), :class:`ServoModel` one
per joint with where they came from (a robot YAML file's ``servo:`` section, or built in).
The torque law itself is the compiled kernel :func:`snake_dynamics.mfm.recursive.servo_torque` on
the packed parameters (:attr:`ServoModel.packed`);
:func:`snake_dynamics.mfm.integrators.joint_response` is the same servo on a single joint of
known inertia as a pure function (a step response, or the samples a least-squares fit
compares with a recording).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from snake_dynamics.errors import ModelError
from snake_dynamics.model import BODY_KEY, read_robot_yaml

FloatArray = NDArray[np.float64]

#: The kernels' stand-in for an unlimited stall torque or no-load speed (they are compiled
#: with fastmath, which assumes no inf): 1e300 N m or rad/s never clips a physical torque.
NO_LIMIT = 1e300

#: Parameter -> (unit, smallest allowed value, whether that value is allowed).
_RULES: dict[str, tuple[str, float, bool]] = {
    "dead_time": ("s", 0.0, True),
    "deadband": ("rad", 0.0, True),
    "stiffness": ("N m/rad", 0.0, True),
    "damping": ("N m s/rad", 0.0, True),
    "stall_torque": ("N m", 0.0, False),
    "no_load_speed": ("rad/s", 0.0, False),
}
_UNLIMITED = ("stall_torque", "no_load_speed")


@dataclass(frozen=True)
class ServoParams:
    """One servo's parameters (eqs. 201-205), SI units.

    Attributes:
        dead_time: T_d, how late the servo acts on its reference [s], >= 0.
        deadband: e_0, half-width of the error band the loop ignores [rad], >= 0.
        stiffness: K, torque per rad of error outside the deadband [N m/rad], >= 0.
        damping: D, torque per rad/s of error rate [N m s/rad], >= 0.
        stall_torque: T_s, the motor's torque at zero speed [N m], > 0 (inf: no limit).
        no_load_speed: w_0, where the driving torque falls to zero [rad/s], > 0 (inf: no
            limit).
    """

    dead_time: float
    deadband: float
    stiffness: float
    damping: float
    stall_torque: float
    no_load_speed: float

    def __post_init__(self) -> None:
        for name, (unit, low, closed) in _RULES.items():
            value = getattr(self, name)
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            ok = ok and (math.isfinite(value) or (name in _UNLIMITED and value == math.inf))
            ok = ok and (value >= low if closed else value > low)
            if not ok:
                bound = f"{'>=' if closed else '>'} {low:g}"
                extra = " (or .inf: no limit)" if name in _UNLIMITED else ""
                raise ModelError(f"{name} must be a number {bound} {unit}{extra}, got {value!r}")
            object.__setattr__(self, name, float(value))

    @classmethod
    def pd(cls, stiffness: float, damping: float) -> ServoParams:
        """A plain PD servo: no dead time, no deadband, no torque limit."""
        return cls(0.0, 0.0, stiffness, damping, math.inf, math.inf)

    def updated(self, values: Mapping[str, Any], where: str) -> ServoParams:
        """These parameters with ``values`` (a YAML mapping) replacing some of them.

        Raises:
            ModelError: an unknown key or a bad value; the message starts with ``where``.
        """
        if not isinstance(values, Mapping):
            raise ModelError(f"{where} must be a mapping of servo parameters, got {values!r}")
        unknown = sorted(set(values) - set(_RULES) - {BODY_KEY})
        if unknown:
            raise ModelError(f"{where}: unknown keys {unknown}; allowed {[*_RULES, BODY_KEY]}")
        values = {k: v for k, v in values.items() if k != BODY_KEY}
        merged = {**asdict(self), **values}
        for key in values:
            try:
                merged[key] = float(merged[key])
            except (TypeError, ValueError):
                unit = _RULES[key][0]
                raise ModelError(
                    f"{where}.{key} must be a number [{unit}], got {values[key]!r}"
                ) from None
        try:
            return ServoParams(**merged)
        except ModelError as exc:
            raise ModelError(f"{where}.{exc}") from None

    @property
    def bandwidth(self) -> float:
        """Stall torque over stiffness: the error beyond which the loop saturates [rad]."""
        return self.stall_torque / self.stiffness if self.stiffness > 0 else math.inf


#: An MG996R-class servo at 6 V (TowerPro MG996R datasheet): stall torque 11 kgf cm
#: = 1.08 N m, operating speed 0.14 s / 60 deg = 7.48 rad/s (no load), dead band width 5 us
#: of the 2000 us / 180 deg pulse (config/robot.yaml's calibration), i.e. +-2.5 us =
#: +-0.0039 rad, and its 20 ms pulse period: a new target waits 10 ms on average. The
#: datasheet gives no loop gains: K saturates the motor at 6 deg of error (1.08 N m /
#: 0.105 rad); D = 0.5 N m s/rad, the motor's back-EMF slope T_s / w_0 = 0.144 plus the
#: amplifier's rate feedback (docs/mfm.md, "Nominal values").
NOMINAL = ServoParams(
    dead_time=0.010,
    deadband=0.0039,
    stiffness=10.3,
    damping=0.5,
    stall_torque=1.08,
    no_load_speed=7.48,
)


@dataclass(frozen=True)
class ServoModel:
    """The servos of a snake, one :class:`ServoParams` per joint (tail to head).

    Attributes:
        joints: the parameters of joints 1..n.
        source: where they came from (a file, or "built in").
    """

    joints: tuple[ServoParams, ...]
    source: str = "built in"

    @classmethod
    def uniform(cls, params: ServoParams, n_joints: int, source: str = "built in") -> ServoModel:
        """The same servo at every joint."""
        return cls(tuple([params] * n_joints), source)

    @classmethod
    def pd(cls, stiffness: ArrayLike, damping: ArrayLike, n_joints: int) -> ServoModel:
        """Plain PD servos (:meth:`ServoParams.pd`), gains scalar or per joint.

        Raises:
            ModelError: a gain that is negative, not finite or of the wrong length.
        """
        gains = []
        for name, value in (("stiffness", stiffness), ("damping", damping)):
            try:
                gains.append(np.broadcast_to(np.asarray(value, dtype=np.float64), (n_joints,)))
            except ValueError:
                raise ModelError(
                    f"servo {name} must be a number or {n_joints} numbers, got {value!r}"
                ) from None
        try:
            joints = tuple(ServoParams.pd(float(k), float(d)) for k, d in zip(*gains, strict=True))
        except ModelError as exc:
            raise ModelError(f"servo {exc}") from None
        return cls(joints, "PD")

    @classmethod
    def from_yaml(cls, path: str | Path, joint_names: Sequence[str]) -> ServoModel:
        """The ``servo:`` section of a robot YAML file (none: :data:`NOMINAL` everywhere).

        The section holds ``defaults:`` (any of the six keys, over :data:`NOMINAL`) and
        ``joints:`` (joint name -> keys over the defaults). Its seventh key, ``armature``
        (:data:`BODY_KEY`), is the body's: :attr:`SnakeModel.armature`, not read here.

        Raises:
            ModelError: unreadable file, unknown keys or joints, bad values; one line naming
                the file and the key.
        """
        path = Path(path)
        return cls.from_document(read_robot_yaml(path), path, joint_names)

    @classmethod
    def from_document(cls, doc: Any, path: Path, joint_names: Sequence[str]) -> ServoModel:
        """The servo model of a robot config's document, read from ``path``
        (:class:`snake_dynamics.robot.Robot` reads it once).

        Raises:
            ModelError: as :meth:`from_yaml`.
        """
        spec = doc.get("servo") if isinstance(doc, Mapping) else None
        try:
            return cls.from_dict(spec, joint_names, str(path))
        except ModelError as exc:
            raise ModelError(f"{path}: {exc}") from None

    @classmethod
    def from_dict(
        cls, spec: Mapping[str, Any] | None, joint_names: Sequence[str], source: str
    ) -> ServoModel:
        """The mapping form of :meth:`from_yaml` (None: :data:`NOMINAL` everywhere)."""
        if spec is None:
            return cls.uniform(NOMINAL, len(joint_names), f"{source} (no servo: section: nominal)")
        if not isinstance(spec, Mapping):
            raise ModelError(f"servo must be a mapping with defaults: and joints:, got {spec!r}")
        unknown = sorted(set(spec) - {"defaults", "joints"})
        if unknown:
            raise ModelError(f"servo: unknown keys {unknown}; allowed ['defaults', 'joints']")
        defaults = NOMINAL.updated(spec.get("defaults") or {}, "servo.defaults")
        joints = spec.get("joints") or {}
        if not isinstance(joints, Mapping):
            raise ModelError(f"servo.joints must map joint names to parameters, got {joints!r}")
        extra = sorted(set(joints) - set(joint_names))
        if extra:
            raise ModelError(
                f"servo.joints: unknown joints {extra}; the robot has "
                f"{joint_names[0]}..{joint_names[-1]}"
            )
        return cls(
            tuple(
                defaults.updated(joints[name], f"servo.joints.{name}")
                if name in joints
                else defaults
                for name in joint_names
            ),
            source,
        )

    @property
    def n_joints(self) -> int:
        """Number of joints."""
        return len(self.joints)

    def column(self, name: str) -> FloatArray:
        """One parameter of every joint, shape (n,) (e.g. ``column("dead_time")``)."""
        return np.array([getattr(p, name) for p in self.joints], dtype=np.float64)

    @cached_property
    def packed(self) -> FloatArray:
        """The kernels' form: rows K, D, e_0, T_s, w_0 (inf as :data:`NO_LIMIT`), (5, n)."""
        rows = ("stiffness", "damping", "deadband", "stall_torque", "no_load_speed")
        out = np.ascontiguousarray(np.minimum([self.column(r) for r in rows], NO_LIMIT))
        out.setflags(write=False)
        return out

    @property
    def dead_times(self) -> FloatArray:
        """T_d of every joint [s], shape (n,)."""
        return self.column("dead_time")

    def as_dict(self) -> dict[str, Any]:
        """The parameters as YAML-able data: ``defaults`` (the most common servo) and the
        joints that differ from it, by index 1..n."""
        dicts = [asdict(p) for p in self.joints]
        common = max(dicts, key=dicts.count)
        return {
            "defaults": _plain(common),
            "joints": {f"joint_{k}": _plain(d) for k, d in enumerate(dicts, 1) if d != common},
        }

    @cached_property
    def digest(self) -> str:
        """A short hash of every joint's parameters (8 hex digits): two predictions with the
        same digest used the same servos."""
        text = json.dumps([asdict(p) for p in self.joints], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:8]

    def describe(self) -> str:
        """One line: source, digest and the common parameters, e.g. for a log or a report."""
        data = self.as_dict()
        common = ", ".join(f"{k} {v:g}" for k, v in data["defaults"].items() if v is not None)
        others = f"; {len(data['joints'])} joints differ" if data["joints"] else ""
        return f"servo model {self.digest} from {self.source}: {common}{others}"


def _plain(params: Mapping[str, float]) -> dict[str, float | None]:
    """inf (no limit) as None, for YAML and JSON."""
    return {k: (v if math.isfinite(v) else None) for k, v in params.items()}


SERVO_KEYS: tuple[str, ...] = tuple(f.name for f in fields(ServoParams))
