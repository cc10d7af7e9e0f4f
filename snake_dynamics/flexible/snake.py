"""The MFM snake as an arm of this family (docs/flexible.md, "A snake in this family").

The fixed-tail snake of :mod:`snake_dynamics.mfm` (body frames at the centres of mass, long
axis e2, joint k turning body k about a_k in both neighbours' frames, mfm.md eq. 48) is a
serial arm whose links are the snake's bodies: link k's frame sits at joint k with x along
e2 and z along a_k, so the fixed rotation before joint k is C_(k-1)ᵀ C_k with
C_k = [e2, a_k x e2, a_k] in body k's axes (C_0 = I, the tail's frame is the inertial one),
(F114). With every link rigid the two families must give the same M* and forces.

A robot config's ``elastic:`` section makes some of those links beams (docs/flexible.md,
"Elastic snake links"): :func:`elastic_arm` reads it from the :class:`Robot` and builds an
:class:`ElasticLink` for each body it names, the rest of the body's mass riding on the beam
as a payload at its middle, so that the elastic link has the rigid body's mass, centre of
mass and inertia (F116).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from snake_dynamics.errors import ModelError, StateError
from snake_dynamics.flexible.dynamics import FlexibleModel, StageInputs
from snake_dynamics.flexible.model import (
    MATERIALS,
    ElasticLink,
    FlexibleArm,
    Link,
    Material,
    RigidLink,
    Section,
    check_modes,
    check_nonnegative,
    check_positive,
    link_modes,
)
from snake_dynamics.flexible.modes import BOUNDARY_CONDITIONS
from snake_dynamics.mfm.integrators import SimulationResult, prescribed_torques, step_count
from snake_dynamics.model import SnakeModel
from snake_dynamics.robot import Robot

FloatArray = NDArray[np.float64]


def link_axes(axis: FloatArray) -> FloatArray:
    """C = [e2, a x e2, a]: a link frame's axes in its body's axes, (3, 3) (columns).

    Raises:
        ModelError: an axis along the body (a roll joint), which this mapping cannot place.
    """
    a = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    if abs(a[1]) > 1e-12:
        raise ModelError(f"a joint axis must be across the body (no e2 part), got {a.tolist()}")
    x = np.array([0.0, 1.0, 0.0])
    return np.column_stack([x, np.cross(a, x), a])


def arm_from_snake(
    model: SnakeModel, elastic: Mapping[str, Any] | None = None, source: str = "snake"
) -> FlexibleArm:
    """The snake's n moving bodies as links on its fixed tail (F114), rigid unless
    ``elastic`` names them.

    Args:
        model: the fixed-tail MFM snake.
        elastic: a robot config's ``elastic:`` section, body name (``link_k``) -> its beam
            (:func:`elastic_link`); None or empty: every link rigid.
        source: the config file, for messages.

    Returns:
        The arm: link k at joint k, its centre of mass L_k/2 along x, its inertia C_kᵀ J_k C_k,
        its armature the snake's joint k's.

    Raises:
        ModelError: a bad ``elastic:`` entry, one line naming ``source`` and the key.
    """
    spec = _mapping(elastic or {}, f"{source}: elastic")
    names = model.link_names[1:]
    unknown = sorted(set(spec) - set(names))
    if unknown:
        raise ModelError(
            f"{source}: elastic.{unknown[0]}: no such body (the links are "
            f"{names[0]} .. {names[-1]}; the tail cannot bend)"
        )
    links: list[Link] = []
    previous = np.eye(3)
    for k in range(1, model.n_joints + 1):
        c = link_axes(model.axes[k - 1])
        length = float(model.lengths[k])
        rotation = _rows(previous.T @ c)
        inertia = c.T @ model.inertias[k] @ c
        name = names[k - 1]
        if name in spec:
            links.append(
                elastic_link(
                    spec[name], f"{source}: elastic.{name}", float(model.masses[k]), length,
                    inertia, c, rotation,
                )
            )  # fmt: skip
        else:
            links.append(
                RigidLink(
                    mass=float(model.masses[k]),
                    com=(length / 2, 0.0, 0.0),
                    inertia=_rows(inertia),
                    distal=(length, 0.0, 0.0),
                    joint_rotation=rotation,
                )
            )
        links[-1] = replace(links[-1], armature=float(model.armature[k - 1]))  # eq. 471
        previous = c
    g = model.gravity
    return FlexibleArm(tuple(links), gravity=(float(g[0]), float(g[1]), float(g[2])), name=source)


#: The keys of one body under ``elastic:``, and their defaults.
ELASTIC_KEYS = ("material", "section", "modes", "boundary", "damping")
DEFAULT_MODES = {"torsion": 1, "xy": 2, "xz": 2}
DEFAULT_DAMPING = 0.02


def elastic_link(
    spec: object,
    key: str,
    mass: float,
    length: float,
    inertia: FloatArray,
    axes: FloatArray,
    rotation: tuple[tuple[float, float, float], ...],
) -> ElasticLink:
    """One snake body as a beam along its length carrying the rest of its mass (F116).

    Args:
        spec: the body's entry: ``material`` (a name of :data:`MATERIALS` or
            ``{young: Pa, shear: Pa, density: kg/m^3}``), ``section`` (``{width, height}``
            [m], a solid rectangle of ``width`` across the body (e1) and ``height`` up (e3),
            or ``{outer_diameter, wall}`` [m], a tube), ``modes`` (``{torsion, xy, xz}``, each
            >= 1, default 1, 2, 2), ``boundary`` (flexure's, default clamped-free),
            ``damping`` (the modal ratio, default 0.02).
        key: where it is, ``file: elastic.link_k``, for messages.
        mass: the body's mass m_k [kg].
        length: L_k [m].
        inertia: its inertia about its centre in the link frame, C_kᵀ J_k C_k [kg m^2].
        axes: C_k, the link frame's axes in the body's (columns).
        rotation: the fixed rotation before the joint.

    Raises:
        ModelError: one line naming ``key`` and the field.
    """
    body = _mapping(spec, key)
    unknown = sorted(set(body) - set(ELASTIC_KEYS))
    if unknown:
        raise ModelError(f"{key}: unknown key {unknown[0]!r} (known: {', '.join(ELASTIC_KEYS)})")
    material = _material(body.get("material"), f"{key}.material")
    section = _section(body.get("section"), f"{key}.section", axes)
    modes = _mapping(body.get("modes", {}), f"{key}.modes")
    extra = sorted(set(modes) - set(DEFAULT_MODES))
    if extra:
        raise ModelError(f"{key}.modes: unknown kind {extra[0]!r} (known: torsion, xy, xz)")
    counts = {
        kind: check_modes(modes.get(kind, n), f"{key}.modes.{kind}")
        for kind, n in DEFAULT_MODES.items()
    }
    boundary = body.get("boundary", "clamped-free")
    if boundary not in BOUNDARY_CONDITIONS:
        raise ModelError(
            f"{key}.boundary must be one of {', '.join(BOUNDARY_CONDITIONS)}, got {boundary!r}"
        )
    damping = check_nonnegative(body.get("damping", DEFAULT_DAMPING), f"{key}.damping", "")
    beam = material.density * section.area * length
    payload = mass - beam
    if payload < 0.0:
        raise ModelError(
            f"{key}: the beam ({beam:.4g} kg) is heavier than the body ({mass:.4g} kg): "
            "make the section smaller or the body's mass larger"
        )
    own = np.diag([
        material.density * section.polar * length,
        material.density * section.iy * length + beam * length**2 / 12.0,
        material.density * section.iz * length + beam * length**2 / 12.0,
    ])  # fmt: skip
    rest = 0.5 * (inertia - own + (inertia - own).T)
    if np.linalg.eigvalsh(rest).min() < -1e-12 * max(1e-12, float(np.trace(inertia))):
        raise ModelError(
            f"{key}: the beam's inertia exceeds the body's (model inertia or radius): "
            "make the section smaller"
        )
    w, v = np.linalg.eigh(rest)
    rest = (v * np.clip(w, 0.0, None)) @ v.T
    return ElasticLink(
        length=length,
        material=material,
        section=section,
        torsion_modes=counts["torsion"],
        xy_modes=counts["xy"],
        xz_modes=counts["xz"],
        boundary=boundary,
        damping=damping,
        joint_rotation=rotation,
        payload_mass=payload,
        payload_at=length / 2,
        payload_inertia=_rows(rest),
    )


def elastic_arm(robot: Robot) -> FlexibleArm | None:
    """The robot as an arm of this family if its config has an ``elastic:`` section, else None.

    Raises:
        ModelError: a bad section, or elastic links on a snake that is not fixed at its tail
            (not supported yet); one line naming the file and the key.
    """
    section = robot.section("elastic")
    if not section:
        return None
    model = robot.model
    if model.base != "fixed" or model.wheels:
        raise ModelError(
            f"{robot.path}: elastic: links that bend need a fixed tail (model.base: fixed); "
            "a floating snake with elastic links is not supported yet"
        )
    return arm_from_snake(model, section, str(robot.path))


def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ModelError(f"{where} must be a mapping, got {value!r}")
    return value


def _number(spec: Mapping[str, Any], name: str, where: str, unit: str) -> float:
    return check_positive(spec.get(name), f"{where}.{name}", unit)


def _material(value: object, where: str) -> Material:
    """A named material or ``{young, shear, density}``."""
    if isinstance(value, str):
        if value not in MATERIALS:
            raise ModelError(f"{where} must be one of {', '.join(MATERIALS)} or a mapping "
                             f"{{young, shear, density}}, got {value!r}")  # fmt: skip
        return MATERIALS[value]
    spec = _mapping(value, where)
    extra = sorted(set(spec) - {"young", "shear", "density"})
    if extra:
        raise ModelError(f"{where}: unknown key {extra[0]!r} (known: young, shear, density)")
    return Material(
        young=_number(spec, "young", where, "Pa"),
        shear=_number(spec, "shear", where, "Pa"),
        density=_number(spec, "density", where, "kg/m^3"),
    )


def _section(value: object, where: str, axes: FloatArray) -> Section:
    """A rectangle ``{width, height}`` (across, up in the body) or a tube ``{outer_diameter,
    wall}``, in the link frame whose axes ``axes`` (columns) are in the body's."""
    spec = _mapping(value, where)
    if set(spec) == {"width", "height"}:
        if np.abs(axes[:, 2]).max() < 1.0 - 1e-12:
            raise ModelError(
                f"{where}: a rectangle needs the joint axis along e1 or e3, got "
                f"{axes[:, 2].tolist()}: use a tube"
            )
        width = _number(spec, "width", where, "m")
        height = _number(spec, "height", where, "m")
        # the link's y axis a x e2 lies along e3 (a pitch joint) or e1 (a yaw joint)
        y_is_up = abs(axes[2, 1]) > 0.5
        return Section.rectangle(height, width) if y_is_up else Section.rectangle(width, height)
    if set(spec) in ({"outer_diameter", "wall"}, {"outer_diameter"}):
        od = _number(spec, "outer_diameter", where, "m")
        wall = check_positive(spec.get("wall", od / 2), f"{where}.wall", "m")
        if wall > od / 2 or not math.isfinite(wall):
            raise ModelError(f"{where}.wall must be <= outer_diameter / 2 = {od / 2} m, got {wall}")
        return Section.tube(od, wall)
    raise ModelError(
        f"{where} must be {{width, height}} (a rectangle) or {{outer_diameter, wall}} "
        f"(a tube) [m], got {dict(spec)!r}"
    )


def _rows(m: FloatArray) -> tuple[tuple[float, float, float], ...]:
    return tuple((float(r[0]), float(r[1]), float(r[2])) for r in m)


@dataclass(frozen=True)
class ElasticRun:
    """A run of the elastic snake: its joints as the rigid runs have them, and its links'
    deflections.

    Attributes:
        joints: t, q, q_dot, q_ddot, tau and the energies (elastic strain in the potential).
        modal: the elastic coordinates [m or rad], (N, n_e) (F86), named ``modal_names``.
        modal_names: ``link_k/torsion_1``, ``link_k/xy_1``, ``link_k/xz_1`` ... in q's order.
        tips: each elastic link's tip deflection in its own frame (twist [rad], y [m], z [m]),
            (N, links, 3) (F117), named ``tip_names`` (``link_k``).
        tip_names: the elastic links.
        substeps: RK4 steps per sample.
    """

    joints: SimulationResult
    modal: FloatArray
    modal_names: tuple[str, ...]
    tips: FloatArray
    tip_names: tuple[str, ...]
    substeps: int

    def save_npz(self, path: str | Path) -> Path:
        """Write the deflections (t, modal, tips and their names) to a compressed ``.npz``."""
        path = Path(path)
        np.savez_compressed(
            path,
            t=self.joints.t,
            modal=self.modal,
            modal_names=np.array(self.modal_names),
            tips=self.tips,
            tip_names=np.array(self.tip_names),
        )
        return path

    def lines(self) -> list[str]:
        """One summary line per elastic link: its largest tip deflection and twist."""
        return [
            f"{tip.link}: tip deflection up to {1e3 * tip.max_bend:.3g} mm, twist up to "
            f"{1e3 * tip.max_twist:.3g} mrad"
            for tip in tip_summary(self.tip_names, self.tips)
        ]


@dataclass(frozen=True)
class TipDeflection:
    """One elastic link's tip over a run (F117): its deflection (the distance from the
    undeformed axis, hypot(y, z)) [m] and its twist [rad], largest and RMS over the samples.
    """

    link: str
    max_bend: float
    rms_bend: float
    max_twist: float
    rms_twist: float


def tip_summary(tip_names: Sequence[str], tips: FloatArray) -> tuple[TipDeflection, ...]:
    """Each link's :class:`TipDeflection` from its tip (twist, y, z) [rad, m, m], (N, links,
    3) (F117), N >= 1."""
    out = []
    for i, name in enumerate(tip_names):
        bend = np.hypot(tips[:, i, 1], tips[:, i, 2])
        twist = np.abs(tips[:, i, 0])
        out.append(
            TipDeflection(
                name,
                float(bend.max()),
                float(np.sqrt(np.mean(bend**2))),
                float(twist.max()),
                float(np.sqrt(np.mean(twist**2))),
            )
        )
    return tuple(out)


#: The kinds of elastic coordinate, in the order a link's tip (F117) holds them.
MODE_KINDS = ("torsion", "xy", "xz")


def tips_of_named(names: Sequence[str], modal: FloatArray) -> tuple[tuple[str, ...], FloatArray]:
    """Each link's tip (twist, y, z) from elastic coordinates named ``link/kind_j`` (as
    :func:`modal_names` and dynamics_node's ``link_deflections`` name them): the sums of each
    kind's coordinates, every shape being 1 at the tip (F117).

    Args:
        names: the coordinates' names, (n_e,).
        modal: their values [rad or m], (N, n_e).

    Returns:
        The links in the order they first appear, and their tips, (N, links, 3).

    Raises:
        StateError: a name not of the form ``link/torsion_j``, ``link/xy_j`` or ``link/xz_j``.
    """
    links: list[str] = []
    kinds: list[tuple[int, int]] = []
    for name in names:
        link, _, mode = name.rpartition("/")
        kind, _, number = mode.rpartition("_")
        if not link or kind not in MODE_KINDS or not number.isdigit():
            raise StateError(
                f"elastic coordinate {name!r} is not link/torsion_j, link/xy_j or link/xz_j"
            )
        if link not in links:
            links.append(link)
        kinds.append((links.index(link), MODE_KINDS.index(kind)))
    values = np.atleast_2d(np.asarray(modal, dtype=float))
    tips = np.zeros((values.shape[0], len(links), 3))
    for column, (link_index, kind_index) in enumerate(kinds):
        tips[:, link_index, kind_index] += values[:, column]
    return tuple(links), tips


def modal_names(arm: FlexibleArm, names: Sequence[str]) -> tuple[str, ...]:
    """``link_k/torsion_1`` .. ``link_k/xz_m`` of every elastic coordinate, in q's order."""
    out = []
    for i, _ in arm.elastic_slices():
        link = arm.links[i]
        assert isinstance(link, ElasticLink)
        counts = (link.torsion_modes, link.xy_modes, link.xz_modes)
        for kind, count in zip(MODE_KINDS, counts, strict=True):
            out += [f"{names[i]}/{kind}_{j + 1}" for j in range(count)]
    return tuple(out)


def tip_deflections(arm: FlexibleArm, q: FloatArray) -> FloatArray:
    """Each elastic link's tip twist [rad] and deflections along its y and z [m], (N, links, 3):
    the sums of its modal coordinates of each kind, every shape being 1 at the tip (F117)."""
    q = np.atleast_2d(q)
    out = np.zeros((q.shape[0], len(arm.elastic_slices()), 3))
    for j, (i, cols) in enumerate(arm.elastic_slices()):
        link = arm.links[i]
        assert isinstance(link, ElasticLink)
        e = q[:, cols]
        nt, ny = link.torsion_modes, link.xy_modes
        out[:, j] = np.stack(
            [e[:, :nt].sum(axis=1), e[:, nt : nt + ny].sum(axis=1), e[:, nt + ny :].sum(axis=1)],
            axis=1,
        )
    return out


def simulate_elastic(
    model: SnakeModel,
    arm: FlexibleArm,
    gait: Callable[[float], tuple[ArrayLike, ArrayLike, ArrayLike]],
    t_end: float,
    dt: float,
    *,
    stiffness: float = 0.0,
    damping: float = 0.0,
) -> ElasticRun:
    """The validation loop of :func:`snake_dynamics.mfm.integrators.simulate_gait` on the
    elastic snake: the rigid snake's inverse-dynamics torques of the gait, plus a PD of gains
    ``stiffness`` [N m/rad] and ``damping`` [N m s/rad] around it, drive (F111) by RK4.

    It starts on the gait at rest in its elastic coordinates' static deflection, and takes
    as many RK4 steps per ``dt`` as keep every eigenvalue of the arm at the start, PD
    included, within |lambda h| <= 2 (:meth:`FlexibleModel.stable_step`).

    Args:
        model: the fixed-tail snake (its inverse dynamics: the feed-forward).
        arm: the same snake with elastic links (:func:`elastic_arm`).
        gait: t -> (q, q_dot, q_ddot).
        t_end: duration [s], a whole number of ``dt``.
        dt: the sample step [s].
        stiffness: servo k_p [N m/rad].
        damping: servo k_d [N m s/rad].

    Raises:
        SimulationError: bad settings, or a run that left the finite numbers.
    """
    samples = step_count(t_end, dt)
    flex = FlexibleModel(arm)
    nj, n = arm.n_joints, arm.n
    kp, kd = np.full(nj, float(stiffness)), np.full(nj, float(damping))
    q0 = flex.static_deflection(np.asarray(gait(0.0)[0], dtype=float))
    u0 = np.zeros(n)
    u0[:nj] = np.asarray(gait(0.0)[1], dtype=float)
    sub = max(1, math.ceil(dt / flex.stable_step(q0, kp, kd)))
    h = dt / sub
    stage_t = np.arange(2 * samples * sub + 1) * (0.5 * h)
    feed = prescribed_torques(model, gait)
    inputs = np.empty((stage_t.size, 3 * nj))
    for j, t in enumerate(stage_t.tolist()):
        q, qd, _ = gait(t)
        inputs[j, :nj] = feed(t)
        inputs[j, nj : 2 * nj] = q
        inputs[j, 2 * nj :] = qd
    run = flex.simulate(StageInputs(kp, kd, inputs, h), q0, u0, every=sub)
    qdd = np.array(
        [flex.accelerations(q, u, tau) for q, u, tau in zip(run.q, run.u, run.tau, strict=True)]
    )
    energies = np.array([flex.energy(q, u) for q, u in zip(run.q, run.u, strict=True)])
    names = tuple(model.link_names[1:])
    return ElasticRun(
        joints=SimulationResult(
            t=np.arange(samples + 1, dtype=np.float64) * dt,
            q=run.q[:, :nj],
            qd=run.u[:, :nj],
            qdd=qdd[:, :nj],
            tau=run.tau,
            kinetic=energies[:, 0],
            potential=energies[:, 1],
            joint_names=tuple(model.joint_names),
        ),
        modal=run.q[:, nj:],
        modal_names=modal_names(arm, names),
        tips=tip_deflections(arm, run.q),
        tip_names=tuple(names[i] for i, _ in arm.elastic_slices()),
        substeps=sub,
    )


class LinkDeflections:
    """The elastic links' deflections of a snake whose joints come from elsewhere (the rigid
    simulation of the live graph), quasi-static: the elastic coordinates that balance the
    loads of the joints' motion at every instant (F118), and their shapes for a view (F119).

    Valid well below the links' first frequency, where the elastic coordinates follow their
    loads (robot_elastic's first mode is 5.3 Hz, its gaits 0.5 Hz); the full dynamics is
    :func:`simulate_elastic`'s.

    Args:
        snake: the fixed-tail snake (its link names and joint axes).
        arm: the same snake with elastic links (:func:`elastic_arm`).
    """

    def __init__(self, snake: SnakeModel, arm: FlexibleArm) -> None:
        names = snake.link_names[1:]
        self.arm = arm
        self.model = FlexibleModel(arm)
        self.names = modal_names(arm, names)
        self.links = tuple(names[i] for i, _ in arm.elastic_slices())
        self._axes = [link_axes(snake.axes[i]) for i, _ in arm.elastic_slices()]
        nj = arm.n_joints
        self._stiffness = self.model.arrays.stiffness[nj:, nj:]
        self._q = np.zeros(arm.n)

    def quasi_static(self, q: FloatArray, qd: FloatArray, qdd: FloatArray) -> FloatArray:
        """The elastic coordinates under the joints' motion (F118), (n_e,) [m or rad].

        Args:
            q: joint angles [rad], (nj,).
            qd: joint rates [rad/s], (nj,).
            qdd: joint accelerations [rad/s^2], (nj,).
        """
        nj = self.arm.n_joints
        self._q[:nj] = q
        speeds = np.zeros(self.arm.n)
        speeds[:nj] = qd
        for _ in range(2):  # the loads depend on the deflection only through the geometry
            m, h = self.model.terms(self._q, speeds)
            load = h[nj:] + m[nj:, :nj] @ qdd
            self._q[nj:] = np.linalg.solve(self._stiffness, -load)
        return self._q[nj:].copy()

    def shapes(self, modal: FloatArray, points: int = 9) -> FloatArray:
        """Each elastic link's displacement at ``points`` stations x = 0 .. L (F119), in its
        own frame: (links, points, 4) rows (x [m], twist [rad], y [m], z [m])."""
        modal = np.asarray(modal, dtype=float)
        out = np.zeros((len(self.links), points, 4))
        nj = self.arm.n_joints
        for j, (i, cols) in enumerate(self.arm.elastic_slices()):
            link = self.arm.links[i]
            assert isinstance(link, ElasticLink)
            x = np.linspace(0.0, link.length, points)
            tor, bxy, bxz = link_modes(link)
            e = modal[cols.start - nj : cols.stop - nj]
            nt, ny = link.torsion_modes, link.xy_modes
            out[j, :, 0] = x
            out[j, :, 1] = tor.shapes(x) @ e[:nt]
            out[j, :, 2] = bxy.shapes(x) @ e[nt : nt + ny]
            out[j, :, 3] = bxz.shapes(x) @ e[nt + ny :]
        return out

    def centrelines(self, modal: FloatArray, points: int = 9) -> FloatArray:
        """Each elastic link's bent centreline at ``points`` stations (F119) in its body's
        axes from its joint, the URDF frame of ``link_k``: C_k (x, v(x), w(x)),
        (links, points, 3) [m]."""
        shapes = self.shapes(modal, points)
        return np.stack([s[:, [0, 2, 3]] @ c.T for s, c in zip(shapes, self._axes, strict=True)])
