"""Prediction versus measurement: alignment, error statistics, lag and the report (no ROS).

The MFM prediction (``/sim/joint_states``) and the robot (``/measured/joint_states``) are
two time series of joint angles with their own stamps and rates. They are compared on the
prediction's stamps: the measurement is interpolated linearly onto each simulated sample
time (sorted by stamp, never by arrival order). Where the two measured neighbours of a
sample are more than ``max_gap`` apart (a telemetry drop-out), or outside the measured
span, the sample has no error (NaN) and counts in no statistic.

Sign convention: ``error = measured - simulated`` [rad]. ``lag`` > 0 means the robot
follows the prediction late: ``measured(t) ~ simulated(t - lag)`` [s]. The RMS at the lag,
of ``measured(t + lag) - simulated(t)``, is the error a pure delay does not explain: a robot
that does what the prediction says, only later (the link, a servo's dead time), has a large
RMS and a small RMS at the lag.

A floating robot's prediction also carries the tail's pose (``/sim/odom``):
:func:`base_travel` is how far the predicted snake went (docs/mfm.md, eq. 238, for the tail).

The report a comparison writes: :mod:`snake_viz.compare_report`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from snake_dynamics.mfm import link_poses
from snake_dynamics.model import SnakeModel

from .errors import VizError

FloatArray = NDArray[np.float64]

#: Default sliding window of the "now" statistics [s].
DEFAULT_WINDOW_S = 2.0
#: Default largest lag searched by the cross-correlation [s].
DEFAULT_MAX_LAG_S = 0.5
#: The lag is estimated over at most this much of the most recent overlap [s] (its cost is
#: linear in the span: ~0.1 s per 30 s of 100 Hz data on one core).
DEFAULT_LAG_SPAN_S = 300.0
#: Default largest interval between two measured samples bridged by interpolation [s].
DEFAULT_MAX_GAP_S = 0.25
#: The predicted base's odometry (a floating robot's dynamics node).
ODOM_TOPIC = "/sim/odom"
#: Default topics of the two series.
SIM_TOPIC = "/sim/joint_states"
MEASURED_TOPIC = "/measured/joint_states"
#: The prediction's elastic coordinates (dynamics_node on a robot with ``elastic:`` links).
DEFLECTIONS_TOPIC = "/sim/link_deflections"


class CompareError(VizError, ValueError):
    """Input that cannot be compared (no bag, no overlap, unknown joints); one-line message."""


# --------------------------------------------------------------------------- series
@dataclass(frozen=True)
class JointSeries:
    """Joint angles over time, sorted by stamp with unique stamps.

    Attributes:
        names: joint names, one per column.
        t: sample stamps [s], shape (N,), strictly increasing.
        q: joint angles [rad], shape (N, n); NaN where a message did not name the joint.
    """

    names: tuple[str, ...]
    t: FloatArray
    q: FloatArray

    @classmethod
    def from_samples(cls, names: Sequence[str], t: ArrayLike, q: ArrayLike) -> JointSeries:
        """Sort samples received in any order by stamp; of equal stamps keep the last received.

        Args:
            names: joint names of the columns of ``q``.
            t: stamps [s], shape (N,), in arrival order.
            q: joint angles [rad], shape (N, n), in arrival order.

        Raises:
            CompareError: shapes that do not match, or non-finite stamps.
        """
        times = np.asarray(t, dtype=float).reshape(-1)
        values = np.asarray(q, dtype=float).reshape(times.size, -1) if times.size else None
        if values is None:
            return cls(tuple(names), np.empty(0), np.empty((0, len(names))))
        if values.shape[1] != len(names):
            raise CompareError(f"{values.shape[1]} joint columns for {len(names)} names")
        if not np.all(np.isfinite(times)):
            raise CompareError("sample stamps must be finite")
        # stable sort of the reversed arrival order: the first of equal stamps is the last
        order = np.argsort(times[::-1], kind="stable")
        rev_t, rev_q = times[::-1][order], values[::-1][order]
        keep = np.ones(rev_t.size, dtype=bool)
        keep[1:] = rev_t[1:] != rev_t[:-1]
        return cls(tuple(names), rev_t[keep], rev_q[keep])

    def __len__(self) -> int:
        return int(self.t.size)


class SampleBuffer:
    """Joint-state messages collected in arrival order, with a bounded history.

    Appending is amortised O(1); :meth:`series` sorts by stamp. Messages may name the
    joints in any order and may miss some (NaN) or add unknown ones (ignored).

    Args:
        names: the joint names to keep, in column order.
        max_samples: oldest samples are dropped beyond this many.
    """

    def __init__(self, names: Sequence[str], max_samples: int = 1_000_000) -> None:
        self.names = tuple(names)
        self._index = {name: k for k, name in enumerate(self.names)}
        self._max = max(2, int(max_samples))
        self._t = np.empty(min(256, self._max))
        self._q = np.empty((self._t.size, len(self.names)))
        self._size = 0
        self.dropped = 0

    def __len__(self) -> int:
        return self._size

    def append(self, stamp: float, names: Sequence[str], positions: Sequence[float]) -> int:
        """Add one message: stamp [s], joint names and positions [rad].

        Returns:
            How many of the message's joints were known (0: nothing stored).
        """
        row = np.full(len(self.names), np.nan)
        known = 0
        for name, value in zip(names, positions, strict=False):
            k = self._index.get(name)
            if k is not None:
                row[k] = value
                known += 1
        if not known or not math.isfinite(stamp):
            return 0
        if self._size >= self._max:
            drop = max(1, self._size // 4)
            self._t[: self._size - drop] = self._t[drop : self._size]
            self._q[: self._size - drop] = self._q[drop : self._size]
            self._size -= drop
            self.dropped += drop
        elif self._size == self._t.size:
            grow = min(2 * self._t.size, self._max)
            self._t = np.resize(self._t, grow)
            self._q = np.resize(self._q, (grow, len(self.names)))
        self._t[self._size] = stamp
        self._q[self._size] = row
        self._size += 1
        return known

    def latest_stamp(self) -> float:
        """The newest stamp [s] (NaN when empty)."""
        return float(np.max(self._t[: self._size])) if self._size else math.nan

    def series(self, since: float = -math.inf) -> JointSeries:
        """The samples with stamps >= ``since`` [s], sorted by stamp."""
        t = self._t[: self._size]
        mask = t >= since
        return JointSeries.from_samples(self.names, t[mask], self._q[: self._size][mask])


# --------------------------------------------------------------------------- alignment
@dataclass(frozen=True)
class Aligned:
    """Both series on the simulated stamps.

    Attributes:
        names: joint names.
        t: stamps [s], shape (N,).
        sim: simulated angles [rad], shape (N, n).
        measured: measured angles interpolated onto ``t`` [rad], shape (N, n); NaN where
            no measurement brackets the stamp within ``max_gap``.
    """

    names: tuple[str, ...]
    t: FloatArray
    sim: FloatArray
    measured: FloatArray

    @property
    def error(self) -> FloatArray:
        """measured - simulated [rad], shape (N, n)."""
        return self.measured - self.sim

    def __len__(self) -> int:
        return int(self.t.size)


def interpolate(series: JointSeries, t: FloatArray, max_gap: float) -> FloatArray:
    """Linear interpolation of ``series`` at stamps ``t`` [s], NaN outside its span or across
    a gap longer than ``max_gap`` [s]. Shape (len(t), n) [rad]."""
    out = np.full((t.size, len(series.names)), np.nan)
    if len(series) < 2 or t.size == 0:
        if len(series) == 1:
            out[t == series.t[0]] = series.q[0]
        return out
    hi = np.searchsorted(series.t, t, side="left")
    inside = (t >= series.t[0]) & (t <= series.t[-1])
    hi = np.clip(hi, 1, series.t.size - 1)
    lo = hi - 1
    span = series.t[hi] - series.t[lo]
    exact_hi, exact_lo = series.t[hi] == t, series.t[lo] == t
    ok = inside & ((span <= max_gap) | exact_hi | exact_lo)
    w = np.where(span > 0, (t - series.t[lo]) / np.where(span > 0, span, 1.0), 1.0)[:, None]
    values = series.q[lo] * (1.0 - w) + series.q[hi] * w
    values[exact_lo] = series.q[lo][exact_lo]
    values[exact_hi] = series.q[hi][exact_hi]
    out[ok] = values[ok]
    return out


def align(sim: JointSeries, measured: JointSeries, max_gap: float = DEFAULT_MAX_GAP_S) -> Aligned:
    """Interpolate the measurement onto the simulated stamps (by stamp, never by arrival).

    Only simulated samples inside the measured span are kept.

    Args:
        sim: the prediction.
        measured: the robot, with the same joint names.
        max_gap: longest measured interval bridged by interpolation [s].

    Raises:
        CompareError: the joint names differ.
    """
    if sim.names != measured.names:
        raise CompareError(f"joint names differ: sim {sim.names}, measured {measured.names}")
    if len(measured) == 0 or len(sim) == 0:
        empty = np.empty((0, len(sim.names)))
        return Aligned(sim.names, np.empty(0), empty, empty)
    keep = (sim.t >= measured.t[0]) & (sim.t <= measured.t[-1])
    t = sim.t[keep]
    return Aligned(sim.names, t, sim.q[keep], interpolate(measured, t, max_gap))


# --------------------------------------------------------------------------- statistics
@dataclass(frozen=True)
class ErrorStats:
    """Per-joint error statistics [rad] (NaN where a joint has no valid sample).

    Attributes:
        now: the latest valid error, shape (n,).
        window_rms: RMS over the last ``window`` seconds, shape (n,).
        window_max: max |error| over the window, shape (n,).
        run_rms: RMS over the whole aligned run, shape (n,).
        run_max: max |error| over the whole run, shape (n,).
        samples: valid samples over the run, shape (n,).
        window: the window length [s].
    """

    now: FloatArray
    window_rms: FloatArray
    window_max: FloatArray
    run_rms: FloatArray
    run_max: FloatArray
    samples: NDArray[np.int64]
    window: float


def _nan_stats(err: FloatArray) -> tuple[FloatArray, FloatArray, NDArray[np.int64]]:
    valid = np.isfinite(err)
    count = valid.sum(axis=0)
    sq = np.where(valid, err**2, 0.0).sum(axis=0)
    peak = np.where(valid, np.abs(err), -np.inf).max(axis=0, initial=-np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):
        rms = np.where(count > 0, np.sqrt(sq / np.maximum(count, 1)), np.nan)
    return rms, np.where(count > 0, peak, np.nan), count.astype(np.int64)


def error_stats(aligned: Aligned, window: float = DEFAULT_WINDOW_S) -> ErrorStats:
    """Error now, over the last ``window`` seconds [s] (ending at the last aligned stamp) and
    over the whole run.

    Args:
        aligned: output of :func:`align`.
        window: sliding window length [s].
    """
    err = aligned.error
    n = len(aligned.names)
    now = np.full(n, np.nan)
    for k in range(n):
        valid = np.flatnonzero(np.isfinite(err[:, k]))
        if valid.size:
            now[k] = err[valid[-1], k]
    run_rms, run_max, count = _nan_stats(err)
    if len(aligned):
        recent = aligned.t >= aligned.t[-1] - window
        win_rms, win_max, _ = _nan_stats(err[recent])
    else:
        win_rms = win_max = np.full(n, np.nan)
    return ErrorStats(now, win_rms, win_max, run_rms, run_max, count, float(window))


def uniform_grid(sim: JointSeries, measured: JointSeries) -> FloatArray:
    """A uniform grid [s] over the overlap of the series, at the simulated median step."""
    if len(sim) < 2 or len(measured) < 2:
        return np.empty(0)
    t0 = max(float(sim.t[0]), float(measured.t[0]))
    t1 = min(float(sim.t[-1]), float(measured.t[-1]))
    dt = float(np.median(np.diff(sim.t)))
    if not (t1 > t0 and dt > 0):
        return np.empty(0)
    return t0 + dt * np.arange(math.floor((t1 - t0) / dt) + 1, dtype=np.float64)


def lag_grid(sim: JointSeries, measured: JointSeries, span: float) -> FloatArray:
    """The last ``span`` seconds [s] of :func:`uniform_grid`: where the lag is estimated."""
    grid = uniform_grid(sim, measured)
    return grid[grid >= grid[-1] - span] if grid.size else grid


def estimate_lag(
    sim: JointSeries,
    measured: JointSeries,
    max_lag: float = DEFAULT_MAX_LAG_S,
    max_gap: float = DEFAULT_MAX_GAP_S,
    span: float = DEFAULT_LAG_SPAN_S,
) -> FloatArray:
    """Per-joint time lag of the measurement behind the prediction [s], by cross-correlation.

    Both series are resampled on :func:`uniform_grid` (step dt); for each shift k in
    [-max_lag, max_lag] / dt the Pearson correlation of sim[i] and measured[i + k] over their
    common valid samples is computed, and the peak is refined to sub-sample resolution by a
    parabola through the best shift and its two neighbours.

    Args:
        sim: the prediction.
        measured: the robot.
        max_lag: largest |lag| searched [s].
        max_gap: see :func:`interpolate` [s].
        span: use only the last ``span`` seconds of the overlap [s].

    Returns:
        Lag per joint [s], shape (n,); NaN for a joint that does not move (no correlation)
        or when the overlap is shorter than twice the search range.
    """
    n = len(sim.names)
    grid = lag_grid(sim, measured, span)
    lags = np.full(n, np.nan)
    if grid.size < 4:
        return lags
    dt = float(grid[1] - grid[0])
    kmax = min(math.ceil(max_lag / dt), (grid.size - 2) // 2)
    if kmax < 1:
        return lags
    a = interpolate(sim, grid, max_gap)
    b = interpolate(measured, grid, max_gap)
    shifts = np.arange(-kmax, kmax + 1)
    corr = np.full((shifts.size, n), np.nan)
    size = grid.size
    for j, k in enumerate(int(x) for x in shifts):
        x = a[max(0, -k) : size - max(0, k)]
        y = b[max(0, k) : size - max(0, -k)]
        corr[j] = _pearson(x, y)
    for col in range(n):
        c = corr[:, col]
        if not np.any(np.isfinite(c)):
            continue
        j = int(np.nanargmax(c))
        offset = 0.0
        if 0 < j < shifts.size - 1 and np.all(np.isfinite(c[j - 1 : j + 2])):
            den = c[j - 1] - 2.0 * c[j] + c[j + 1]
            if den < 0:
                offset = 0.5 * (c[j - 1] - c[j + 1]) / den
        lags[col] = (shifts[j] + offset) * dt
    return lags


def rms_at_lag(
    sim: JointSeries,
    measured: JointSeries,
    lag: FloatArray,
    max_gap: float = DEFAULT_MAX_GAP_S,
    span: float = DEFAULT_LAG_SPAN_S,
) -> FloatArray:
    """Per-joint RMS of ``measured(t + lag) - simulated(t)`` [rad]: the error left once each
    joint's lag is taken out, over the span :func:`estimate_lag` used.

    Args:
        sim: the prediction.
        measured: the robot.
        lag: per-joint lag [s] (:func:`estimate_lag`); NaN gives NaN.
        max_gap: see :func:`interpolate` [s].
        span: use only the last ``span`` seconds of the overlap [s].

    Returns:
        RMS per joint [rad], shape (n,); NaN where the lag is NaN or nothing overlaps.
    """
    grid = lag_grid(sim, measured, span)
    out = np.full(len(sim.names), np.nan)
    if grid.size == 0:
        return out
    predicted = interpolate(sim, grid, max_gap)
    for k in np.flatnonzero(np.isfinite(lag)):
        error = interpolate(measured, grid + lag[k], max_gap)[:, k] - predicted[:, k]
        error = error[np.isfinite(error)]
        if error.size:
            out[k] = math.sqrt(float(np.mean(error**2)))
    return out


def _pearson(x: FloatArray, y: FloatArray) -> FloatArray:
    """Column-wise Pearson correlation over the rows where both are finite (NaN if flat)."""
    valid = np.isfinite(x) & np.isfinite(y)
    count = valid.sum(axis=0)
    xs, ys = np.where(valid, x, 0.0), np.where(valid, y, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx, my = xs.sum(axis=0) / count, ys.sum(axis=0) / count
        dx, dy = np.where(valid, x - mx, 0.0), np.where(valid, y - my, 0.0)
        sxy = (dx * dy).sum(axis=0)
        sxx, syy = (dx * dx).sum(axis=0), (dy * dy).sum(axis=0)
        scale = np.sqrt(sxx * syy)
        tiny = 1e-12 * np.maximum(np.max(np.abs(xs), axis=0), np.max(np.abs(ys), axis=0)) ** 2
        return np.where((count > 2) & (scale > tiny * count), sxy / scale, np.nan)


# --------------------------------------------------------------------------- traces
def trace_points(model: SnakeModel, q: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Head CM and whole-body CM positions in the tail's frame (``base_link``) [m].

    Args:
        model: the snake.
        q: joint angles [rad], shape (n,).

    Returns:
        (head, centre of mass), each shape (3,) [m]: the translation of the head's
        :func:`link_poses` frame, and sum(m_b r_b) / sum(m_b) over bodies 0..n.
    """
    centres = link_poses(model, q)[:, :3, 3]
    com = model.masses @ centres / model.masses.sum()
    return centres[-1].copy(), com


def traces(model: SnakeModel, q: FloatArray) -> tuple[FloatArray, FloatArray]:
    """:func:`trace_points` of each finite row of ``q`` (N, n); NaN rows stay NaN. [m]"""
    head = np.full((q.shape[0], 3), np.nan)
    com = np.full((q.shape[0], 3), np.nan)
    for i, row in enumerate(q):
        if np.all(np.isfinite(row)):
            head[i], com[i] = trace_points(model, row)
    return head, com


# --------------------------------------------------------------------------- comparison
@dataclass(frozen=True)
class Comparison:
    """Everything a report shows: the aligned series, the statistics, the lags and the RMS
    at the lags."""

    aligned: Aligned
    stats: ErrorStats
    lag: FloatArray
    rms_at_lag: FloatArray
    sim_samples: int
    measured_samples: int


def compare(
    sim: JointSeries,
    measured: JointSeries,
    window: float = DEFAULT_WINDOW_S,
    max_lag: float = DEFAULT_MAX_LAG_S,
    max_gap: float = DEFAULT_MAX_GAP_S,
) -> Comparison:
    """Align, compute the error statistics and the lag (see the module docstring).

    Raises:
        CompareError: the series do not overlap in time.
    """
    aligned = align(sim, measured, max_gap)
    if not np.any(np.isfinite(aligned.error)):
        raise CompareError(
            f"simulation {_span(sim)} and measurement {_span(measured)} do not overlap in time"
        )
    lag = estimate_lag(sim, measured, max_lag, max_gap)
    return Comparison(
        aligned,
        error_stats(aligned, window),
        lag,
        rms_at_lag(sim, measured, lag, max_gap),
        len(sim),
        len(measured),
    )


def _span(s: JointSeries) -> str:
    return f"[{s.t[0]:.3f}, {s.t[-1]:.3f}] s ({len(s)} samples)" if len(s) else "empty"


@dataclass(frozen=True)
class Travel:
    """How far the predicted snake's tail went (from its odometry).

    Attributes:
        duration: first to last pose [s].
        distance: horizontal displacement of the tail [m].
        mean_speed: distance / duration [m/s].
        heading_drift: change of the tail's heading (its long axis e2 in the ground plane),
            unwrapped, first to last pose [rad].
        samples: poses.
    """

    duration: float
    distance: float
    mean_speed: float
    heading_drift: float
    samples: int


def tail_heading(quaternion: ArrayLike) -> FloatArray:
    """The tail's heading: the angle of its long axis e2 in the ground plane, unwrapped along
    the samples (a turn through +-pi keeps counting).

    Args:
        quaternion: tail orientations (x, y, z, w) in the world, shape (N, 4), unit length.

    Returns:
        Heading from the world's x axis about z [rad], shape (N,).
    """
    from scipy.spatial.transform import Rotation

    q = np.asarray(quaternion, dtype=float).reshape(-1, 4)
    axis = Rotation.from_quat(q).apply([0.0, 1.0, 0.0]) if len(q) else np.empty((0, 3))
    return np.unwrap(np.arctan2(axis[:, 1], axis[:, 0]))


def base_travel(t: ArrayLike, position: ArrayLike, quaternion: ArrayLike) -> Travel:
    """The travel of a base from its poses (eq. 238's distance, speed and heading drift).

    Args:
        t: stamps [s], shape (N,), N >= 2.
        position: base positions in the world [m], shape (N, 3).
        quaternion: base orientations (x, y, z, w), shape (N, 4).

    Raises:
        CompareError: fewer than two poses, or stamps not increasing.
    """
    t = np.asarray(t, dtype=float)
    p = np.asarray(position, dtype=float)
    if t.size < 2 or np.any(np.diff(t) <= 0):
        raise CompareError(f"odometry needs two or more poses with increasing stamps, got {t.size}")
    heading = tail_heading(quaternion)
    duration = float(t[-1] - t[0])
    distance = float(np.linalg.norm(p[-1, :2] - p[0, :2]))
    return Travel(duration, distance, distance / duration, float(heading[-1] - heading[0]), t.size)
