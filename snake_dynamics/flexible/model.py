"""A serial arm of rigid and elastic links: its description, its checks, and the arrays the
compiled kernel reads (docs/flexible.md, "The arm").

Each link i has a frame i at its controlled end; joint i turns frame i about its own z axis
by q_i, after a fixed rotation from the parent's distal frame (the paper's
R^(1/2) = Rx(-pi/2) Rz(-pi/2) Rz(q2), (F114)). A rigid link carries a mass, a centre of mass
and an inertia, and ends at a fixed offset. An elastic link lies along its x axis: a tube or
bar of one material, Euler-Bernoulli flexure in xy and xz and torsion about x by the assumed
modes of :mod:`snake_dynamics.flexible.modes`, with an optional body at its tip. The
generalised coordinates are q = (q_1 .. q_n, then each elastic link's torsion, xy-flexure and
xz-flexure coordinates), (F86), (F113).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from numpy.typing import NDArray

from snake_dynamics.errors import ModelError
from snake_dynamics.flexible.modes import (
    BOUNDARY_CONDITIONS,
    BendingModes,
    TorsionModes,
    bending_modes,
    gauss_stations,
    torsion_modes,
)

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: Gauss stations per elastic link: exact for the inertia of the undeformed link; the arm's
#: frequencies (2 modes a kind) agree with 12 and 24 stations to 1e-9 relative.
DEFAULT_STATIONS = 8


@dataclass(frozen=True)
class Material:
    """Young's modulus E [Pa], shear modulus G [Pa] and density rho [kg/m^3]."""

    young: float
    shear: float
    density: float


#: Aluminium 6061-T6.
ALUMINIUM = Material(young=69e9, shear=26e9, density=2700.0)
#: Printed PLA, solid (100 % infill): E = 3.5 GPa, G = E / (2 (1 + 0.36)), 1240 kg/m^3.
PLA = Material(young=3.5e9, shear=1.29e9, density=1240.0)
#: The materials a config may name.
MATERIALS = {"aluminium": ALUMINIUM, "PLA": PLA}


@dataclass(frozen=True)
class Section:
    """A cross-section: area A [m^2], second moments I_y, I_z [m^4] about the y and z axes,
    torsion constant J_t [m^4] (G J_t the torsional stiffness) and polar moment I_p [m^4]
    (rho I_p the rotary inertia per length about x)."""

    area: float
    iy: float
    iz: float
    torsion: float
    polar: float

    @staticmethod
    def tube(outer_diameter: float, wall: float) -> Section:
        """A round tube [m]; a solid rod when ``wall`` is half the diameter."""
        ro, ri = outer_diameter / 2.0, outer_diameter / 2.0 - wall
        i = math.pi / 4.0 * (ro**4 - ri**4)
        return Section(math.pi * (ro**2 - ri**2), i, i, 2.0 * i, 2.0 * i)

    @staticmethod
    def rectangle(along_y: float, along_z: float) -> Section:
        """A solid rectangle of sides ``along_y`` and ``along_z`` [m] in the link's y and z
        directions; J_t by Roark's formula for a rectangle (F115)."""
        a, b = max(along_y, along_z), min(along_y, along_z)
        torsion = a * b**3 * (1.0 / 3.0 - 0.21 * b / a * (1.0 - (b / a) ** 4 / 12.0))
        area = along_y * along_z
        iy, iz = along_y * along_z**3 / 12.0, along_z * along_y**3 / 12.0
        return Section(area, iy, iz, torsion, iy + iz)


@dataclass(frozen=True)
class RigidLink:
    """A rigid link: mass [kg], centre of mass and distal end in its frame [m], inertia about
    its centre of mass in its frame [kg m^2], the fixed rotation before its joint, and the
    joint's reflected rotor inertia (armature) [kg m^2]."""

    mass: float
    com: tuple[float, float, float]
    inertia: tuple[tuple[float, float, float], ...]
    distal: tuple[float, float, float]
    joint_rotation: tuple[tuple[float, float, float], ...] = ((1, 0, 0), (0, 1, 0), (0, 0, 1))
    armature: float = 0.0


@dataclass(frozen=True)
class ElasticLink:
    """An elastic link along its x axis, clamped at its joint.

    Attributes:
        length: L [m].
        material: E, G, rho.
        section: A, I_y, I_z, J_t, I_p.
        torsion_modes, xy_modes, xz_modes: number of assumed modes of each kind (>= 1).
        boundary: flexural boundary condition, "clamped-free" or "clamped-mass" (the tip
            body in the mode shapes); torsion is clamped-free.
        tip_mass: a body at x = L [kg] (a motor, a bracket), rigidly attached.
        tip_inertia: its inertia about x = L in the link frame [kg m^2], diagonal (x, y, z).
        damping: modal damping ratio zeta of every mode of the clamped link [-]:
            D_kk = 2 zeta sqrt(K_kk m_kk), m_kk the mode's mass on the clamped link.
        joint_rotation: the fixed rotation before its joint.
        armature: the joint's reflected rotor inertia [kg m^2] (a geared motor's rotor times
            the square of its ratio), added to M's diagonal as MuJoCo and Pinocchio do.
        payload_mass: a body carried on the beam [kg] (a snake link's servo and screws), one
            more slice at x = ``payload_at`` moving with the section there (F116).
        payload_at: where along the link it sits [m], 0..L.
        payload_inertia: its inertia about its centre in the link frame [kg m^2] (rows).
    """

    length: float
    material: Material
    section: Section
    torsion_modes: int = 2
    xy_modes: int = 2
    xz_modes: int = 2
    boundary: str = "clamped-free"
    tip_mass: float = 0.0
    tip_inertia: tuple[float, float, float] = (0.0, 0.0, 0.0)
    damping: float = 0.0
    joint_rotation: tuple[tuple[float, float, float], ...] = ((1, 0, 0), (0, 1, 0), (0, 0, 1))
    armature: float = 0.0
    payload_mass: float = 0.0
    payload_at: float = 0.0
    payload_inertia: tuple[tuple[float, float, float], ...] = ((0, 0, 0), (0, 0, 0), (0, 0, 0))

    @property
    def n_modes(self) -> int:
        """Elastic coordinates of this link."""
        return self.torsion_modes + self.xy_modes + self.xz_modes

    @property
    def mass(self) -> float:
        """rho A L [kg], without the tip body."""
        return self.material.density * self.section.area * self.length


Link = RigidLink | ElasticLink


#: The arm's arrays as the kernel's ``arm`` argument, in the order it unpacks them.
KernelTuple = tuple[
    FloatArray, FloatArray, FloatArray, FloatArray, IntArray, IntArray, IntArray,
    FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray,
]  # fmt: skip


@dataclass
class KernelArrays:
    """The arm as the compiled kernel reads it (every array float64 or int64, contiguous).

    Slices are the mass elements: one per rigid link (its whole body), one per Gauss station
    of an elastic link (weight times rho A, rho I), one for an elastic link's tip body.
    """

    n_links: int
    n: int
    rfix: FloatArray  # (nl, 3, 3)
    dist: FloatArray  # (nl, 3): distal end, undeformed, in the link frame
    dist_phid: FloatArray  # (nl, ne_max, 3): distal displacement shapes
    dist_phit: FloatArray  # (nl, ne_max, 3): distal rotation shapes
    e0: IntArray  # (nl,): index in q of the link's first elastic coordinate
    ne: IntArray  # (nl,)
    slice_link: IntArray  # (S,)
    slice_pos: FloatArray  # (S, 3)
    slice_mass: FloatArray  # (S,)
    slice_inertia: FloatArray  # (S, 3, 3)
    slice_phid: FloatArray  # (S, ne_max, 3)
    slice_phit: FloatArray  # (S, ne_max, 3)
    gravity: FloatArray  # (3,)
    armature: FloatArray  # (nl,)
    stiffness: FloatArray  # (n, n)
    damping: FloatArray  # (n, n)

    def as_tuple(self) -> KernelTuple:
        """The arm argument of :func:`snake_dynamics.flexible.kernel.mass_and_bias`."""
        return (
            self.rfix,
            self.dist,
            self.dist_phid,
            self.dist_phit,
            self.e0,
            self.ne,
            self.slice_link,
            self.slice_pos,
            self.slice_mass,
            self.slice_inertia,
            self.slice_phid,
            self.slice_phit,
            self.gravity,
            self.armature,
        )


def check_positive(value: object, where: str, unit: str) -> float:
    """``value`` as a float if it is a finite number > 0; else ModelError naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelError(f"{where} must be a number > 0 {unit}, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ModelError(f"{where} must be a finite number > 0 {unit}, got {value!r}")
    return float(value)


def check_nonnegative(value: object, where: str, unit: str) -> float:
    """``value`` as a float if it is a finite number >= 0; else ModelError naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelError(f"{where} must be a number >= 0 {unit}, got {value!r}")
    if not (math.isfinite(value) and value >= 0):
        raise ModelError(f"{where} must be a finite number >= 0 {unit}, got {value!r}")
    return float(value)


def check_modes(value: object, where: str) -> int:
    """``value`` if it is a whole number >= 1; else ModelError naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ModelError(f"{where} must be a whole number of modes >= 1, got {value!r}")
    return value


def link_modes(link: ElasticLink) -> tuple[TorsionModes, BendingModes, BendingModes]:
    """The torsion, xy-flexure and xz-flexure modes of a link; with ``clamped-mass`` the
    flexural modes carry the tip body (its mass, and its rotary inertia about z for xy
    flexure, about y for xz)."""
    length = link.length
    cm = link.boundary == "clamped-mass"
    mu = link.tip_mass / link.mass if cm else 0.0
    iota_z = link.tip_inertia[2] / (link.mass * length**2) if cm else 0.0
    iota_y = link.tip_inertia[1] / (link.mass * length**2) if cm else 0.0
    return (
        torsion_modes(link.torsion_modes, length),
        bending_modes(link.xy_modes, length, mu, iota_z),
        bending_modes(link.xz_modes, length, mu, iota_y),
    )


def _elastic_shapes(link: ElasticLink, x: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Displacement and rotation shapes of every elastic coordinate at stations x,
    each (len(x), n_modes, 3): d(x) = phid q_e, theta(x) = phit q_e (F71)."""
    tor, bxy, bxz = link_modes(link)
    nt, ny = link.torsion_modes, link.xy_modes
    phid = np.zeros((len(x), link.n_modes, 3))
    phit = np.zeros((len(x), link.n_modes, 3))
    phit[:, :nt, 0] = tor.shapes(x)
    phid[:, nt : nt + ny, 1] = bxy.shapes(x)
    phit[:, nt : nt + ny, 2] = bxy.shapes(x, 1)  # rotation about z: +v'
    phid[:, nt + ny :, 2] = bxz.shapes(x)
    phit[:, nt + ny :, 1] = -bxz.shapes(x, 1)  # rotation about y: -w'
    return phid, phit


def elastic_stiffness(link: ElasticLink, stations: int = 4 * DEFAULT_STATIONS) -> FloatArray:
    """K of one link, int [G J_t theta_x'^2 + E I_y theta_y'^2 + E I_z theta_z'^2] dx (F112),
    (n_modes, n_modes) [N m per unit of the coordinates]."""
    x, w = gauss_stations(link.length, stations)
    tor, bxy, bxz = link_modes(link)
    e, g, s = link.material.young, link.material.shear, link.section
    blocks = [
        (g * s.torsion, tor.shapes(x, 1)),
        (e * s.iz, bxy.shapes(x, 2)),
        (e * s.iy, bxz.shapes(x, 2)),
    ]
    k = np.zeros((link.n_modes, link.n_modes))
    i0 = 0
    for stiffness, dshape in blocks:
        m = dshape.shape[1]
        k[i0 : i0 + m, i0 : i0 + m] = stiffness * (dshape * w[:, None]).T @ dshape
        i0 += m
    return k


@dataclass(frozen=True)
class FlexibleArm:
    """A serial arm of rigid and elastic links under gravity.

    Attributes:
        links: tail to tip.
        gravity: in the inertial frame [m/s^2].
        stations: Gauss stations per elastic link.
        name: for messages.
    """

    links: tuple[Link, ...]
    gravity: tuple[float, float, float] = (0.0, 0.0, -9.81)
    stations: int = DEFAULT_STATIONS
    name: str = "arm"

    def __post_init__(self) -> None:
        validate(self, source=self.name)

    @property
    def n_joints(self) -> int:
        """Number of joints = links."""
        return len(self.links)

    @property
    def n_elastic(self) -> int:
        """Number of elastic coordinates."""
        return sum(link.n_modes for link in self.links if isinstance(link, ElasticLink))

    @property
    def n(self) -> int:
        """Number of generalised coordinates (F86)."""
        return self.n_joints + self.n_elastic

    def elastic_slices(self) -> list[tuple[int, slice]]:
        """(link index, slice of q) of each elastic link."""
        out, i0 = [], self.n_joints
        for i, link in enumerate(self.links):
            if isinstance(link, ElasticLink):
                out.append((i, slice(i0, i0 + link.n_modes)))
                i0 += link.n_modes
        return out

    def kernel_arrays(self) -> KernelArrays:
        """Pack the arm for :mod:`snake_dynamics.flexible.kernel`."""
        nl, n = self.n_joints, self.n
        ne_max = max([1] + [lk.n_modes for lk in self.links if isinstance(lk, ElasticLink)])
        rfix = np.zeros((nl, 3, 3))
        dist = np.zeros((nl, 3))
        dist_phid = np.zeros((nl, ne_max, 3))
        dist_phit = np.zeros((nl, ne_max, 3))
        e0 = np.zeros(nl, dtype=np.int64)
        ne = np.zeros(nl, dtype=np.int64)
        s_link: list[int] = []
        s_pos: list[FloatArray] = []
        s_mass: list[float] = []
        s_inertia: list[FloatArray] = []
        s_phid: list[FloatArray] = []
        s_phit: list[FloatArray] = []
        stiff = np.zeros((n, n))
        damp = np.zeros((n, n))
        i0 = nl
        for i, link in enumerate(self.links):
            rfix[i] = np.array(link.joint_rotation, dtype=float)
            zeros = np.zeros((ne_max, 3))
            if isinstance(link, RigidLink):
                dist[i] = link.distal
                s_link.append(i)
                s_pos.append(np.array(link.com, dtype=float))
                s_mass.append(link.mass)
                s_inertia.append(np.array(link.inertia, dtype=float))
                s_phid.append(zeros)
                s_phit.append(zeros)
                e0[i] = i0
                continue
            m = link.n_modes
            e0[i], ne[i] = i0, m
            dist[i] = (link.length, 0.0, 0.0)
            tip_d, tip_t = _elastic_shapes(link, np.array([link.length]))
            dist_phid[i, :m] = tip_d[0]
            dist_phit[i, :m] = tip_t[0]
            x, w = gauss_stations(link.length, self.stations)
            phid, phit = _elastic_shapes(link, x)
            rho, s = link.material.density, link.section
            for g in range(len(x)):
                s_link.append(i)
                s_pos.append(np.array([x[g], 0.0, 0.0]))
                s_mass.append(rho * s.area * w[g])
                s_inertia.append(np.diag([rho * s.polar, rho * s.iy, rho * s.iz]) * w[g])
                pd, pt = zeros.copy(), zeros.copy()
                pd[:m], pt[:m] = phid[g], phit[g]
                s_phid.append(pd)
                s_phit.append(pt)
            if link.tip_mass > 0 or any(v > 0 for v in link.tip_inertia):
                s_link.append(i)
                s_pos.append(dist[i].copy())
                s_mass.append(link.tip_mass)
                s_inertia.append(np.diag(np.array(link.tip_inertia, dtype=float)))
                s_phid.append(dist_phid[i].copy())
                s_phit.append(dist_phit[i].copy())
            if link.payload_mass > 0:
                at_d, at_t = _elastic_shapes(link, np.array([link.payload_at]))
                s_link.append(i)
                s_pos.append(np.array([link.payload_at, 0.0, 0.0]))
                s_mass.append(link.payload_mass)
                s_inertia.append(np.array(link.payload_inertia, dtype=float))
                pd, pt = zeros.copy(), zeros.copy()
                pd[:m], pt[:m] = at_d[0], at_t[0]
                s_phid.append(pd)
                s_phit.append(pt)
            k = elastic_stiffness(link)
            stiff[i0 : i0 + m, i0 : i0 + m] = k
            modal = np.zeros(m)
            for el in range(len(s_link)):
                if s_link[el] == i:
                    pd, pt = s_phid[el][:m], s_phit[el][:m]
                    modal += s_mass[el] * (pd**2).sum(axis=1)
                    modal += np.einsum("kj,jl,kl->k", pt, s_inertia[el], pt)
            damp[i0 : i0 + m, i0 : i0 + m] = np.diag(
                2.0 * link.damping * np.sqrt(np.diag(k) * modal)
            )
            i0 += m
        return KernelArrays(
            n_links=nl,
            n=n,
            rfix=rfix,
            dist=dist,
            dist_phid=dist_phid,
            dist_phit=dist_phit,
            e0=e0,
            ne=ne,
            slice_link=np.array(s_link, dtype=np.int64),
            slice_pos=np.array(s_pos),
            slice_mass=np.array(s_mass),
            slice_inertia=np.array(s_inertia),
            slice_phid=np.array(s_phid),
            slice_phit=np.array(s_phit),
            gravity=np.array(self.gravity, dtype=float),
            armature=np.array([lk.armature for lk in self.links], dtype=float),
            stiffness=stiff,
            damping=damp,
        )


def validate(arm: FlexibleArm, source: str) -> None:
    """Refuse an arm that cannot be physical; the message names ``source`` and the key."""
    if not arm.links:
        raise ModelError(f"{source}: links must list at least one link")
    for i, link in enumerate(arm.links):
        key = f"{source}: links[{i}]"
        check_nonnegative(link.armature, f"{key}.armature", "kg m^2")
        if isinstance(link, RigidLink):
            check_positive(link.mass, f"{key}.mass", "kg")
            continue
        check_positive(link.length, f"{key}.length", "m")
        check_positive(link.material.young, f"{key}.young", "Pa")
        check_positive(link.material.shear, f"{key}.shear", "Pa")
        check_positive(link.material.density, f"{key}.density", "kg/m^3")
        for name in ("area", "iy", "iz", "torsion", "polar"):
            check_positive(getattr(link.section, name), f"{key}.section.{name}", "(SI)")
        for name in ("torsion_modes", "xy_modes", "xz_modes"):
            check_modes(getattr(link, name), f"{key}.{name}")
        if link.boundary not in BOUNDARY_CONDITIONS:
            raise ModelError(
                f"{key}.boundary must be one of {', '.join(BOUNDARY_CONDITIONS)}, "
                f"got {link.boundary!r}"
            )
        check_nonnegative(link.tip_mass, f"{key}.tip_mass", "kg")
        check_nonnegative(link.damping, f"{key}.damping", "(a ratio)")
        for v in link.tip_inertia:
            check_nonnegative(v, f"{key}.tip_inertia", "kg m^2")
        check_nonnegative(link.payload_mass, f"{key}.payload_mass", "kg")
        if not 0.0 <= link.payload_at <= link.length:
            raise ModelError(
                f"{key}.payload_at must lie on the link, 0..{link.length} m, got {link.payload_at}"
            )
        if np.linalg.eigvalsh(np.array(link.payload_inertia, dtype=float)).min() < 0.0:
            raise ModelError(f"{key}.payload_inertia must be positive semi-definite [kg m^2]")
    check_modes(arm.stations, f"{source}: stations")


def _rotation(spec: object, where: str) -> tuple[tuple[float, float, float], ...]:
    """A fixed rotation from a list of [axis, angle_deg] pairs applied in order, e.g.
    [[x, -90], [z, -90]] = Rx(-pi/2) Rz(-pi/2)."""
    r = np.eye(3)
    if not isinstance(spec, list):
        raise ModelError(f"{where} must be a list of [axis, degrees] pairs, got {spec!r}")
    for item in spec:
        if not (isinstance(item, list) and len(item) == 2 and item[0] in ("x", "y", "z")):
            raise ModelError(f"{where} must be a list of [x|y|z, degrees] pairs, got {item!r}")
        a = math.radians(float(item[1]))
        c, s = math.cos(a), math.sin(a)
        r = (
            r
            @ {
                "x": np.array([[1, 0, 0], [0, c, -s], [0, s, c]]),
                "y": np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]),
                "z": np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]),
            }[item[0]]
        )
    return tuple((float(row[0]), float(row[1]), float(row[2])) for row in r)


_RIGID_KEYS = {"kind", "mass", "com", "inertia", "distal", "joint_rotation", "armature"}
_ELASTIC_KEYS = {
    "kind", "length", "young", "shear", "density", "outer_diameter", "wall", "torsion_modes",
    "xy_modes", "xz_modes", "boundary", "tip_mass", "tip_inertia", "damping", "joint_rotation",
    "armature",
}  # fmt: skip


def _vector(value: object, where: str) -> tuple[float, float, float]:
    if not (isinstance(value, list) and len(value) == 3):
        raise ModelError(f"{where} must be a list of 3 numbers, got {value!r}")
    try:
        x, y, z = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ModelError(f"{where} must be a list of 3 numbers, got {value!r}") from None
    return (x, y, z)


def arm_from_dict(data: Mapping[str, Any], source: str) -> FlexibleArm:
    """Build an arm from a mapping (a YAML file's content); errors name ``source`` and the key.

    Format: ``{name, gravity: [x, y, z], stations, links: [...]}``; a link has ``kind: rigid``
    (mass, com, inertia: diagonal [3] or 3x3, distal, joint_rotation) or ``kind: elastic``
    (length, young, shear, density, outer_diameter, wall: a round tube; torsion_modes,
    xy_modes, xz_modes, boundary, tip_mass, tip_inertia, damping, joint_rotation).
    """
    links_spec = data.get("links")
    if not isinstance(links_spec, list) or not links_spec:
        raise ModelError(f"{source}: links must be a non-empty list, got {links_spec!r}")
    links: list[Link] = []
    for i, spec in enumerate(links_spec):
        key = f"{source}: links[{i}]"
        if not isinstance(spec, dict):
            raise ModelError(f"{key} must be a mapping, got {spec!r}")
        kind = spec.get("kind")
        allowed = _RIGID_KEYS if kind == "rigid" else _ELASTIC_KEYS
        if kind not in ("rigid", "elastic"):
            raise ModelError(f"{key}.kind must be rigid or elastic, got {kind!r}")
        unknown = sorted(set(spec) - allowed)
        if unknown:
            raise ModelError(
                f"{key}: unknown key {unknown[0]!r} (known: {', '.join(sorted(allowed))})"
            )
        rot = _rotation(spec.get("joint_rotation", []), f"{key}.joint_rotation")
        if kind == "rigid":
            inertia = spec.get("inertia", [0.0, 0.0, 0.0])
            if isinstance(inertia, list) and len(inertia) == 3 and not isinstance(inertia[0], list):
                ix, iy, iz = _vector(inertia, f"{key}.inertia")
                inertia = [[ix, 0.0, 0.0], [0.0, iy, 0.0], [0.0, 0.0, iz]]
            mat = tuple(_vector(row, f"{key}.inertia") for row in inertia)
            links.append(
                RigidLink(
                    mass=spec.get("mass"),  # type: ignore[arg-type]  # checked by validate
                    com=_vector(spec.get("com", [0, 0, 0]), f"{key}.com"),
                    inertia=mat,
                    distal=_vector(spec.get("distal", [0, 0, 0]), f"{key}.distal"),
                    joint_rotation=rot,
                    armature=spec.get("armature", 0.0),
                )
            )
            continue
        material = Material(
            young=spec.get("young", ALUMINIUM.young),
            shear=spec.get("shear", ALUMINIUM.shear),
            density=spec.get("density", ALUMINIUM.density),
        )
        od = check_positive(spec.get("outer_diameter"), f"{key}.outer_diameter", "m")
        wall = check_positive(spec.get("wall", od / 2), f"{key}.wall", "m")
        if wall > od / 2:
            raise ModelError(f"{key}.wall must be <= outer_diameter / 2 = {od / 2} m, got {wall}")
        links.append(
            ElasticLink(
                length=spec.get("length"),  # type: ignore[arg-type]  # checked by validate
                material=material,
                section=Section.tube(od, wall),
                torsion_modes=spec.get("torsion_modes", 2),
                xy_modes=spec.get("xy_modes", 2),
                xz_modes=spec.get("xz_modes", 2),
                boundary=spec.get("boundary", "clamped-free"),
                tip_mass=spec.get("tip_mass", 0.0),
                tip_inertia=_vector(spec.get("tip_inertia", [0, 0, 0]), f"{key}.tip_inertia"),
                damping=spec.get("damping", 0.0),
                joint_rotation=rot,
                armature=spec.get("armature", 0.0),
            )
        )
    gravity = _vector(data.get("gravity", [0.0, 0.0, -9.81]), f"{source}: gravity")
    return FlexibleArm(
        tuple(links),
        gravity=gravity,
        stations=data.get("stations", DEFAULT_STATIONS),
        name=source,
    )


def arm_from_yaml(path: str | Path) -> FlexibleArm:
    """Read an arm file (format: :func:`arm_from_dict`); errors name the file and the key."""
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ModelError(f"{p}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ModelError(f"{p}: not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ModelError(f"{p}: must be a mapping with links:, got {type(data).__name__}")
    return arm_from_dict(data, str(p))


def _shift(mass: float, r: FloatArray) -> FloatArray:
    """Steiner's term: the inertia of a point mass at r [kg m^2]."""
    return np.asarray(mass * (r @ r * np.eye(3) - np.outer(r, r)), dtype=float)


def rigid_arm_inertias(arm: FlexibleArm) -> Sequence[tuple[float, FloatArray, FloatArray]]:
    """(mass [kg], centre of mass [m], inertia about it [kg m^2]) of every link undeformed,
    in the link's frame, its tip body included: the rigid chain of the rigid limit."""
    out = []
    for link in arm.links:
        if isinstance(link, RigidLink):
            out.append((link.mass, np.array(link.com, dtype=float), np.array(link.inertia)))
            continue
        length, s, rho = link.length, link.section, link.material.density
        m = link.mass
        ix = rho * s.polar * length
        iyz = m * length**2 / 12.0
        inertia = np.diag([ix, rho * s.iy * length + iyz, rho * s.iz * length + iyz])
        com = np.array([length / 2, 0.0, 0.0])
        mt = link.tip_mass
        total = m + mt
        c = (m * com + mt * np.array([length, 0.0, 0.0])) / total

        tip = np.diag(np.array(link.tip_inertia, dtype=float))
        inertia = inertia + _shift(m, com - c) + tip + _shift(mt, np.array([length, 0.0, 0.0]) - c)
        mp = link.payload_mass
        if mp > 0:
            at = np.array([link.payload_at, 0.0, 0.0])
            both = (total * c + mp * at) / (total + mp)
            inertia = (
                inertia + _shift(total, c - both) + np.array(link.payload_inertia)
                + _shift(mp, at - both)
            )  # fmt: skip
            total, c = total + mp, both
        out.append((total, c, inertia))
    return out
