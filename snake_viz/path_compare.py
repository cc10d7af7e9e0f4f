"""Comparison on the floor: the predicted tail's path against the measured one (no ROS).

A floating robot's prediction publishes the tail's pose (``/sim/odom``: the tail body's
centre of mass and orientation in ``world``); an external pose sensor (motion capture
tracking a marker at the same point) publishes the robot's (``/measured/pose``,
geometry_msgs/PoseStamped). Both are pose series with their own stamps and rates. As for the
joints (:mod:`snake_viz.compare`) they are compared by stamp, never by arrival order, here on
the *measured* stamps: the prediction is interpolated linearly at each measured sample time
(position and unwrapped heading); a measured sample outside the predicted span or across a
predicted gap longer than ``max_gap`` counts in no statistic.

Measured poses are checked first (:class:`PoseValidator`): a pose that is not finite, whose
orientation is not a unit quaternion, in another frame than the expected one, stamped ahead
of the receiver's clock (its arrival time) by more than ``max_ahead`` (a sensor period or
two), or not newer than the last accepted one is rejected and counted by reason, never
compared or plotted. The clock check comes before the order check, so one pose from the
future (a wrong clock, a spoofed message) is rejected on its own instead of becoming the
latest and making every genuine pose after it "not newer".

Sign convention: error vectors are measured - predicted; the path error is their length in
the ground plane (x, y of ``world``) [m].
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .compare import (
    DEFAULT_MAX_GAP_S,
    CompareError,
    FloatArray,
    JointSeries,
    interpolate,
    tail_heading,
)

#: The measured pose of the tail (geometry_msgs/PoseStamped, e.g. from a mocap driver).
POSE_TOPIC = "/measured/pose"
#: The frame measured poses must be given in.
DEFAULT_FRAME = "world"
#: The largest accepted | |q| - 1 | of a measured orientation.
QUATERNION_TOLERANCE = 1e-3
#: Poses stamped further ahead of the receiver's clock are rejected [s]: two periods of a
#: 30 Hz camera, five of a 100 Hz mocap system (and the 10 ms steps of a simulated /clock).
DEFAULT_MAX_AHEAD_S = 0.05
#: The least bound on a simulated /clock [s]: the robot's clock reaches a node over DDS, late
#: under load (904 of a 10 s demo's poses came more than 0.05 s ahead of it with both cores
#: busy), while a pose from the future (a spoof, a wrong clock) is seconds ahead.
SIM_CLOCK_MAX_AHEAD_S = 0.5
#: The columns of a pose series: position [m] and orientation quaternion (x, y, z, w).
POSE_FIELDS = ("x", "y", "z", "qx", "qy", "qz", "qw")
#: Why a measured pose is rejected (the keys of :attr:`PoseValidator.rejected`).
NOT_FINITE, NOT_UNIT, WRONG_FRAME, AHEAD, NOT_NEWER = (
    "not finite",
    "not a unit quaternion",
    "wrong frame",
    "ahead of the clock",
    "not newer",
)
REASONS = (NOT_FINITE, NOT_UNIT, WRONG_FRAME, AHEAD, NOT_NEWER)


class Rejection(NamedTuple):
    """A rejected pose: the reason (one of :data:`REASONS`) and a one-line detail."""

    reason: str
    detail: str


@dataclass
class PoseValidator:
    """Accepts measured poses in arrival order; rejects the others and counts them by reason.

    Attributes:
        frame: the frame the poses must be in.
        max_ahead: a pose stamped further ahead of its arrival time is rejected [s].
        last_stamp: the stamp of the last accepted pose [s].
        accepted: poses accepted so far.
        rejected: poses rejected so far, by reason (every one of :data:`REASONS`).
    """

    frame: str = DEFAULT_FRAME
    max_ahead: float = DEFAULT_MAX_AHEAD_S
    last_stamp: float = -math.inf
    accepted: int = 0
    rejected: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REASONS, 0))

    def check(
        self,
        stamp: float,
        frame_id: str,
        position: Sequence[float],
        orientation: Sequence[float],
        received: float | None = None,
    ) -> Rejection | None:
        """Accept (None) or reject one pose; an accepted one becomes the latest.

        Args:
            stamp: its header stamp [s].
            frame_id: its header frame.
            position: x, y, z [m].
            orientation: quaternion x, y, z, w.
            received: its arrival on the receiver's clock [s] (None: unknown, not checked).
        """
        problem = self._problem(stamp, frame_id, position, orientation, received)
        if problem is not None:
            self.rejected[problem.reason] += 1
            return problem
        self.last_stamp = stamp
        self.accepted += 1
        return None

    def _problem(
        self,
        stamp: float,
        frame_id: str,
        position: Sequence[float],
        orientation: Sequence[float],
        received: float | None,
    ) -> Rejection | None:
        values = [stamp, *position, *orientation]
        if not all(math.isfinite(x) for x in values):
            return Rejection(NOT_FINITE, "stamp, position and orientation must be finite")
        norm = math.sqrt(sum(x * x for x in orientation))
        if not abs(norm - 1.0) <= QUATERNION_TOLERANCE:
            return Rejection(NOT_UNIT, f"orientation of norm {norm:.6g}, not 1")
        if frame_id != self.frame:
            return Rejection(WRONG_FRAME, f"frame {frame_id!r}, expected {self.frame!r}")
        if received is not None and stamp - received > self.max_ahead:
            return Rejection(
                AHEAD,
                f"stamp {stamp:.9f} s is {stamp - received:.3f} s ahead of its arrival "
                f"{received:.9f} s (more than {self.max_ahead:g} s): check the sender's clock",
            )
        if not stamp > self.last_stamp:
            return Rejection(
                NOT_NEWER, f"stamp {stamp:.9f} s not after the last accepted {self.last_stamp:.9f}"
            )
        return None


class PoseSample(NamedTuple):
    """One pose message: stamp [s], frame, position [m], orientation (x, y, z, w) and, where
    known, its arrival on the receiver's clock [s] (a bag's record time)."""

    stamp: float
    frame_id: str
    position: Sequence[float]
    orientation: Sequence[float]
    received: float | None = None


def pose_series(samples: Iterable[PoseSample]) -> JointSeries:
    """A pose series (columns :data:`POSE_FIELDS`) sorted by stamp, of equal stamps the last."""
    rows = [(s.stamp, [*s.position, *s.orientation]) for s in samples]
    q = np.array([r[1] for r in rows], dtype=float).reshape(-1, len(POSE_FIELDS))
    return JointSeries.from_samples(POSE_FIELDS, [r[0] for r in rows], q)


def validated_series(
    samples: Iterable[PoseSample],
    frame: str = DEFAULT_FRAME,
    max_ahead: float = DEFAULT_MAX_AHEAD_S,
) -> tuple[JointSeries, PoseValidator]:
    """The accepted measured poses (checked in arrival order) and the validator's counts.

    Args:
        samples: the poses as received.
        frame: the frame they must be in.
        max_ahead: a pose stamped further ahead of its arrival is rejected [s]
            (:data:`SIM_CLOCK_MAX_AHEAD_S` for a recorder on a robot's simulated /clock).
    """
    validator = PoseValidator(frame, max_ahead)
    accepted = [s for s in samples if validator.check(*s) is None]
    return pose_series(accepted), validator


# --------------------------------------------------------------------------- metrics
def planar_track(poses: JointSeries) -> JointSeries:
    """x, y [m] and the tail's unwrapped heading [rad] (:func:`tail_heading`) of a pose series."""
    heading = tail_heading(poses.q[:, 3:7])
    return JointSeries(("x", "y", "heading"), poses.t, np.column_stack([poses.q[:, :2], heading]))


@dataclass(frozen=True)
class PathTravel:
    """How far one path went over the compared samples.

    Attributes:
        displacement: net planar displacement, first to last sample [m].
        length: planar path length, the sum of the steps between samples [m].
        speed: displacement / duration [m/s].
        heading_change: unwrapped heading change, first to last sample [rad].
    """

    displacement: float
    length: float
    speed: float
    heading_change: float


@dataclass(frozen=True)
class PathMetrics:
    """The predicted and the measured path compared on the measured stamps.

    Attributes:
        samples: measured poses compared (with a predicted pose at their stamp).
        duration: first to last compared sample [s].
        rms_error: RMS planar path error [m].
        max_error: largest planar path error [m].
        final_error: planar path error at the last compared sample [m].
        predicted: the prediction's travel.
        measured: the robot's travel.
        speed_error: measured - predicted speed [m/s].
        heading_drift: measured - predicted heading change, wrapped to [-pi, pi) [rad].
    """

    samples: int
    duration: float
    rms_error: float
    max_error: float
    final_error: float
    predicted: PathTravel
    measured: PathTravel
    speed_error: float
    heading_drift: float


@dataclass(frozen=True)
class PathComparison:
    """Both paths on the compared measured stamps, the error and the metrics.

    Attributes:
        t: compared stamps [s], shape (N,).
        predicted: predicted x, y, heading at ``t`` [m, m, rad], shape (N, 3).
        measured: measured x, y, heading [m, m, rad], shape (N, 3).
        error: planar path error |measured - predicted| [m], shape (N,).
        metrics: the numbers.
    """

    t: FloatArray
    predicted: FloatArray
    measured: FloatArray
    error: FloatArray
    metrics: PathMetrics


def wrap_angle(angle: float) -> float:
    """``angle`` wrapped to [-pi, pi) [rad]."""
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


def path_travel(t: FloatArray, track: FloatArray) -> PathTravel:
    """The :class:`PathTravel` of ``track`` (x, y, heading; shape (N, 3)) at stamps ``t`` [s]."""
    steps = np.diff(track[:, :2], axis=0)
    displacement = float(np.linalg.norm(track[-1, :2] - track[0, :2]))
    duration = float(t[-1] - t[0])
    return PathTravel(
        displacement,
        float(np.sum(np.linalg.norm(steps, axis=1))),
        displacement / duration,
        float(track[-1, 2] - track[0, 2]),
    )


def aligned_tracks(
    predicted: JointSeries, measured: JointSeries, max_gap: float = DEFAULT_MAX_GAP_S
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The compared stamps and both planar tracks on them (see the module docstring).

    Args:
        predicted: predicted poses (columns :data:`POSE_FIELDS`).
        measured: accepted measured poses (same columns).
        max_gap: longest predicted interval bridged by interpolation [s].

    Returns:
        (t [s] shape (N,), predicted, measured: x, y, heading [m, m, rad] shape (N, 3)).
    """
    measured_track = planar_track(measured)
    at = interpolate(planar_track(predicted), measured_track.t, max_gap)
    valid = np.all(np.isfinite(at), axis=1) & np.all(np.isfinite(measured_track.q), axis=1)
    return measured_track.t[valid], at[valid], measured_track.q[valid]


def planar_error(predicted: FloatArray, measured: FloatArray) -> FloatArray:
    """|measured - predicted| in the ground plane [m] of tracks of shape (N, >= 2)."""
    return np.asarray(np.hypot(*(measured[:, :2] - predicted[:, :2]).T), dtype=float)


def compare_paths(
    predicted: JointSeries, measured: JointSeries, max_gap: float = DEFAULT_MAX_GAP_S
) -> PathComparison:
    """Compare the paths on the measured stamps (see the module docstring).

    Raises:
        CompareError: fewer than two measured samples with a predicted pose at their stamp.
    """
    t, pred, meas = aligned_tracks(predicted, measured, max_gap)
    if t.size < 2 or not t[-1] > t[0]:
        raise CompareError(
            f"the measured poses ({len(measured)}) and the predicted ones ({len(predicted)}) "
            f"overlap in {t.size} sample(s); two or more are needed to compare the paths"
        )
    error = planar_error(pred, meas)
    travel_p, travel_m = path_travel(t, pred), path_travel(t, meas)
    metrics = PathMetrics(
        samples=int(t.size),
        duration=float(t[-1] - t[0]),
        rms_error=float(np.sqrt(np.mean(error**2))),
        max_error=float(np.max(error)),
        final_error=float(error[-1]),
        predicted=travel_p,
        measured=travel_m,
        speed_error=travel_m.speed - travel_p.speed,
        heading_drift=wrap_angle(travel_m.heading_change - travel_p.heading_change),
    )
    return PathComparison(t, pred, meas, error, metrics)


def latest_path_error(
    predicted: JointSeries, measured: JointSeries, max_gap: float = DEFAULT_MAX_GAP_S
) -> tuple[float, float] | None:
    """The newest compared measured stamp [s] and its planar path error [m], or None."""
    t, pred, meas = aligned_tracks(predicted, measured, max_gap)
    if not t.size:
        return None
    return float(t[-1]), float(planar_error(pred[-1:], meas[-1:])[0])
