"""The snake's geometry and inertia: n moving bodies on a tail body (the paper's body I).

Bodies are numbered 0 (tail) .. n (head); joint k joins body k-1 to body k. Each body's
frame sits at its centre of mass with the long axis along e2; the CM lies half a body
length from either joint, so the offset vectors of eq. (48) are l_k = (0, L_k / 2, 0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from numpy.typing import ArrayLike, NDArray

from snake_dynamics.errors import ModelError
from snake_dynamics.ground import Ground

FloatArray = NDArray[np.float64]

#: Named joint axes: e1 (pitch when the snake lies along e2 with e3 up), e2 (roll), e3 (yaw).
AXES: dict[str, tuple[float, float, float]] = {
    "x": (1.0, 0.0, 0.0),
    "y": (0.0, 1.0, 0.0),
    "z": (0.0, 0.0, 1.0),
}

_LINK_KEYS = {"mass", "length", "radius", "inertia", "axis", "limits"}
_MODEL_KEYS = {"name", "gravity", "axes", "tail", "links", "link_defaults", "base", "ground"}
#: What the tail is: the paper's inertial body, or a 6-DOF free body (docs/mfm.md, eq. 221).
BASES = ("fixed", "floating")


def _body_label(i: int) -> str:
    return "tail" if i == 0 else f"links[{i - 1}]"


def cylinder_inertia(mass: float, length: float, radius: float) -> FloatArray:
    """Inertia of a solid cylinder about its CM, long axis e2 (used for J_C of eq. 62).

    Args:
        mass: m [kg].
        length: L [m].
        radius: r [m].

    Returns:
        Diagonal inertia matrix [kg m^2], shape (3, 3).
    """
    transverse = mass * (3.0 * radius**2 + length**2) / 12.0
    return np.diag([transverse, 0.5 * mass * radius**2, transverse])


def parse_axis(spec: object, where: str) -> FloatArray:
    """A joint axis from ``"x" | "y" | "z"`` or a non-zero 3-vector (normalised).

    Args:
        spec: the axis as written by the user.
        where: field name for the error message.

    Returns:
        Unit vector, shape (3,).

    Raises:
        ModelError: unknown name, wrong length, zero or non-finite vector.
    """
    if isinstance(spec, str):
        key = spec.strip().lower().removeprefix("e").replace("1", "x").replace("2", "y")
        key = key.replace("3", "z")
        if key not in AXES:
            raise ModelError(f"{where}: unknown axis {spec!r}; use x, y, z or a 3-vector")
        return np.array(AXES[key])
    try:
        vec = np.asarray(spec, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{where}: axis {spec!r} is not a name or a 3-vector") from exc
    if vec.shape != (3,) or not np.all(np.isfinite(vec)) or np.linalg.norm(vec) < 1e-9:
        raise ModelError(
            f"{where}: axis must be x, y, z or a finite non-zero 3-vector, got {spec!r}"
        )
    unit: FloatArray = vec / np.linalg.norm(vec)
    return unit


def alternating_axes(n_joints: int, pattern: str = "xz") -> list[str]:
    """Joint axes cycling through ``pattern`` (default e1, e3, e1, ... as in the paper).

    Raises:
        ModelError: empty pattern or a letter that is not an axis.
    """
    if not pattern or any(c not in AXES for c in pattern.lower()):
        raise ModelError(f"axes pattern must be letters from 'xyz', got {pattern!r}")
    return [pattern.lower()[k % len(pattern)] for k in range(n_joints)]


def _number(
    body: Mapping[str, Any], key: str, i: int | None, default: float | None = None
) -> float:
    """body[key] as a float; the error names the field (``links[2].mass``, or ``key`` alone
    when ``i`` is None)."""
    where = key if i is None else f"{_body_label(i)}.{key}"
    if key not in body and default is None:
        raise ModelError(f"{where} is missing")
    value = body.get(key, default)
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{where} must be a number, got {value!r}") from exc


def _mapping(value: object, where: str) -> dict[str, Any]:
    """A YAML body or defaults entry as a dict (None: empty)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ModelError(f"{where} must be a mapping of body keys, got {value!r}")
    return dict(value)


def _array(value: object, where: str) -> FloatArray:
    try:
        return np.array(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{where} must be numbers, got {value!r}") from exc


def _limits(value: object, k: int) -> FloatArray:
    """links[k].limits as [lower, upper] [rad]."""
    limits = _array(value, f"links[{k}].limits")
    if limits.shape != (2,):
        raise ModelError(f"links[{k}].limits must be [lower, upper] in rad, got {value!r}")
    return limits


def _finite_positive(values: FloatArray, name: str, unit: str) -> None:
    for i, v in enumerate(values):
        if not (math.isfinite(v) and v > 0.0):
            raise ModelError(
                f"{_body_label(i)}.{name} must be a finite number > 0 {unit}, got {float(v)}"
            )


def _check_inertia(j: FloatArray, i: int) -> None:
    where = f"{_body_label(i)}.inertia"
    if not np.all(np.isfinite(j)):
        raise ModelError(f"{where} must be finite, got {j.tolist()}")
    scale = float(np.max(np.abs(j)))
    if scale == 0.0 or not np.allclose(j, j.T, rtol=0.0, atol=1e-12 * scale):
        raise ModelError(f"{where} must be a symmetric non-zero 3x3 matrix, got {j.tolist()}")
    principal = np.linalg.eigvalsh(j)
    if principal[0] <= 0.0:
        raise ModelError(
            f"{where} must be positive definite, principal moments {principal.tolist()}"
        )
    if principal[0] + principal[1] < principal[2] * (1.0 - 1e-9):
        raise ModelError(
            f"{where}: principal moments {principal.tolist()} violate the triangle inequality "
            "(no rigid body has them)"
        )


def read_yaml(path: Path, what: str) -> Any:
    """The YAML document in ``path`` (a robot or plant file: ``what`` names it in errors).

    Raises:
        ModelError: the file cannot be read or is not YAML; one line naming the file.
    """
    try:
        return yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ModelError(f"{path}: cannot read {what} ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        problem = str(exc).splitlines()[0]
        raise ModelError(f"{path}: not valid YAML ({problem})") from None


#: How deep ``base:`` overlays may nest (a longer chain is almost surely a cycle).
MAX_OVERLAYS = 8


def _merged(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``overlay`` laid over it: mappings merge key by key, anything else
    (numbers, lists, null) replaces."""
    out = dict(base)
    for key, value in overlay.items():
        old = out.get(key)
        both = isinstance(old, Mapping) and isinstance(value, Mapping)
        out[key] = _merged(old, value) if both else value  # type: ignore[arg-type]
    return out


def read_robot_yaml(path: str | Path, what: str = "robot file") -> Any:
    """A robot config's document (or a plant file's: ``what`` names it in errors), with its
    ``base:`` overlays resolved.

    A robot config may start from another one: ``base: robot.yaml`` (a path relative to
    this file's folder, or absolute) loads that file first and lays this file's sections
    over it, mapping by mapping (e.g. ``servo: {defaults: {dead_time: 0.02}}`` changes one
    value and keeps the rest). ``snake identify`` writes its results as such an overlay; a
    plant file may start from another plant file the same way.

    Raises:
        ModelError: a file that cannot be read, bad YAML, a ``base:`` that is not a path,
            or a chain of more than :data:`MAX_OVERLAYS` bases; one line naming the file.
    """
    path = Path(path)
    chain = [path]
    doc = read_yaml(path, what)
    while isinstance(doc, Mapping) and "base" in doc:
        base = doc["base"]
        if not isinstance(base, str) or not base.strip():
            raise ModelError(f"{chain[-1]}: base must be the path of a {what}, got {base!r}")
        if len(chain) > MAX_OVERLAYS:
            raise ModelError(f"{path}: more than {MAX_OVERLAYS} nested base: files (a cycle?)")
        base_path = chain[-1].parent / base
        chain.append(base_path)
        overlay = {k: v for k, v in doc.items() if k != "base"}
        under = read_yaml(base_path, f"{what} (base of {chain[-2]})")
        if not isinstance(under, Mapping):
            raise ModelError(f"{base_path}: a {what} is a mapping of sections")
        doc = _merged(under, overlay)
    return doc


#: The servo key that belongs to the body, not to the torque law: the rotor's inertia
#: through the gears [kg m^2] (:attr:`SnakeModel.armature`, eq. 471).
BODY_KEY = "armature"


def armature_of(servo: object, joint_names: Sequence[str]) -> FloatArray:
    """Each joint's ``armature`` [kg m^2] from a robot config's ``servo:`` section: the
    rotor's inertia through the gears, J_a = N^2 J_rotor, a servo key like the six of
    :class:`snake_dynamics.servo.ServoParams` (``defaults:``, then ``joints:`` by name) but
    part of the body: it adds to M*'s diagonal (eq. 471). None or absent: zeros.

    Raises:
        ModelError: a value that is not a number >= 0; the message names the key. (The
            section's other keys and joint names are checked by
            :meth:`snake_dynamics.servo.ServoModel.from_dict`.)
    """

    def value(entry: object, where: str, default: float) -> float:
        if not isinstance(entry, Mapping) or BODY_KEY not in entry:
            return default
        raw = entry[BODY_KEY]
        number = float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else -1.0
        if not (math.isfinite(number) and number >= 0.0):
            raise ModelError(f"{where}.armature must be a number >= 0 kg m^2, got {raw!r}")
        return number

    spec: Mapping[str, Any] = servo if isinstance(servo, Mapping) else {}
    common = value(spec.get("defaults"), "servo.defaults", 0.0)
    listed = spec.get("joints")
    joints: Mapping[str, Any] = listed if isinstance(listed, Mapping) else {}
    return np.array(
        [value(joints.get(name), f"servo.joints.{name}", common) for name in joint_names]
    )


@dataclass(frozen=True)
class SnakeModel:
    """Geometry and inertia of the serial snake (bodies 0..n, joints 1..n).

    Attributes:
        masses: m_b [kg], shape (n+1,), tail first.
        lengths: body lengths L_b [m], shape (n+1,); CM-to-joint offset is L_b / 2.
        radii: body radii [m], shape (n+1,) (default inertia and visuals).
        axes: joint axes a_k in their own frame (unit), shape (n, 3).
        inertias: J_C about each CM in body axes [kg m^2], shape (n+1, 3, 3).
        gravity: g in the inertial frame [m/s^2], shape (3,) (zero in the paper).
        joint_limits: [lower, upper] per joint [rad], shape (n, 2).
        name: a label for files and logs.
        base: "fixed" (the tail is the inertial body, as in the paper) or "floating" (the
            tail is a free body, :mod:`snake_dynamics.floating.literal`).
        ground: the ground plane z = 0 and its friction (:class:`Ground`), or None.
        wheels: a passive no-sideslip wheel at every body's CM on a flat floor (a robot
            YAML's ``ground: wheels``; :mod:`snake_dynamics.sim.wheeled`): needs a
            floating base and every joint axis z (a planar snake).
        armature: each joint's servo rotor inertia through its gears [kg m^2], shape (n,),
            >= 0 (empty: zeros); added to M*'s diagonal (eq. 471). A robot YAML gives it as
            the servo key ``armature`` (:func:`armature_of`).
    """

    masses: FloatArray
    lengths: FloatArray
    radii: FloatArray
    axes: FloatArray
    inertias: FloatArray = field(default_factory=lambda: np.zeros((0, 3, 3)))
    gravity: FloatArray = field(default_factory=lambda: np.zeros(3))
    joint_limits: FloatArray = field(default_factory=lambda: np.zeros((0, 2)))
    name: str = "snake"
    base: str = "fixed"
    ground: Ground | None = None
    wheels: bool = False
    armature: FloatArray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        if self.base not in BASES:
            raise ModelError(f"base must be one of {', '.join(BASES)}, got {self.base!r}")
        if self.ground is not None and not isinstance(self.ground, Ground):
            raise ModelError(f"ground must be a Ground or None, got {self.ground!r}")
        if self.wheels and (self.base != "floating" or self.ground is not None):
            raise ModelError(
                "ground: wheels needs base: floating and no friction ground (wheels replace it)"
            )
        masses = self._vector(self.masses, None, "masses")
        n = masses.size - 1
        if n < 1:
            raise ModelError(
                f"a snake needs a tail and at least one link, got {masses.size} bodies"
            )
        lengths = self._vector(self.lengths, n + 1, "lengths")
        radii = self._vector(self.radii, n + 1, "radii")
        _finite_positive(masses, "mass", "kg")
        _finite_positive(lengths, "length", "m")
        _finite_positive(radii, "radius", "m")
        try:
            given = list(self.axes)  # rows of an (n, 3) array, or names such as "x"
        except TypeError:
            given = []
        if len(given) != n:
            raise ModelError(
                f"axes must give one axis (x, y, z or a 3-vector) for each of the {n} joints, "
                f"got {self.axes!r}"
            )
        axes = np.stack([parse_axis(a, f"links[{k}].axis") for k, a in enumerate(given)])
        inertias = _array(self.inertias, "inertias")
        if inertias.size == 0:
            bodies = zip(masses, lengths, radii, strict=True)
            inertias = np.stack([cylinder_inertia(*b) for b in bodies])
        if inertias.shape != (n + 1, 3, 3):
            raise ModelError(f"inertias must have shape ({n + 1}, 3, 3), got {inertias.shape}")
        for i, j in enumerate(inertias):
            _check_inertia(j, i)
        gravity = _array(self.gravity, "gravity").reshape(-1)
        if gravity.shape != (3,) or not np.all(np.isfinite(gravity)):
            raise ModelError(f"gravity must be a finite 3-vector [m/s^2], got {self.gravity!r}")
        limits = _array(self.joint_limits, "joint_limits")
        if limits.size == 0:
            limits = np.tile([-math.pi, math.pi], (n, 1))
        if limits.shape != (n, 2):
            raise ModelError(f"joint_limits must have shape ({n}, 2), got {limits.shape}")
        for k, (lo, hi) in enumerate(limits):
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ModelError(
                    f"links[{k}].limits must be finite with lower < upper, got [{lo}, {hi}]"
                )
        if self.wheels and not np.allclose(axes, [0.0, 0.0, 1.0]):
            k = int(np.flatnonzero(~np.all(np.isclose(axes, [0.0, 0.0, 1.0]), axis=1))[0])
            raise ModelError(
                f"ground: wheels needs every joint axis z (a planar snake); joint_{k + 1} has "
                f"axis {axes[k].tolist()}: set axes: z (or each link's axis: z)"
            )
        armature = _array(self.armature, "armature").reshape(-1)
        if armature.size == 0:
            armature = np.zeros(n)
        if armature.shape != (n,):
            raise ModelError(f"armature needs one value per joint ({n}), got {armature.size}")
        for k, rotor in enumerate(armature):
            if not (math.isfinite(rotor) and rotor >= 0.0):
                raise ModelError(
                    f"joint_{k + 1}'s armature must be a finite number >= 0 kg m^2, got {rotor}"
                )
        if self.wheels and np.any(armature):
            raise ModelError("ground: wheels has no armature model: set the servos' armature to 0")
        for attr, value in [
            ("armature", armature),
            ("masses", masses),
            ("lengths", lengths),
            ("radii", radii),
            ("axes", axes),
            ("inertias", inertias),
            ("gravity", gravity),
            ("joint_limits", limits),
        ]:
            value.setflags(write=False)
            object.__setattr__(self, attr, value)

    @staticmethod
    def _vector(values: ArrayLike, size: int | None, name: str) -> FloatArray:
        try:
            vec = np.array(values, dtype=float).reshape(-1)
        except (TypeError, ValueError) as exc:
            raise ModelError(f"{name} must be numbers, got {values!r}") from exc
        if size is not None and vec.size != size:
            raise ModelError(
                f"{name} needs {size} entries (tail + {size - 1} links), got {vec.size}"
            )
        return vec

    # ----------------------------------------------------------------- constructors
    @classmethod
    def uniform(
        cls,
        n_joints: int,
        mass: float,
        length: float,
        radius: float,
        axes: str = "xz",
        tail_length: float | None = None,
        gravity: ArrayLike = (0.0, 0.0, 0.0),
        base: str = "fixed",
        ground: Ground | None = None,
    ) -> SnakeModel:
        """A snake of identical links (the paper's 20-body model is one).

        Args:
            n_joints: number of joints n (moving bodies) >= 1.
            mass: mass of every body [kg].
            length: length of every body [m].
            radius: radius of every body [m].
            axes: axis pattern cycled over the joints ("xz": e1, e3, e1, ...).
            tail_length: tail body length [m] (default: ``length``).
            gravity: g [m/s^2].
            base: "fixed" or "floating" (the tail).
            ground: the ground plane and its friction, or None.
        """
        if isinstance(n_joints, bool) or not isinstance(n_joints, int) or n_joints < 1:
            raise ModelError(f"n_joints must be an integer >= 1, got {n_joints!r}")
        sizes = {"mass": (mass, "kg"), "length": (length, "m"), "radius": (radius, "m")}
        if tail_length is not None:
            sizes["tail_length"] = (tail_length, "m")
        for key, (value, unit) in sizes.items():
            number = _number({key: value}, key, None)
            if not (math.isfinite(number) and number > 0.0):
                raise ModelError(f"{key} must be a finite number > 0 {unit}, got {value!r}")
        lengths = np.full(n_joints + 1, float(length))
        lengths[0] = float(length if tail_length is None else tail_length)
        return cls(
            masses=np.full(n_joints + 1, float(mass)),
            lengths=lengths,
            radii=np.full(n_joints + 1, float(radius)),
            axes=np.array([AXES[a] for a in alternating_axes(n_joints, axes)]),
            gravity=np.asarray(gravity, dtype=float),
            name=f"uniform{n_joints}",
            base=base,
            ground=ground,
        )

    @classmethod
    def from_yaml(cls, path: str | Path) -> SnakeModel:
        """Load the ``model:`` section of a robot YAML file (see config/robot.yaml).

        Raises:
            ModelError: missing file, bad YAML, unknown keys or invalid values; the message
                names the file and the field.
        """
        path = Path(path)
        return cls.from_document(read_robot_yaml(path), path)

    @classmethod
    def from_document(cls, doc: Any, path: Path) -> SnakeModel:
        """The model of a robot config's document, read from ``path``
        (:func:`read_robot_yaml`; :class:`snake_dynamics.robot.Robot` reads it once).

        Raises:
            ModelError: as :meth:`from_yaml`.
        """
        if not isinstance(doc, Mapping) or not isinstance(doc.get("model"), Mapping):
            raise ModelError(f"{path}: expected a mapping with a 'model:' section")
        try:
            model = cls.from_dict(doc["model"], name=path.stem)
            armature = armature_of(doc.get("servo"), model.joint_names)
            return model if not np.any(armature) else replace(model, armature=armature)
        except ModelError as exc:
            raise ModelError(f"{path}: {exc}") from None

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any], name: str = "snake") -> SnakeModel:
        """Build a model from the mapping form used in the YAML files.

        Keys: ``tail`` and ``links`` (lists of bodies with ``mass`` [kg], ``length`` [m],
        ``radius`` [m], optional ``inertia`` (3x3) and, for links, ``axis`` and ``limits``
        [rad]), optional ``link_defaults`` merged into every link, ``axes`` (pattern,
        default "xz"), ``gravity``, ``name``, ``base`` ("fixed" or "floating") and ``ground``
        (the :class:`Ground` parameters, or ``wheels``).
        """
        unknown = set(spec) - _MODEL_KEYS
        if unknown:
            raise ModelError(
                f"model: unknown keys {sorted(unknown)}; allowed {sorted(_MODEL_KEYS)}"
            )
        links = spec.get("links")
        if not isinstance(links, Sequence) or isinstance(links, str) or not links:
            raise ModelError("model.links must be a non-empty list of bodies")
        defaults = _mapping(spec.get("link_defaults"), "model.link_defaults")
        tail = _mapping(spec.get("tail"), "model.tail")
        bodies = [tail] + [
            {**defaults, **_mapping(link, f"links[{k}]")} for k, link in enumerate(links)
        ]
        pattern = alternating_axes(len(links), str(spec.get("axes", "xz")))
        masses, lengths, radii, inertias = [], [], [], []
        for i, body in enumerate(bodies):
            extra = set(body) - _LINK_KEYS
            if extra:
                raise ModelError(f"{_body_label(i)}: unknown keys {sorted(extra)}")
            masses.append(_number(body, "mass", i))
            lengths.append(_number(body, "length", i))
            radii.append(_number(body, "radius", i, default=0.02))
            if "inertia" in body:
                j = _array(body["inertia"], f"{_body_label(i)}.inertia")
                if j.shape != (3, 3):
                    raise ModelError(f"{_body_label(i)}.inertia must be a 3x3 matrix [kg m^2]")
                inertias.append(j)
            else:
                inertias.append(cylinder_inertia(masses[-1], lengths[-1], radii[-1]))
        return cls(
            masses=np.array(masses),
            lengths=np.array(lengths),
            radii=np.array(radii),
            axes=np.stack(
                [
                    parse_axis(b.get("axis", pattern[k]), f"links[{k}].axis")
                    for k, b in enumerate(bodies[1:])
                ]
            ),
            inertias=np.stack(inertias),
            gravity=_array(spec.get("gravity", (0.0, 0.0, 0.0)), "model.gravity"),
            joint_limits=np.stack(
                [_limits(b.get("limits", (-math.pi, math.pi)), k) for k, b in enumerate(bodies[1:])]
            ),
            name=str(spec.get("name", name)),
            base=str(spec.get("base", "fixed")),
            ground=None
            if spec.get("ground") in (None, "wheels")
            else Ground.from_dict(spec["ground"]),
            wheels=spec.get("ground") == "wheels",
        )

    # ----------------------------------------------------------------- derived data
    @property
    def n_joints(self) -> int:
        """Number of joints n (= moving bodies)."""
        return int(self.axes.shape[0])

    @property
    def joint_names(self) -> list[str]:
        """ROS joint names ``joint_1 .. joint_n``, tail to head."""
        return [f"joint_{k}" for k in range(1, self.n_joints + 1)]

    @property
    def link_names(self) -> list[str]:
        """URDF/TF link names: ``base_link`` (tail) then ``link_1 .. link_n``."""
        return ["base_link"] + [f"link_{k}" for k in range(1, self.n_joints + 1)]

    @cached_property
    def offsets(self) -> FloatArray:
        """CM-to-joint offsets l_b = (0, L_b/2, 0) of eq. (48) [m], shape (n+1, 3)."""
        out = np.zeros((self.n_joints + 1, 3))
        out[:, 1] = 0.5 * self.lengths
        out.setflags(write=False)
        return out

    def with_armature(self, m_star: FloatArray) -> FloatArray:
        """M* + diag(0, J_a) (eq. 471): ``m_star`` with each joint's armature added to its
        diagonal entry, the last n (a fixed tail's (n, n) M*, or a floating base's
        (6+n, 6+n) with the base's six rows first) [kg m^2]; a new array."""
        out = np.array(m_star, dtype=np.float64)
        joints = np.arange(out.shape[0] - self.n_joints, out.shape[0])
        out[joints, joints] += self.armature
        return out

    @cached_property
    def full_block_mass_matrix(self) -> FloatArray:
        """M = blockdiag(m_b I3, J_C^(b)) of all bodies b = 0..n, the tail included (eq. 66
        for a floating base), (6(n+1), 6(n+1))."""
        n = self.n_joints + 1
        m = np.zeros((6 * n, 6 * n))
        for b in range(n):
            m[6 * b : 6 * b + 3, 6 * b : 6 * b + 3] = self.masses[b] * np.eye(3)
            m[6 * b + 3 : 6 * b + 6, 6 * b + 3 : 6 * b + 6] = self.inertias[b]
        m.setflags(write=False)
        return m

    @cached_property
    def block_mass_matrix(self) -> FloatArray:
        """M = blockdiag(m_b I3, J_C^(b)) of the moving bodies b = 1..n (eq. 66), (6n, 6n)."""
        n = self.n_joints
        m = np.zeros((6 * n, 6 * n))
        for b in range(1, n + 1):
            s = 6 * (b - 1)
            m[s : s + 3, s : s + 3] = self.masses[b] * np.eye(3)
            m[s + 3 : s + 6, s + 3 : s + 6] = self.inertias[b]
        m.setflags(write=False)
        return m
