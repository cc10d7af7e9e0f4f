"""The comparison report: numbers, tables and plots of a :class:`snake_viz.compare.Comparison`.

A report folder holds ``aligned.csv`` (the aligned series), ``joint_angles.png`` (the
paper's Figure 4 layout: one panel per joint, simulation versus measurement over time),
``joint_errors.png``, ``traces.png`` (head and centre of mass of both robots, from
:func:`snake_dynamics.link_poses`, when a model is given), ``summary.md`` (the error table),
``summary.json`` and ``config.yaml`` (the run's configuration). A robot on the floor adds the
comparison of the tail's paths (:class:`PathSection`, :mod:`snake_viz.path_compare`): its
numbers in ``summary.md`` and ``summary.json``, both paths and the path error in ``path.png``.
A prediction with elastic links adds each link's largest and RMS tip deflection and twist
(:class:`DeflectionSection`).

Each report names the servo model of the prediction (:func:`servo_model_of`): the
``servo:`` section of the robot config it was given, which is the one dynamics_node loads
from the same ``robot_config`` (the node logs the same digest at start), with its source
file, digest and parameters.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from snake_dynamics.errors import ModelError, StateError
from snake_dynamics.flexible.snake import TipDeflection, tip_summary, tips_of_named
from snake_dynamics.model import SnakeModel
from snake_dynamics.robot import Robot

from .compare import (
    DEFAULT_LAG_SPAN_S,
    DEFAULT_MAX_GAP_S,
    DEFLECTIONS_TOPIC,
    ODOM_TOPIC,
    Aligned,
    CompareError,
    Comparison,
    JointSeries,
    Travel,
    traces,
)
from .offline import Curve, joint_panels, pyplot, save_figure
from .path_compare import POSE_TOPIC, PathComparison, compare_paths
from .timing import Timing


@dataclass(frozen=True)
class PathSection:
    """The comparison on the floor in a report: the paths compared, or why they are not.

    Attributes:
        comparison: both paths compared on the measured stamps (None: not compared).
        rejected: measured poses rejected, by reason.
        missing: one line saying why the paths are not compared ("" when they are).
    """

    comparison: PathComparison | None
    rejected: Mapping[str, int] = field(default_factory=dict)
    missing: str = ""

    def lines(self) -> list[str]:
        """The section's lines, for the terminal and summary.md."""
        if self.comparison is None:
            return [self.missing]
        m = self.comparison.metrics
        p, r = m.predicted, m.measured
        rejected = ", ".join(f"{n} {reason}" for reason, n in self.rejected.items() if n)
        return [
            f"path ({POSE_TOPIC} against {ODOM_TOPIC}, the tail; measured - predicted): "
            f"{m.samples} poses over {m.duration:.2f} s; error RMS {m.rms_error * 100:.3f} cm, "
            f"max {m.max_error * 100:.3f} cm, final {m.final_error * 100:.3f} cm",
            f"travel: predicted {p.displacement:.4f} m (path {p.length:.4f} m, "
            f"{p.speed * 100:.3f} cm/s), measured {r.displacement:.4f} m (path {r.length:.4f} m, "
            f"{r.speed * 100:.3f} cm/s); speed error {m.speed_error * 100:.3f} cm/s; heading "
            f"drift {math.degrees(m.heading_drift):.2f} deg",
            f"measured poses rejected: {rejected or 'none'}",
        ]

    def as_dict(self) -> dict[str, Any]:
        """The section for summary.json (SI units: m, s, m/s, rad)."""
        if self.comparison is None:
            return {"missing": self.missing}
        return {
            "topics": {"predicted": ODOM_TOPIC, "measured": POSE_TOPIC},
            **asdict(self.comparison.metrics),
            "rejected": dict(self.rejected),
        }


def path_section(
    predicted: JointSeries | None,
    measured: JointSeries | None,
    rejected: Mapping[str, int],
    max_gap: float = DEFAULT_MAX_GAP_S,
) -> PathSection | None:
    """The comparison on the floor of a run (None where neither pose topic was received).

    Args:
        predicted: the poses on /sim/odom, None without any.
        measured: the accepted poses on /measured/pose, None without any.
        rejected: measured poses rejected, by reason.
        max_gap: longest predicted interval bridged by interpolation [s].
    """
    if predicted is None and measured is None:
        return None
    if predicted is None or measured is None:
        has, lacks = (ODOM_TOPIC, POSE_TOPIC) if measured is None else (POSE_TOPIC, ODOM_TOPIC)
        return PathSection(None, rejected, f"no path comparison: poses on {has}, none on {lacks}")
    try:
        return PathSection(compare_paths(predicted, measured, max_gap), rejected)
    except CompareError as exc:
        return PathSection(None, rejected, f"no path comparison: {exc}")


@dataclass(frozen=True)
class DeflectionSection:
    """The prediction's elastic links in a report: each link's tip over the run (F117),
    from dynamics_node's quasi-static ``link_deflections`` (docs/flexible.md).

    Attributes:
        tips: each elastic link's largest and RMS tip deflection and twist.
        samples: the messages they are taken over.
        duration: the span of their stamps [s].
    """

    tips: tuple[TipDeflection, ...]
    samples: int
    duration: float

    def lines(self) -> list[str]:
        """The section's lines, for the terminal and summary.md."""
        head = (
            f"link deflections ({DEFLECTIONS_TOPIC}, quasi-static): {self.samples} messages "
            f"over {self.duration:.2f} s"
        )
        return [head] + [
            f"{tip.link}: tip deflection max {tip.max_bend * 1e3:.3f} mm, RMS "
            f"{tip.rms_bend * 1e3:.3f} mm; twist max {tip.max_twist * 1e3:.3f} mrad, RMS "
            f"{tip.rms_twist * 1e3:.3f} mrad"
            for tip in self.tips
        ]

    def as_dict(self) -> dict[str, Any]:
        """The section for summary.json (SI units: m, rad, s)."""
        return {
            "topic": DEFLECTIONS_TOPIC,
            "samples": self.samples,
            "duration_s": self.duration,
            "links": {
                tip.link: {
                    "max_tip_deflection_m": tip.max_bend,
                    "rms_tip_deflection_m": tip.rms_bend,
                    "max_tip_twist_rad": tip.max_twist,
                    "rms_tip_twist_rad": tip.rms_twist,
                }
                for tip in self.tips
            },
        }


def deflection_section(
    deflections: tuple[tuple[str, ...], np.ndarray, np.ndarray] | None,
) -> DeflectionSection | None:
    """The report's section on the elastic links, from
    :func:`snake_viz.bag_series.read_deflections` (None: no deflections, no section).

    Raises:
        CompareError: an elastic coordinate whose name says neither its link nor its kind.
    """
    if deflections is None:
        return None
    names, t, modal = deflections
    try:
        links, tips = tips_of_named(names, modal)
    except StateError as exc:
        raise CompareError(f"{DEFLECTIONS_TOPIC}: {exc}") from None
    return DeflectionSection(tip_summary(links, tips), int(t.size), float(t.max() - t.min()))


@dataclass(frozen=True)
class ReportSummary:
    """What a report says in numbers (all per joint, in joint order).

    Attributes:
        folder: the report folder.
        names: joint names.
        rms: whole-run RMS error [rad].
        max: whole-run max |error| [rad].
        lag: lag of the measurement behind the prediction [s] (NaN: undefined).
        rms_at_lag: RMS error once the lag is taken out [rad] (NaN: no lag).
        samples: aligned samples with a valid error.
        duration: aligned span [s].
        files: the files written.
        travel: how far the predicted snake's tail went (a floating robot), or None.
        path: the comparison on the floor, or None (a robot with a fixed base).
        timing: how the run's clocks held (:mod:`snake_viz.timing`), or None (not judged).
        deflections: the prediction's elastic links, or None (no ``link_deflections``).
    """

    folder: Path
    names: tuple[str, ...]
    rms: tuple[float, ...]
    max: tuple[float, ...]
    lag: tuple[float, ...]
    rms_at_lag: tuple[float, ...]
    samples: tuple[int, ...]
    duration: float
    files: tuple[Path, ...] = field(default=())
    travel: Travel | None = None
    path: PathSection | None = None
    timing: Timing | None = None
    deflections: DeflectionSection | None = None

    def table(self) -> str:
        """A fixed-width per-joint table for a terminal."""
        lines = [
            f"{'joint':<10} {'RMS [deg]':>10} {'max [deg]':>10} {'lag [ms]':>9} "
            f"{'RMS at lag [deg]':>16}"
        ]
        rows = zip(self.names, self.rms, self.max, self.lag, self.rms_at_lag, strict=True)
        for name, rms, peak, lag, lagged in rows:
            lines.append(
                f"{name:<10} {_deg(rms):>10} {_deg(peak):>10} "
                f"{'n/a' if not math.isfinite(lag) else f'{lag * 1e3:.1f}':>9} "
                f"{_deg(lagged):>16}"
            )
        if self.travel is not None:
            lines.append(travel_line(self.travel))
        if self.path is not None:
            lines += self.path.lines()
        if self.deflections is not None:
            lines += self.deflections.lines()
        if self.timing is not None:
            lines.append(self.timing.line())
        return "\n".join(lines)


def travel_line(travel: Travel) -> str:
    """One line on the predicted travel, for the terminal and summary.md."""
    return (
        f"predicted travel ({ODOM_TOPIC}, the tail): {travel.distance:.4f} m in "
        f"{travel.duration:.2f} s, mean speed {travel.mean_speed * 100:.3f} cm/s, heading "
        f"drift {math.degrees(travel.heading_drift):.2f} deg"
    )


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
        robot: the robot the prediction ran on, whose servo model the report names (None:
            unknown; see :func:`servo_model_of`).
    """

    def __init__(
        self,
        folder: Path,
        model: SnakeModel | None = None,
        plots: bool = True,
        *,
        robot: Robot | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.model = model
        self.plots = plots
        self.robot = robot

    def write(
        self,
        comparison: Comparison,
        config: Mapping[str, Any],
        travel: Travel | None = None,
        path: PathSection | None = None,
        timing: Timing | None = None,
        deflections: DeflectionSection | None = None,
    ) -> ReportSummary:
        """Write every file; returns the :class:`ReportSummary`. ``travel``: the predicted
        snake's (a floating robot's), reported too; ``path``: the comparison on the floor;
        ``timing``: whether the run's clocks held (``trusted`` in summary.json);
        ``deflections``: the prediction's elastic links.

        ``config["robot_config"]`` (a path, or None) names the robot config; the servo model
        named is the robot's (see :func:`servo_model_of`).
        """
        self.folder.mkdir(parents=True, exist_ok=True)
        config = {**config, "servo_model": servo_model_of(self.robot)}
        al, st = comparison.aligned, comparison.stats
        duration = float(al.t[-1] - al.t[0]) if len(al) else 0.0
        summary = ReportSummary(
            self.folder,
            al.names,
            tuple(float(x) for x in st.run_rms),
            tuple(float(x) for x in st.run_max),
            tuple(float(x) for x in comparison.lag),
            tuple(float(x) for x in comparison.rms_at_lag),
            tuple(int(x) for x in st.samples),
            duration,
            travel=travel,
            path=path,
            timing=timing,
            deflections=deflections,
        )
        servo = config["servo_model"]
        files = [self._csv(al), self._markdown(comparison, summary, servo["describe"])]
        files.append(self._json(summary, servo["digest"]))
        files.append(self._config(comparison, config))
        if self.plots:
            files += write_plots(self.folder, al, self.model)
            if path is not None and path.comparison is not None:
                files.append(path_plot(self.folder / "path.png", path.comparison))
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

    def _markdown(self, comparison: Comparison, summary: ReportSummary, servo: str) -> Path:
        st = comparison.stats
        lines = [
            "# Prediction versus measurement",
            "",
            f"Prediction: {servo}.",
            "",
            f"Aligned span {summary.duration:.3f} s; {comparison.sim_samples} simulated and "
            f"{comparison.measured_samples} measured samples. Error = measured - simulated; "
            f"lag > 0: the robot follows the prediction late; RMS at lag: the error once the "
            f"lag is taken out, what a pure delay does not explain. Window: last "
            f"{st.window:g} s.",
            "",
            "| joint | RMS [deg] | max [deg] | RMS [rad] | max [rad] | window RMS [deg] "
            "| window max [deg] | lag [ms] | RMS at lag [deg] | samples |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for k, name in enumerate(summary.names):
            lines.append(
                f"| {name} | {_num(st.run_rms[k], 180 / math.pi)} "
                f"| {_num(st.run_max[k], 180 / math.pi)} | {_num(st.run_rms[k])} "
                f"| {_num(st.run_max[k])} | {_num(st.window_rms[k], 180 / math.pi)} "
                f"| {_num(st.window_max[k], 180 / math.pi)} "
                f"| {_num(comparison.lag[k], 1e3, '.1f')} "
                f"| {_num(comparison.rms_at_lag[k], 180 / math.pi)} "
                f"| {int(st.samples[k])} |"
            )
        valid = np.isfinite(comparison.aligned.error)
        if valid.any():
            total = float(np.sqrt(np.mean(comparison.aligned.error[valid] ** 2)))
            lines += ["", f"All joints: RMS {math.degrees(total):.3f} deg ({total:.4g} rad)."]
        if summary.travel is not None:
            line = travel_line(summary.travel)
            lines += ["", line[0].upper() + line[1:] + "."]
        if summary.path is not None:
            lines += ["", "## On the floor", ""]
            lines += [f"- {line[0].upper() + line[1:]}." for line in summary.path.lines()]
        if summary.deflections is not None:
            head, *links = summary.deflections.lines()
            lines += ["", "## Elastic links", "", head[0].upper() + head[1:] + ":", ""]
            lines += [f"- {line}." for line in links]
        if summary.timing is not None:
            line = summary.timing.line()
            lines += ["", line[0].upper() + line[1:] + "."]
        path = self.folder / "summary.md"
        path.write_text("\n".join(lines) + "\n")
        return path

    def _json(self, summary: ReportSummary, servo_digest: str | None) -> Path:
        def clean(values: Iterable[float]) -> list[float | None]:
            return [x if math.isfinite(x) else None for x in values]

        data = {
            "joints": list(summary.names),
            "rms_rad": clean(summary.rms),
            "max_rad": clean(summary.max),
            "lag_s": clean(summary.lag),
            "rms_at_lag_rad": clean(summary.rms_at_lag),
            "samples": list(summary.samples),
            "duration_s": summary.duration,
            "servo_model": servo_digest,
        }
        if summary.travel is not None:
            data["travel"] = {
                "topic": ODOM_TOPIC,
                "duration_s": summary.travel.duration,
                "distance_m": summary.travel.distance,
                "mean_speed_mps": summary.travel.mean_speed,
                "heading_drift_rad": summary.travel.heading_drift,
                "poses": summary.travel.samples,
            }
        if summary.path is not None:
            data["path"] = summary.path.as_dict()
        if summary.deflections is not None:
            data["deflections"] = summary.deflections.as_dict()
        if summary.timing is not None:
            data |= summary.timing.as_dict()
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


def report_config(
    source: str,
    topics: tuple[str, str],
    robot_config: Path | None,
    robot: str | None,
    max_lag: float,
    max_gap: float,
    **extra: Any,
) -> dict[str, Any]:
    """The run's configuration a report's ``config.yaml`` names (what every report has).

    Args:
        source: where the series came from ("bag", "compare_node").
        topics: (simulated, measured) topics.
        robot_config: the robot config file, or None.
        robot: the robot's name, or None.
        max_lag: largest lag searched [s].
        max_gap: longest measured gap interpolated over [s].
        extra: further entries of the source's (the bag's path, dropped samples).
    """
    return {
        "source": source,
        "topics": {"sim": topics[0], "measured": topics[1]},
        "robot_config": None if robot_config is None else str(robot_config),
        "robot": robot,
        "max_lag_s": max_lag,
        "lag_span_s": DEFAULT_LAG_SPAN_S,
        "max_gap_s": max_gap,
        **extra,
        "error": "measured - simulated [rad], measured interpolated onto the simulated stamps",
    }


def servo_model_of(robot: Robot | None) -> dict[str, Any]:
    """The servo model a prediction on ``robot`` used, as report data.

    Returns:
        ``describe`` (one line), ``digest`` (None when unknown), ``source`` and ``parameters``
        (:meth:`ServoModel.as_dict`); without a robot, or with one whose servo section does
        not load, ``describe`` says so.
    """
    if robot is None:
        return {"describe": "servo model unknown (no robot config given)", "digest": None}
    try:
        servo = robot.servo
    except ModelError as exc:
        return {"describe": f"servo model unknown ({exc})", "digest": None}
    return {
        "describe": servo.describe(),
        "digest": servo.digest,
        "source": servo.source,
        "parameters": servo.as_dict(),
    }


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
    return save_figure(fig, folder / "traces.png")


def path_plot(path: Path, comparison: PathComparison) -> Path:
    """Both paths seen from above (equal axes, start and end marked) and the path error over
    time; a PNG file. Returns ``path``."""
    plt = pyplot()
    m = comparison.metrics
    fig, (top, err) = plt.subplots(1, 2, figsize=(11, 4.8), width_ratios=(1.1, 1))
    for track, style, label in (
        (comparison.predicted, "C0-", f"predicted ({ODOM_TOPIC})"),
        (comparison.measured, "k--", f"measured ({POSE_TOPIC})"),
    ):
        line = top.plot(track[:, 0], track[:, 1], style, lw=1.2, label=label)[0]
        top.plot(*track[0, :2], "o", color=line.get_color())
        top.plot(*track[-1, :2], "^", color=line.get_color())
    top.plot([], [], "ko", label="start")
    top.plot([], [], "k^", label="end")
    top.set_aspect("equal", adjustable="datalim")
    top.set_xlabel("x [m]")
    top.set_ylabel("y [m]")
    top.set_title("The tail's path in world, seen from above", fontsize=9)
    top.legend(fontsize=8)
    top.grid(alpha=0.3)
    err.plot(comparison.t - comparison.t[0], comparison.error * 100, "C3-", lw=1.0)
    err.set_xlabel("t [s]")
    err.set_ylabel("|measured - predicted| in the plane [cm]")
    err.set_title(
        f"Path error: RMS {m.rms_error * 100:.2f} cm, max {m.max_error * 100:.2f} cm, "
        f"final {m.final_error * 100:.2f} cm",
        fontsize=9,
    )
    err.grid(alpha=0.3)
    return save_figure(fig, path)


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
