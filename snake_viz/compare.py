"""Prediction versus measurement: alignment, error statistics, lag and the report (no ROS).

The MFM prediction (``/sim/joint_states``) and the robot (``/measured/joint_states``) are
two time series of joint angles with their own stamps and rates. They are compared on the
prediction's stamps: the measurement is interpolated linearly onto each simulated sample
time (sorted by stamp, never by arrival order). Where the two measured neighbours of a
sample are more than ``max_gap`` apart (a telemetry drop-out), or outside the measured
span, the sample has no error (NaN) and counts in no statistic.

Sign convention: ``error = measured - simulated`` [rad]. ``lag`` > 0 means the robot
follows the prediction late: ``measured(t) ~ simulated(t - lag)`` [s].

A report folder holds ``aligned.csv`` (the aligned series), ``joint_angles.png`` (the
paper's Figure 4 layout: one panel per joint, simulation versus measurement over time),
``joint_errors.png``, ``traces.png`` (head and centre of mass of both robots, from
:func:`snake_dynamics.link_poses`, when a model is given), ``summary.md`` (the error table),
``summary.json`` and ``config.yaml`` (the run's configuration).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from numpy.typing import ArrayLike, NDArray

from snake_dynamics.kinematics import link_poses
from snake_dynamics.model import SnakeModel

from .offline import Curve, joint_panels, pyplot

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
#: Default topics of the two series.
SIM_TOPIC = "/sim/joint_states"
MEASURED_TOPIC = "/measured/joint_states"


class CompareError(ValueError):
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
    t0, t1 = max(sim.t[0], measured.t[0]), min(sim.t[-1], measured.t[-1])
    dt = float(np.median(np.diff(sim.t)))
    if not (t1 > t0 and dt > 0):
        return np.empty(0)
    return t0 + dt * np.arange(math.floor((t1 - t0) / dt) + 1)


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
    grid = uniform_grid(sim, measured)
    if grid.size:
        grid = grid[grid >= grid[-1] - span]
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
    """Everything a report shows: the aligned series, the statistics and the lags."""

    aligned: Aligned
    stats: ErrorStats
    lag: FloatArray
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
    return Comparison(
        aligned,
        error_stats(aligned, window),
        estimate_lag(sim, measured, max_lag, max_gap),
        len(sim),
        len(measured),
    )


def _span(s: JointSeries) -> str:
    return f"[{s.t[0]:.3f}, {s.t[-1]:.3f}] s ({len(s)} samples)" if len(s) else "empty"


@dataclass(frozen=True)
class ReportSummary:
    """What a report says in numbers (all per joint, in joint order).

    Attributes:
        folder: the report folder.
        names: joint names.
        rms: whole-run RMS error [rad].
        max: whole-run max |error| [rad].
        lag: lag of the measurement behind the prediction [s] (NaN: undefined).
        samples: aligned samples with a valid error.
        duration: aligned span [s].
        files: the files written.
    """

    folder: Path
    names: tuple[str, ...]
    rms: tuple[float, ...]
    max: tuple[float, ...]
    lag: tuple[float, ...]
    samples: tuple[int, ...]
    duration: float
    files: tuple[Path, ...] = field(default=())

    def table(self) -> str:
        """A fixed-width per-joint table for a terminal."""
        lines = [f"{'joint':<10} {'RMS [deg]':>10} {'max [deg]':>10} {'lag [ms]':>9}"]
        for name, rms, peak, lag in zip(self.names, self.rms, self.max, self.lag, strict=True):
            lines.append(
                f"{name:<10} {_deg(rms):>10} {_deg(peak):>10} "
                f"{'n/a' if not math.isfinite(lag) else f'{lag * 1e3:.1f}':>9}"
            )
        return "\n".join(lines)


def _deg(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{math.degrees(x):.3f}"


def _num(x: float, scale: float = 1.0, fmt: str = ".4g") -> str:
    return "n/a" if not math.isfinite(x) else format(x * scale, fmt)


class Report:
    """Writes a comparison report folder (see the module docstring).

    Args:
        folder: where to write (created; existing report files are overwritten).
        model: the snake, for the head and centre-of-mass traces (None: no traces plot).
        plots: write the PNG plots (matplotlib, Agg backend).
    """

    def __init__(self, folder: Path, model: SnakeModel | None = None, plots: bool = True) -> None:
        self.folder = Path(folder)
        self.model = model
        self.plots = plots

    def write(self, comparison: Comparison, config: Mapping[str, Any]) -> ReportSummary:
        """Write every file; returns the :class:`ReportSummary`."""
        self.folder.mkdir(parents=True, exist_ok=True)
        al, st = comparison.aligned, comparison.stats
        duration = float(al.t[-1] - al.t[0]) if len(al) else 0.0
        summary = ReportSummary(
            self.folder,
            al.names,
            tuple(float(x) for x in st.run_rms),
            tuple(float(x) for x in st.run_max),
            tuple(float(x) for x in comparison.lag),
            tuple(int(x) for x in st.samples),
            duration,
        )
        files = [self._csv(al), self._markdown(comparison, summary), self._json(summary)]
        files.append(self._config(comparison, config))
        if self.plots:
            files += write_plots(self.folder, al, self.model)
        return replace(summary, files=tuple(files))

    def _csv(self, al: Aligned) -> Path:
        path = self.folder / "aligned.csv"
        header = ",".join(
            ["t_s"]
            + [f"{n}_sim_rad" for n in al.names]
            + [f"{n}_measured_rad" for n in al.names]
            + [f"{n}_error_rad" for n in al.names]
        )
        t = al.t - al.t[0] if len(al) else al.t
        table = np.column_stack([t, al.sim, al.measured, al.error])
        fmt = ["%.6f"] + ["%.9g"] * (table.shape[1] - 1)
        np.savetxt(path, table, fmt=fmt, delimiter=",", header=header, comments="")
        return path

    def _markdown(self, comparison: Comparison, summary: ReportSummary) -> Path:
        st = comparison.stats
        lines = [
            "# Prediction versus measurement",
            "",
            f"Aligned span {summary.duration:.3f} s; {comparison.sim_samples} simulated and "
            f"{comparison.measured_samples} measured samples. Error = measured - simulated; "
            f"lag > 0: the robot follows the prediction late. Window: last {st.window:g} s.",
            "",
            "| joint | RMS [deg] | max [deg] | RMS [rad] | max [rad] | window RMS [deg] "
            "| window max [deg] | lag [ms] | samples |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for k, name in enumerate(summary.names):
            lines.append(
                f"| {name} | {_num(st.run_rms[k], 180 / math.pi)} "
                f"| {_num(st.run_max[k], 180 / math.pi)} | {_num(st.run_rms[k])} "
                f"| {_num(st.run_max[k])} | {_num(st.window_rms[k], 180 / math.pi)} "
                f"| {_num(st.window_max[k], 180 / math.pi)} "
                f"| {_num(comparison.lag[k], 1e3, '.1f')} "
                f"| {int(st.samples[k])} |"
            )
        valid = np.isfinite(comparison.aligned.error)
        if valid.any():
            total = float(np.sqrt(np.mean(comparison.aligned.error[valid] ** 2)))
            lines += ["", f"All joints: RMS {math.degrees(total):.3f} deg ({total:.4g} rad)."]
        path = self.folder / "summary.md"
        path.write_text("\n".join(lines) + "\n")
        return path

    def _json(self, summary: ReportSummary) -> Path:
        def clean(values: Iterable[float]) -> list[float | None]:
            return [x if math.isfinite(x) else None for x in values]

        data = {
            "joints": list(summary.names),
            "rms_rad": clean(summary.rms),
            "max_rad": clean(summary.max),
            "lag_s": clean(summary.lag),
            "samples": list(summary.samples),
            "duration_s": summary.duration,
        }
        path = self.folder / "summary.json"
        path.write_text(json.dumps(data, indent=2) + "\n")
        return path

    def _config(self, comparison: Comparison, config: Mapping[str, Any]) -> Path:
        al = comparison.aligned
        data = {
            **config,
            "joints": list(al.names),
            "window_s": comparison.stats.window,
            "sim_samples": comparison.sim_samples,
            "measured_samples": comparison.measured_samples,
            "aligned_samples": len(al),
            "first_stamp_s": float(al.t[0]) if len(al) else None,
            "last_stamp_s": float(al.t[-1]) if len(al) else None,
        }
        path = self.folder / "config.yaml"
        path.write_text(yaml.safe_dump(_plain(data), sort_keys=False))
        return path


def read_aligned(path: Path) -> Aligned:
    """The aligned series of a report's ``aligned.csv`` (stamps from 0, as written).

    Raises:
        CompareError: the file is missing or not a report's CSV.
    """
    try:
        header = path.read_text().split("\n", 1)[0].split(",")
        table = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    except (OSError, ValueError) as exc:
        raise CompareError(f"cannot read {path}: {exc}") from exc
    n = (len(header) - 1) // 3
    suffix = "_sim_rad"
    names = tuple(h.removesuffix(suffix) for h in header[1 : 1 + n])
    if (
        header[0] != "t_s"
        or len(header) != 3 * n + 1
        or not all(h.endswith(suffix) for h in header[1 : 1 + n])
    ):
        raise CompareError(f"{path} is not a comparison report's aligned.csv")
    return Aligned(names, table[:, 0], table[:, 1 : 1 + n], table[:, 1 + n : 1 + 2 * n])


#: What :func:`write_plots` writes into a report folder, and the line it ends with in
#: ``plots.log`` (a detached plotter's sign that it is done).
PLOTS_DONE = "plots written"


def write_plots(folder: Path, al: Aligned, model: SnakeModel | None = None) -> list[Path]:
    """The report's PNG plots: joint angles and errors (one panel per joint) and, with the
    ``model``, the head and centre-of-mass traces; then ``plots.log`` with
    :data:`PLOTS_DONE`. Returns the files written."""
    t = al.t - al.t[0] if len(al) else al.t
    out = [
        joint_panels(
            folder / "joint_angles.png",
            t,
            al.names,
            (
                Curve(al.sim, "C0-", "MFM simulated", 1.2),
                Curve(al.measured, "k--", "measured"),
            ),
            "Joint angles: MFM simulation vs measurement",
        ),
        joint_panels(
            folder / "joint_errors.png",
            t,
            al.names,
            (Curve(al.error, "C3-"),),
            "Error: measured - simulated",
        ),
    ]
    if model is not None and model.n_joints == len(al.names):
        out.append(_traces_plot(folder, al, model))
    log = folder / "plots.log"
    log.write_text(f"{PLOTS_DONE}: {', '.join(p.name for p in out)}\n")
    return [*out, log]


def _traces_plot(folder: Path, al: Aligned, model: SnakeModel) -> Path:
    """Top and side views of the head and centre-of-mass traces of both robots."""
    plt = pyplot()
    step = max(1, len(al) // 1000)  # link_poses per sample: keep it to ~1000 points
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    views = ((0, 1, "top view (x-y)", "x", "y"), (1, 2, "side view (y-z)", "y", "z"))
    for robot, q, style in (("sim", al.sim, "-"), ("measured", al.measured, "--")):
        head, com = traces(model, q[::step])
        for points, what, colour in ((head, "head", "C0"), (com, "CM", "C1")):
            for ax, (a, b, *_rest) in zip(axes, views, strict=True):
                ax.plot(
                    points[:, a] * 1e3,
                    points[:, b] * 1e3,
                    style,
                    color=colour,
                    lw=1.0 if robot == "sim" else 1.4,
                    alpha=1.0 if robot == "sim" else 0.7,
                    label=f"{what}, {robot}",
                )
    for ax, (_a, _b, title, xa, ya) in zip(axes, views, strict=True):
        ax.set_title(f"Head and centre of mass, {title} in base_link", fontsize=9)
        ax.set_xlabel(f"{xa} [mm]", fontsize=8)
        ax.set_ylabel(f"{ya} [mm]", fontsize=8)
        ax.set_aspect("equal", adjustable="datalim")
        ax.tick_params(labelsize=7)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    path = folder / "traces.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plain(value: Any) -> Any:
    """YAML-safe copy: paths to str, numpy scalars to Python, NaN to None."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# --------------------------------------------------------------------------- bags
def read_bag(
    bag_path: Path,
    names: Sequence[str] | None = None,
    topics: tuple[str, str] = (SIM_TOPIC, MEASURED_TOPIC),
) -> tuple[JointSeries, JointSeries]:
    """The two JointState series of a rosbag2 bag, by header stamp.

    The bag is read through :func:`snake_viz.bag.open_reader`, as ``snake replay`` reads
    it: an interrupted recording is recovered first.

    Args:
        bag_path: the bag folder (MCAP or sqlite3) or a single ``.mcap``/``.db3`` file.
        names: joint names (None: those of the first simulated message).
        topics: (simulated, measured) topic names.

    Raises:
        CompareError: no such bag, unreadable bag, missing topic or wrong message type.
    """
    from rosbags.rosbag2.errors import ReaderError
    from rosbags.serde import SerdeError

    from .bag import BagError, open_reader, typestore

    path = Path(bag_path)
    samples: dict[str, list[tuple[float, list[str], list[float]]]] = {t: [] for t in topics}
    try:
        with open_reader(path) as reader:
            present = {c.topic: c.msgtype for c in reader.connections}
            for topic in topics:
                if topic not in present:
                    raise CompareError(
                        f"{path}: no topic {topic} (it has {', '.join(sorted(present)) or 'none'})"
                    )
                if present[topic] != "sensor_msgs/msg/JointState":
                    raise CompareError(
                        f"{path}: {topic} is {present[topic]}, expected sensor_msgs/msg/JointState"
                    )
            wanted = [c for c in reader.connections if c.topic in topics]
            for conn, _time, raw in reader.messages(connections=wanted):
                msg: Any = typestore().deserialize_cdr(raw, conn.msgtype)
                stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
                samples[conn.topic].append((stamp, list(msg.name), list(msg.position)))
    except CompareError:
        raise
    except BagError as exc:
        raise CompareError(str(exc)) from None
    except (ReaderError, SerdeError, KeyError, ValueError) as exc:
        raise CompareError(f"{path}: cannot read the bag: {exc}") from None
    if names is None:
        first = samples[topics[0]]
        if not first:
            raise CompareError(f"{path}: no messages on {topics[0]}")
        names = first[0][1]
    out = []
    for topic in topics:
        buf = SampleBuffer(names)
        for stamp, msg_names, positions in samples[topic]:
            buf.append(stamp, msg_names, positions)
        if len(buf) == 0:
            raise CompareError(f"{path}: no messages on {topic} name the joints {list(names)}")
        out.append(buf.series())
    return out[0], out[1]


def compare_bag(
    bag_path: Path | str,
    out_dir: Path | str,
    robot_config: Path | str | None = "robot",
    *,
    window: float = DEFAULT_WINDOW_S,
    max_lag: float = DEFAULT_MAX_LAG_S,
    topics: tuple[str, str] = (SIM_TOPIC, MEASURED_TOPIC),
    plots: bool = True,
) -> ReportSummary:
    """The comparison report of a recorded bag, offline (no ROS).

    Args:
        bag_path: rosbag2 folder or ``.mcap`` file with both JointState topics.
        out_dir: the report folder.
        robot_config: robot YAML file or config name, for the joint names and the traces
            (None: joint names from the bag, no traces).
        window: window of the "window" columns, the last ``window`` seconds [s].
        max_lag: largest lag searched [s].
        topics: (simulated, measured) topics.
        plots: write the PNG plots.

    Raises:
        CompareError: see :func:`read_bag` and :func:`compare`.
        snake_dynamics.ModelError: the robot config cannot be loaded.
    """
    model = None
    config_path = None
    if robot_config is not None:
        from snake_bringup.paths import robot_config as resolve

        config_path = resolve(str(robot_config))
        if not config_path.is_file():
            raise CompareError(
                f"robot config {robot_config!r} not found (a YAML file or a name in config/)"
            )
        model = SnakeModel.from_yaml(config_path)
    sim, measured = read_bag(Path(bag_path), model.joint_names if model else None, topics)
    comparison = compare(sim, measured, window, max_lag)
    config = {
        "source": "bag",
        "bag": str(Path(bag_path).resolve()),
        "topics": {"sim": topics[0], "measured": topics[1]},
        "robot_config": str(config_path) if config_path else None,
        "robot": model.name if model else None,
        "max_lag_s": max_lag,
        "lag_span_s": DEFAULT_LAG_SPAN_S,
        "max_gap_s": DEFAULT_MAX_GAP_S,
        "error": "measured - simulated [rad], measured interpolated onto the simulated stamps",
    }
    return Report(Path(out_dir), model, plots).write(comparison, config)
