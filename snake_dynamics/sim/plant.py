"""A physical plant for the emulated robot: servo pulses in, joint motion and potentiometer
voltages out (no ROS, no I/O).

Each servo channel's pulse width becomes the servo's target angle through the robot's
calibration (:class:`PulseMap`, the inverse of PROTOCOL.md's "Calibration"), held from the
end of the pulse that carried it; the servo acts on it its ``dead_time`` later (its
electronics: the pulse period adds its own 0-20 ms before, as on the robot) with the servo
model of :mod:`snake_dynamics.servo`; the MFM dynamics of the robot's body, with its masses
and inertias scaled by ``mass_scale``, move the joints (:class:`Simulator`, one step per
millisecond). A channel without pulses for :data:`LIMP_AFTER` is limp: no torque but the
gearbox's ``limp_damping``. Each joint's potentiometer turns with the servo shaft and gives
offset_mv + mv_per_rad * shaft angle plus Gaussian noise, in whole millivolts.

With a ``ground:`` the body is free on a floor under gravity (the robot config's model made
floating, :func:`snake_dynamics.floating.on_the_ground`, with the plant file's
floor): the servos move it across the floor (:class:`CrawlingSimulator`), and a
``pose_sensor:`` (:mod:`snake_dynamics.sim.pose_sensor`) tracks a marker on one body, as a
motion-capture system would. Without one the tail is fixed and there is no gravity.

The plant file (:func:`load_plant`, e.g. config/plant.yaml, config/plant_floor.yaml)::

    servo: {defaults: {...}, joints: {joint_k: {...}}}  # the robot config's servo: keys
    mass_scale: 1.1          # body masses and inertias times this, > 0
    limp_damping: 0.05       # [N m s/rad] a joint without pulses, >= 0
    potentiometer: {mv_per_rad: 1273.24, offset_mv: 2500.0, noise_mv: 3.0, seed: 1}
    ground: {mu_along: 0.12, mu_across: 0.45, ...}  # snake_dynamics.ground.Ground's keys
    pose_sensor: {rate: 100.0, latency: 0.02, ...}  # PoseSensorParams' keys; needs ground
    engine: mfm              # or mujoco: the body, floor and joints on MuJoCo
    mujoco: {timestep: 0.0005, ...}  # engine: mujoco only (sim.mujoco_plant.params)
    effects: {backlash: 0.0087, ...}  # engine: mujoco only: what the model leaves out

:func:`snake_dynamics.sim.engines.make_plant` builds the plant a file asks for:
:class:`Plant` (``engine: mfm``, the default) or
:class:`snake_dynamics.sim.mujoco_plant.MujocoPlant` (``engine: mujoco``).
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray
from scipy.spatial.transform import Rotation

from snake_dynamics.errors import ModelError
from snake_dynamics.floating import FloatingState, body_pose, on_the_ground
from snake_dynamics.ground import Ground
from snake_dynamics.model import SnakeModel, read_robot_yaml
from snake_dynamics.servo import ServoModel, ServoParams
from snake_dynamics.sim.crawler import CrawlingSimulator
from snake_dynamics.sim.identification import PULSE_PERIOD
from snake_dynamics.sim.pose_sensor import Pose, PoseReading, PoseSensor, PoseSensorParams
from snake_dynamics.sim.simulator import InputSource, Simulator

if TYPE_CHECKING:
    from snake_dynamics.sim.mujoco_plant.params import Effects, MujocoParams

FloatArray = NDArray[np.float64]

#: A channel whose last pulse ended longer ago than this is limp [s] (2.5 pulse periods).
LIMP_AFTER = 0.05

#: The pulse widths a servo's decoder takes as a target [us]; it ignores any other (keeps its
#: last target). A hobby servo reads 0.5-2.5 ms pulses and ignores what is far outside.
DECODER_US = (300.0, 3000.0)
#: The firmware's pulse period [us] (:data:`.identification.PULSE_PERIOD`). simavr 1.6 has no
#: OCR double-buffering: a pulse the firmware shortens below the timer's count while it runs
#: misses its compare match, stays high through the next period's start and falls at that
#: period's match, one period plus the new width. A silicon ATmega2560 double-buffers OCR in
#: its PWM modes and sends the running pulse and then the new one, so the plant takes such a
#: pulse as the second (its width less one period, ending where it ends): what the real
#: robot's servo gets.
PWM_PERIOD_US = 1e6 * PULSE_PERIOD

#: Two pulse ends closer than this are one pulse seen twice [s] (pulses are 20 ms apart; the
#: runner's ages are whole cycles, 62.5 ns, and t - age rounds differently each time).
EDGE_TOL_S = 1e-6

#: Millivolts meaning "no value for this channel" in the runner's reply.
NO_VOLTAGE = 0xFFFF

_KEYS = (
    "servo",
    "mass_scale",
    "limp_damping",
    "potentiometer",
    "ground",
    "pose_sensor",
    "engine",
    "mujoco",
    "effects",
)
#: The plant engines: the robot config's own MFM simulator, or MuJoCo.
ENGINES = ("mfm", "mujoco")
_POT_KEYS = ("mv_per_rad", "offset_mv", "noise_mv", "seed")


@dataclass(frozen=True)
class Potentiometer:
    """A servo's feedback potentiometer on its output shaft.

    Attributes:
        mv_per_rad: wiper voltage per rad of shaft angle [mV/rad] (negative: wired reversed).
        offset_mv: wiper voltage at shaft angle 0 (the pulse range's centre) [mV].
        noise_mv: Gaussian noise on every reading, RMS [mV], >= 0.
        seed: the noise generator's seed (same seed, same noise).
    """

    mv_per_rad: float = 1273.24
    offset_mv: float = 2500.0
    noise_mv: float = 3.0
    seed: int = 1


@dataclass(frozen=True)
class PlantParams:
    """Everything a plant file sets.

    Attributes:
        servo: the servos' parameters, one per joint.
        mass_scale: the body's masses and inertias relative to the robot config's.
        limp_damping: a limp joint's gearbox damping [N m s/rad].
        potentiometer: the feedback potentiometers (the same on every joint).
        ground: the floor the body lies on (None: the tail fixed, no gravity).
        pose_sensor: the external pose sensor (None: none; needs ``ground``).
        source: the plant file.
        engine: ``mfm`` (the robot config's own simulator) or ``mujoco``.
        mujoco: the MuJoCo engine's settings (None: its defaults; ``engine: mujoco`` only).
        effects: what the MuJoCo plant adds to the model (None: none; ``engine: mujoco``
            only, where a file without ``effects:`` gets every effect at its default).
    """

    servo: ServoModel
    mass_scale: float = 1.0
    limp_damping: float = 0.05
    potentiometer: Potentiometer = Potentiometer()
    ground: Ground | None = None
    pose_sensor: PoseSensorParams | None = None
    source: str = "built in"
    engine: str = "mfm"
    mujoco: MujocoParams | None = None
    effects: Effects | None = None


def _number(value: object, where: str, low: float, closed: bool, unit: str) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    ok = ok and math.isfinite(float(value))  # type: ignore[arg-type]
    ok = ok and (float(value) >= low if closed else float(value) > low)  # type: ignore[arg-type]
    if not ok:
        raise ModelError(
            f"{where} must be a number {'>=' if closed else '>'} {low:g} {unit}, got {value!r}"
        )
    return float(value)  # type: ignore[arg-type]


def plant_from_dict(doc: object, joint_names: Sequence[str], source: str) -> PlantParams:
    """The plant of a plant file's content.

    Raises:
        ModelError: unknown keys, bad values; one line naming the key.
    """
    if not isinstance(doc, Mapping):
        raise ModelError(f"a plant file is a mapping with keys {list(_KEYS)}, got {doc!r}")
    unknown = sorted(set(doc) - set(_KEYS))
    if unknown:
        raise ModelError(f"unknown keys {unknown}; allowed {list(_KEYS)}")
    servo = ServoModel.from_dict(doc.get("servo"), joint_names, source)
    pot = doc.get("potentiometer") or {}
    if not isinstance(pot, Mapping):
        raise ModelError(f"potentiometer must be a mapping with keys {list(_POT_KEYS)}")
    unknown = sorted(set(pot) - set(_POT_KEYS))
    if unknown:
        raise ModelError(f"potentiometer: unknown keys {unknown}; allowed {list(_POT_KEYS)}")
    base = Potentiometer()
    seed = pot.get("seed", base.seed)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ModelError(f"potentiometer.seed must be an integer >= 0, got {seed!r}")
    mv_per_rad = _number(
        pot.get("mv_per_rad", base.mv_per_rad),
        "potentiometer.mv_per_rad",
        -math.inf,
        False,
        "mV/rad",
    )
    if mv_per_rad == 0.0:
        raise ModelError("potentiometer.mv_per_rad must not be 0 mV/rad")
    ground = doc.get("ground")
    if ground is not None and not isinstance(ground, Mapping):
        raise ModelError(
            f"ground must be a mapping of snake_dynamics.ground.Ground's keys, got {ground!r}"
        )
    sensor = doc.get("pose_sensor")
    if sensor is not None and ground is None:
        raise ModelError("pose_sensor needs a ground: (a fixed-tail plant does not move)")
    engine = doc.get("engine", "mfm")
    if engine not in ENGINES:
        raise ModelError(f"engine must be one of {list(ENGINES)}, got {engine!r}")
    mujoco, effects = None, None
    if engine == "mujoco":
        from snake_dynamics.sim.mujoco_plant.params import effects_from_dict, mujoco_from_dict

        mujoco, effects = mujoco_from_dict(doc.get("mujoco")), effects_from_dict(doc.get("effects"))
        floor: Mapping[str, object] = ground or {}
        backward = floor.get("mu_backward")
        if backward is not None and backward != floor.get("mu_along", Ground.mu_along):
            raise ModelError(
                "ground.mu_backward: the mujoco engine has one coefficient along a body both "
                f"ways; set it to null or to mu_along, got {backward!r}"
            )
    else:
        for key in ("mujoco", "effects"):
            if doc.get(key) is not None:
                raise ModelError(f"{key}: needs engine: mujoco (this plant's engine is mfm)")
    return PlantParams(
        servo=servo,
        mass_scale=_number(doc.get("mass_scale", 1.0), "mass_scale", 0.0, False, "(ratio)"),
        limp_damping=_number(doc.get("limp_damping", 0.05), "limp_damping", 0.0, True, "N m s/rad"),
        potentiometer=Potentiometer(
            mv_per_rad=mv_per_rad,
            offset_mv=_number(
                pot.get("offset_mv", base.offset_mv), "potentiometer.offset_mv", 0.0, True, "mV"
            ),
            noise_mv=_number(
                pot.get("noise_mv", base.noise_mv), "potentiometer.noise_mv", 0.0, True, "mV"
            ),
            seed=seed,
        ),
        ground=None if ground is None else Ground.from_dict(ground),
        pose_sensor=(
            None
            if sensor is None
            else PoseSensorParams.from_dict(sensor, n_bodies=len(joint_names) + 1)
        ),
        source=source,
        engine=engine,
        mujoco=mujoco,
        effects=effects,
    )


def load_plant(path: str | Path, joint_names: Sequence[str]) -> PlantParams:
    """Read a plant file (see the module's docstring for its keys; ``base: plant.yaml``
    starts from another plant file and lays this one's keys over it, as a robot config's
    ``base:`` does).

    Raises:
        ModelError: unreadable file, not YAML, unknown keys or bad values; one line naming
            the file and the key.
    """
    path = Path(path)
    doc = read_robot_yaml(path, "plant file")
    try:
        return plant_from_dict(doc, joint_names, str(path))
    except ModelError as exc:
        raise ModelError(f"{path}: {exc}") from None


#: Realistic ranges of a hobby servo's parameters and of a built body's mass scale (a test
#: or benchmark draws plants within them): name -> (low, high), SI units.
REALISTIC_RANGES: dict[str, tuple[float, float]] = {
    "dead_time": (0.004, 0.014),
    "deadband": (0.003, 0.008),
    "stiffness": (7.0, 14.0),
    "damping": (0.35, 0.8),
    "stall_torque": (0.7, 1.1),
    "no_load_speed": (5.0, 8.0),
    "mass_scale": (0.9, 1.2),
}


#: Realistic ranges of a table's Coulomb coefficients for a robot's printed shells (PLA or
#: PETG on laminate, wood, lino, card): name -> (low, high). A snake crawls on a floor that
#: grips across its bodies more than along them: :func:`random_plant` draws mu_across at
#: least :data:`MIN_ANISOTROPY` times mu_along.
FLOOR_RANGES: dict[str, tuple[float, float]] = {
    "mu_along": (0.06, 0.25),
    "mu_across": (0.25, 0.8),
}
#: The flat underside of a drawn floor plant's bodies [m]: config/robot_table.yaml's
#: ground.width, the body the prediction knows (a ruler measures it; nothing fits it).
TABLE_WIDTH = 0.05
#: The least mu_across / mu_along of a drawn floor.
MIN_ANISOTROPY = 2.0
#: The pose sensor of a drawn floor plant: config/plant_floor.yaml's motion capture.
RANDOM_POSE_SENSOR: dict[str, float | int] = {
    "rate": 100.0,
    "latency": 0.015,
    "position_noise": 0.0005,
    "yaw_noise": 0.005,
    "dropout": 0.02,
    "dropout_burst": 3.0,
    "body": 0,
    "seed": 2,
}


def random_plant(rng: np.random.Generator, floor: bool = False) -> dict[str, object]:
    """A plant file's content drawn uniformly within :data:`REALISTIC_RANGES` (the same
    servo on every joint, the default potentiometers); with ``floor``, on a table drawn
    within :data:`FLOOR_RANGES` (mu_along first, then mu_across within its range and at
    least :data:`MIN_ANISOTROPY` times it; bodies :data:`TABLE_WIDTH` wide; the Ground's
    other defaults), tracked by
    :data:`RANDOM_POSE_SENSOR`. The servo's draws come first: a seed gives the same servo
    with or without the floor."""
    drawn = {k: float(rng.uniform(low, high)) for k, (low, high) in REALISTIC_RANGES.items()}
    mass_scale = drawn.pop("mass_scale")
    doc: dict[str, object] = {"servo": {"defaults": drawn}, "mass_scale": mass_scale}
    if floor:
        along = float(rng.uniform(*FLOOR_RANGES["mu_along"]))
        low, high = FLOOR_RANGES["mu_across"]
        across = float(rng.uniform(max(low, MIN_ANISOTROPY * along), high))
        doc["ground"] = {"mu_along": along, "mu_across": across, "width": TABLE_WIDTH}
        doc["pose_sensor"] = dict(RANDOM_POSE_SENSOR)
    return doc


@dataclass(frozen=True)
class PulseMap:
    """One joint's servo channel and its pulse calibration (PROTOCOL.md, "Calibration"):
    shaft angle s = direction * q + zero_offset, pulse = centre + s * range / travel.

    Attributes:
        channel: servo channel 0..15.
        direction: +1 or -1.
        zero_offset: shaft angle at joint angle 0 [rad].
        pulse_min_us: shortest pulse [us].
        pulse_max_us: longest pulse [us].
        travel: shaft angle swept by the pulse range [rad].
    """

    channel: int
    direction: int
    zero_offset: float
    pulse_min_us: float
    pulse_max_us: float
    travel: float

    def target(self, pulse_us: float) -> float:
        """The joint angle a servo turns to for a pulse of ``pulse_us`` [us] (a servo knows
        no joint limits: pulses outside the range drive to its ends) [rad]."""
        width = min(max(pulse_us, self.pulse_min_us), self.pulse_max_us)
        centre = 0.5 * (self.pulse_min_us + self.pulse_max_us)
        shaft = (width - centre) * self.travel / (self.pulse_max_us - self.pulse_min_us)
        return self.direction * (shaft - self.zero_offset)


class PulseTargets(InputSource):
    """The servos' references: each joint's pulse targets, held from the end of their pulse,
    seen ``dead_time`` late; no rate reference (a pulse carries none), no feed-forward.

    Args:
        rest: the targets before the first pulse [rad], shape (n,).
        dead_time: T_d per joint [s], shape (n,).
    """

    def __init__(self, rest: FloatArray, dead_time: FloatArray) -> None:
        self._lags = [float(x) for x in dead_time]
        self._times = [[-math.inf] for _ in rest]  # ascending, per joint
        self._targets = [[float(x)] for x in rest]

    def set(self, joint: int, t: float, target: float) -> None:
        """The servo of ``joint`` gets ``target`` [rad] from time t [s] on (before its dead
        time); older targets it can no longer see are forgotten."""
        times, targets = self._times[joint], self._targets[joint]
        if target == targets[-1] or t <= times[-1]:
            return
        # the target in force a second before the oldest time still looked up stays
        keep = max(bisect.bisect_right(times, t - self._lags[joint] - 1.0) - 1, 0)
        del times[:keep], targets[:keep]
        times.append(t)
        targets.append(target)

    def latest(self, joint: int) -> float:
        """The newest target of ``joint`` [rad]."""
        return self._targets[joint][-1]

    def inputs(self, t: FloatArray) -> FloatArray:
        n = len(self._times)
        u = np.zeros((t.size, 3 * n))
        first, last = float(t[0]), float(t[-1])
        joints = zip(self._times, self._targets, self._lags, strict=True)
        for j, (times, targets, lag) in enumerate(joints):
            k = bisect.bisect_right(times, first - lag) - 1
            u[:, n + j] = targets[max(k, 0)]
            changes = range(k + 1, bisect.bisect_right(times, last - lag))
            if changes:  # each later target from the first stage time that sees it on
                late = t - lag
                for i in changes:
                    u[late.searchsorted(times[i], side="left") :, n + j] = targets[i]
        return u


class Plant:
    """The robot's servos and body, stepped by the emulated MCU's clock.

    Args:
        model: the robot's body (the robot config's; ``params.mass_scale`` is applied here,
            and with ``params.ground`` it is put on that floor under gravity; without one its
            tail is held and gravity is off, as the paper's snake, even under a robot
            config that lies on a floor).
        pulses: each joint's channel and calibration, in joint order.
        params: the plant file.
        dt: the dynamics' step [s].

    Raises:
        ModelError: pulses or servos for another number of joints; a ground under a robot
            on wheels.
    """

    def __init__(
        self,
        model: SnakeModel,
        pulses: Sequence[PulseMap],
        params: PlantParams,
        dt: float = 0.001,
    ) -> None:
        self._init_common(model, pulses, params, dt)
        self._simulators: dict[tuple[bool, ...], Simulator] = {}
        self.sim = self._simulator(self.powered)
        self._start_pose_sensor()

    def _init_common(
        self, model: SnakeModel, pulses: Sequence[PulseMap], params: PlantParams, dt: float
    ) -> None:
        """What every engine shares: the scaled body, the pulses and targets, the pots."""
        if len(pulses) != model.n_joints or params.servo.n_joints != model.n_joints:
            raise ModelError(
                f"the plant needs {model.n_joints} joints' pulses and servos, got "
                f"{len(pulses)} and {params.servo.n_joints}"
            )
        scale = params.mass_scale
        if params.ground is not None:
            model = on_the_ground(dataclasses.replace(model, ground=params.ground))
        else:  # held by its tail and carried (the paper's zero gravity), whatever the config
            model = dataclasses.replace(model, gravity=np.zeros(3))
        self.model = dataclasses.replace(
            model, masses=model.masses * scale, inertias=model.inertias * scale
        )
        self.pulses = tuple(pulses)
        self._channels = np.array([p.channel for p in pulses], dtype=np.intp)
        self._directions = np.array([float(p.direction) for p in pulses])
        self._zero_offsets = np.array([p.zero_offset for p in pulses])
        self.params = params
        self.dt = dt
        n = model.n_joints
        self.targets = PulseTargets(np.zeros(n), params.servo.dead_times)
        self.powered = np.zeros(n, dtype=bool)
        self._last_edge = np.full(n, -math.inf)
        self.ignored_pulses = 0  # outside DECODER_US
        self.missed_compares = 0  # simavr's, taken as silicon sends them (PWM_PERIOD_US)
        self._rng = np.random.default_rng(params.potentiometer.seed)

    def _start_pose_sensor(self) -> None:
        sensor = self.params.pose_sensor
        self.pose_sensor = None if sensor is None else PoseSensor(sensor, self.time)
        self._delivered: list[PoseReading] = []  # by the sensor within advance()

    def _simulator(self, powered: NDArray[np.bool_]) -> Simulator:
        """The simulator whose servos are those of the powered joints, limp elsewhere."""
        key = tuple(bool(p) for p in powered)
        if key not in self._simulators:
            limp = ServoParams(0.0, 0.0, 0.0, self.params.limp_damping, math.inf, math.inf)
            servos = tuple(
                s if p else limp for s, p in zip(self.params.servo.joints, key, strict=True)
            )
            kind = Simulator if self.params.ground is None else CrawlingSimulator
            self._simulators[key] = kind(
                self.model, self.dt, servo=ServoModel(servos, self.params.servo.source)
            )
        return self._simulators[key]

    @property
    def base_state(self) -> FloatingState | None:
        """The tail's pose and velocity on the floor (None: a fixed tail)."""
        return self.sim.base_state if isinstance(self.sim, CrawlingSimulator) else None

    @property
    def time(self) -> float:
        """The plant's time [s]."""
        return self.sim.time

    @property
    def q(self) -> FloatArray:
        """Joint angles [rad], shape (n,)."""
        return self.sim.q

    @property
    def shaft(self) -> FloatArray:
        """The servos' output shafts [rad], shape (n,), which the pots read: the joint
        angles (an engine with gear play or brackets has them apart)."""
        return self.q

    def step(self, t: float, width_us: Sequence[float], age_s: Sequence[float]) -> FloatArray:
        """Take the pulses seen at time t [s] and move the joints to t.

        Args:
            t: the emulated time [s].
            width_us: every channel's latest complete pulse [us] (0: none yet), 16 values.
            age_s: how long ago each of those pulses ended [s] (inf: none).

        Returns:
            every channel's potentiometer voltage [mV], whole, :data:`NO_VOLTAGE` for a
            channel without a joint, shape (16,).
        """
        self.take_pulses(t, width_us, age_s)
        self.advance(t)
        return self.millivolts(len(width_us))

    def take_pulses(self, t: float, width_us: Sequence[float], age_s: Sequence[float]) -> None:
        """Take the pulses seen at time t [s] (:meth:`step`'s arguments) without moving: each
        new pulse's target acts from its end plus its servo's dead time on; a joint with
        pulses is powered, and limp without, from the plant's present time on."""
        powered = np.zeros_like(self.powered)
        for j, pulse in enumerate(self.pulses):
            width, age = width_us[pulse.channel], age_s[pulse.channel]
            if width <= 0.0 or age > LIMP_AFTER:
                continue
            powered[j] = True
            edge = t - age
            if edge <= self._last_edge[j] + EDGE_TOL_S:
                continue  # taken already (seen again, its age rounded otherwise)
            self._last_edge[j] = edge
            if width > DECODER_US[1] and DECODER_US[0] <= width - PWM_PERIOD_US <= DECODER_US[1]:
                width -= PWM_PERIOD_US  # simavr's missed compare: the second period's pulse
                self.missed_compares += 1
            if not DECODER_US[0] <= width <= DECODER_US[1]:
                self.ignored_pulses += 1
                continue
            self.targets.set(j, edge, pulse.target(width))
        if not np.array_equal(powered, self.powered):
            self._power(powered)

    def _power(self, powered: NDArray[np.bool_]) -> None:
        """The servos of ``powered`` joints drive, the others are limp, from now on."""
        sim = self._simulator(powered)
        if isinstance(sim, CrawlingSimulator):  # the body stays where it lies
            sim.reset(self.sim.time, self.sim.q, self.sim.qd, base=self.base_state)
        else:
            sim.reset(self.sim.time, self.sim.q, self.sim.qd)
        self.sim, self.powered = sim, powered

    def _run_until(self, t: float) -> None:
        """Move to the last step at or before t [s] under the targets taken so far."""
        self.sim.run_until(t, self.targets, max_steps=1_000_000)

    def advance(self, t: float) -> None:
        """Move the joints (and the body) to the last step at or before time t [s] under the
        pulses taken so far, stopping at each step the pose sensor samples on (the first step
        at or after each of its sample times, however far one call moves)."""
        sensor = self.pose_sensor
        while sensor is not None:
            steps = math.ceil((sensor.next_sample - self.time) / self.dt - 1e-9)
            if self.time + steps * self.dt > t + 1e-9:
                break
            self._run_until(self.time + steps * self.dt)
            self._delivered += sensor.step(self.time, self.marker_pose)
        self._run_until(t)

    def warm_up(self) -> None:
        """Compile the kernels a run takes (numba's cache), and build the simulator of the
        servos powered (its step count's search takes tens of ms), not at the first pulses."""
        self.sim.warm_up()
        self._simulator(np.ones_like(self.powered)).warm_up()
        if self.pose_sensor is not None:
            self.marker_pose()

    def marker_pose(self) -> Pose:
        """The pose sensor's marker now: its body's CM [m], shape (3,), and orientation
        (x, y, z, w), shape (4,), in the world frame.

        Raises:
            ModelError: a fixed-tail plant (no ground: nothing to track).
        """
        sim = self.sim
        if not isinstance(sim, CrawlingSimulator) or self.params.pose_sensor is None:
            raise ModelError("a pose sensor needs a plant on a ground with pose_sensor:")
        y = sim.y
        rotation, centre = body_pose(
            sim.floating.params, y[:3], y[3:7], sim.q, self.params.pose_sensor.body
        )
        return centre, np.asarray(Rotation.from_matrix(rotation).as_quat())

    def pose_readings(self) -> list[PoseReading]:
        """The pose sensor's readings delivered by the plant's time since the last call,
        oldest first (none without a pose sensor); call once per :meth:`step`."""
        if self.pose_sensor is None:
            return []
        out, self._delivered = self._delivered, []
        return out + self.pose_sensor.step(self.time, self.marker_pose)

    def millivolts(self, channels: int = 16) -> FloatArray:
        """Every channel's potentiometer voltage now [mV] (see :meth:`step`)."""
        pot = self.params.potentiometer
        out = np.full(channels, float(NO_VOLTAGE))
        shaft = self._directions * self.shaft + self._zero_offsets  # s of every PulseMap
        mv = pot.offset_mv + pot.mv_per_rad * shaft
        if pot.noise_mv:
            mv += self._rng.normal(0.0, pot.noise_mv, len(self.pulses))
        out[self._channels] = np.clip(np.rint(mv), 0, NO_VOLTAGE - 1)
        return out
