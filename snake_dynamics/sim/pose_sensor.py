"""An external pose sensor: a motion-capture system or an overhead camera tracking one marker
on the emulated robot (no ROS, no I/O).

It samples the marker's pose every 1 / ``rate`` seconds of the plant's (emulated) time, on
the grid t_k = t0 + k / rate, at the first plant step at or after t_k; loses some samples
(dropouts: a two-state Markov chain, so a dropout can last several samples, as when the
marker is hidden); adds Gaussian noise to the position (each axis) and to the heading (a
rotation about the world's vertical); and delivers each sample ``latency`` seconds after it
was taken. A :class:`PoseReading` carries the sample's frame number k (consecutive: a gap is
a lost sample), its time, position and orientation. :func:`encode` and :func:`decode` are its
datagram (the plant process sends, ``pose_sensor_node`` receives).

The plant file's ``pose_sensor:`` keys (:meth:`PoseSensorParams.from_dict`)::

    pose_sensor: {rate: 100.0, latency: 0.02, position_noise: 0.0005, yaw_noise: 0.005,
                  dropout: 0.02, dropout_burst: 3.0, body: 0, seed: 2}
"""

from __future__ import annotations

import math
import struct
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from snake_dynamics.errors import ModelError, SnakeDynamicsError

FloatArray = NDArray[np.float64]

#: Times closer than this are the same instant [s] (the plant's steps are whole microseconds).
TIME_TOL = 1e-9


@dataclass(frozen=True)
class PoseSensorParams:
    """A pose sensor's rate, latency, noise and dropouts (a plant file's ``pose_sensor:``).

    Attributes:
        rate: samples per second [Hz], 1..1000 (a mocap system: 100-300 Hz; a camera: 30 Hz).
        latency: from taking a sample to delivering it [s], >= 0.
        position_noise: Gaussian noise on each axis of the position, RMS [m], >= 0.
        yaw_noise: Gaussian noise on the heading (about the world's z), RMS [rad], >= 0.
        dropout: the share of samples lost in the long run, 0..0.9.
        dropout_burst: the mean number of samples a dropout lasts, >= 1 (1: every dropout
            loses one sample).
        body: the body carrying the marker at its CM (0: the tail, as /sim/odom).
        seed: the random generator's seed (same seed, same noise and dropouts).
    """

    rate: float = 100.0
    latency: float = 0.02
    position_noise: float = 0.0005
    yaw_noise: float = 0.005
    dropout: float = 0.0
    dropout_burst: float = 1.0
    body: int = 0
    seed: int = 2

    @classmethod
    def from_dict(cls, spec: object, n_bodies: int) -> PoseSensorParams:
        """The ``pose_sensor:`` mapping of a plant file, for a robot of ``n_bodies`` bodies.

        Raises:
            ModelError: unknown keys or bad values; one line naming ``pose_sensor.<key>``.
        """
        allowed = [f.name for f in fields(cls)]
        if not isinstance(spec, Mapping):
            raise ModelError(f"pose_sensor must be a mapping with keys {allowed}, got {spec!r}")
        unknown = sorted(set(spec) - set(allowed))
        if unknown:
            raise ModelError(f"pose_sensor: unknown keys {unknown}; allowed {allowed}")
        params = cls(**spec)
        for name, low, high, unit in (
            ("rate", 1.0, 1000.0, "Hz"),  # the plant steps at 1 kHz
            ("latency", 0.0, 10.0, "s"),
            ("position_noise", 0.0, math.inf, "m"),
            ("yaw_noise", 0.0, math.pi, "rad"),
            ("dropout", 0.0, 0.9, "(share of samples)"),
            ("dropout_burst", 1.0, math.inf, "samples"),
        ):
            value = getattr(params, name)
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            if not (ok and math.isfinite(value) and low <= value <= high):
                raise ModelError(
                    f"pose_sensor.{name} must be a number in [{low:g}, {high:g}] {unit}, "
                    f"got {value!r}"
                )
        if params.enter_dropout > 1.0:
            raise ModelError(
                f"pose_sensor.dropout {params.dropout:g} needs dropout_burst >= "
                f"{params.dropout / (1.0 - params.dropout):g} samples"
            )
        for name, high in (("body", n_bodies - 1), ("seed", 2**63 - 1)):
            value = getattr(params, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
                raise ModelError(f"pose_sensor.{name} must be an integer 0..{high}, got {value!r}")
        return params

    @property
    def enter_dropout(self) -> float:
        """The probability that a sample after a seen one is lost: d / (L (1 - d)), which
        makes the chain's long-run share of lost samples d with bursts of mean length L."""
        return self.dropout / (self.dropout_burst * (1.0 - self.dropout))

    @property
    def stay_dropped(self) -> float:
        """The probability that a sample after a lost one is lost too: 1 - 1 / L."""
        return 1.0 - 1.0 / self.dropout_burst


class PoseReading(NamedTuple):
    """One delivered sample of the marker's pose.

    Attributes:
        frame: the sample's number k on the sensor's grid (consecutive: a gap is a loss).
        time: when it was taken (the plant's time) [s].
        position: the marker in the world frame [m], shape (3,).
        quaternion: the marker's body frame in the world, (x, y, z, w), shape (4,).
    """

    frame: int
    time: float
    position: FloatArray
    quaternion: FloatArray


#: A marker pose: position [m], shape (3,), and quaternion (x, y, z, w), shape (4,).
Pose = tuple[FloatArray, FloatArray]


def yawed(quaternion: FloatArray, angle: float) -> FloatArray:
    """The orientation ``quaternion`` (x, y, z, w) turned by ``angle`` [rad] about the
    world's z: q_z(angle) * q (Hamilton product), shape (4,)."""
    s, c = math.sin(0.5 * angle), math.cos(0.5 * angle)
    x, y, z, w = quaternion
    return np.array([c * x - s * y, c * y + s * x, c * z + s * w, c * w - s * z])


class PoseSensor:
    """The sensor's sampling, dropouts, noise and latency, stepped with the plant.

    Args:
        params: rate, latency, noise, dropouts and seed.
        t0: the time of the first sample [s].
    """

    def __init__(self, params: PoseSensorParams, t0: float = 0.0) -> None:
        self.params = params
        self._t0 = t0
        self._frame = 0  # the next sample's number
        self._dropped = False  # the chain's state after the last sample
        self._rng = np.random.default_rng(params.seed)
        self._pending: deque[PoseReading] = deque()
        self.samples = 0  # taken
        self.lost = 0  # of them, dropped

    @property
    def next_sample(self) -> float:
        """When the next sample is due: t_k of the grid [s]."""
        return self._t0 + self._frame / self.params.rate

    def step(self, t: float, marker: Callable[[], Pose]) -> list[PoseReading]:
        """Take the sample due at time t [s] (if one is), and deliver those due by then.

        Args:
            t: the plant's time [s], not decreasing from call to call.
            marker: the marker's pose now (called only when a sample is taken).

        Returns:
            The readings delivered at t, oldest first.
        """
        rate = self.params.rate
        if t >= self.next_sample - TIME_TOL:
            self._sample(t, marker)
            self._frame = math.floor((t - self._t0) * rate + TIME_TOL) + 1
        out = []
        while self._pending and self._pending[0].time + self.params.latency <= t + TIME_TOL:
            out.append(self._pending.popleft())
        return out

    def _sample(self, t: float, marker: Callable[[], Pose]) -> None:
        """Draw the sample's dropout and noise (all five numbers, lost or not: the noise of
        a sample does not depend on the dropouts before it) and queue it unless lost."""
        p = self.params
        draws = self._rng.standard_normal(4)
        chance = self._rng.random()
        self._dropped = chance < (p.stay_dropped if self._dropped else p.enter_dropout)
        self.samples += 1
        if self._dropped:
            self.lost += 1
            return
        position, quaternion = marker()
        self._pending.append(
            PoseReading(
                frame=math.floor((t - self._t0) * p.rate + TIME_TOL),
                time=t,
                position=np.asarray(position, dtype=np.float64) + p.position_noise * draws[:3],
                quaternion=yawed(np.asarray(quaternion, dtype=np.float64), p.yaw_noise * draws[3]),
            )
        )


class PoseDatagramError(SnakeDynamicsError, ValueError):
    """Bytes that are not a pose datagram."""


#: The datagram: b"POSE", frame u32, time f64 [s], position 3 x f64 [m], quaternion 4 x f64
#: (x, y, z, w), little-endian.
DATAGRAM = struct.Struct("<4sI8d")
_MAGIC = b"POSE"


def encode(reading: PoseReading) -> bytes:
    """The datagram of ``reading`` (:data:`DATAGRAM`)."""
    return DATAGRAM.pack(
        _MAGIC, reading.frame, reading.time, *reading.position, *reading.quaternion
    )


def decode(data: bytes) -> PoseReading:
    """The reading in a datagram.

    Raises:
        PoseDatagramError: not a pose datagram (its size or magic), or values not finite.
    """
    if len(data) != DATAGRAM.size or data[:4] != _MAGIC:
        raise PoseDatagramError(
            f"not a pose datagram ({len(data)} bytes, expected {DATAGRAM.size})"
        )
    _, frame, t, *values = DATAGRAM.unpack(data)
    array = np.array(values, dtype=np.float64)
    if not (math.isfinite(t) and np.all(np.isfinite(array))):
        raise PoseDatagramError("a pose datagram with values that are not finite")
    return PoseReading(frame, t, array[:3], array[3:])
