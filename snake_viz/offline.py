"""Files and plots of an offline simulation run (`snake simulate`), no ROS.

The run folder holds ``run.npz`` (every array), ``run.csv`` (one row per sample),
``summary.json`` and PNG plots: commanded vs simulated joint angles (the paper's
Figure 4 layout, one panel per joint), joint torques and energy. A run on the ground
(``snake simulate --ground``, :func:`write_ground_run`) holds the base pose, the centre of
mass and the heading with the joint states, its travel in ``summary.json``, and a plot of
its path seen from above.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:  # the integrators (numba) are not needed to plot a result
    from snake_dynamics.floating import FloatingRun, Locomotion
    from snake_dynamics.mfm.integrators import SimulationResult


FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class RunSummary:
    """Headline numbers of a run (all measured on the samples written to the folder).

    ``first_exceeded_s`` and ``first_exceeded_joint`` name the first sample and joint whose
    |commanded - simulated| angle exceeds ``tolerance_rad`` (None if none does);
    ``diverged_at_s`` is when the state left the finite numbers (None if it did not), the
    folder then holding the run up to the sample before.
    """

    robot: str
    gait: str
    n_joints: int
    duration_s: float
    dt_s: float
    steps: int
    wall_time_s: float
    real_time_factor: float
    max_abs_torque_nm: float
    rms_tracking_error_rad: float
    max_tracking_error_rad: float
    energy_range_j: float
    tolerance_rad: float
    within_tolerance: bool
    first_exceeded_s: float | None
    first_exceeded_joint: str | None
    diverged_at_s: float | None

    def lines(self) -> list[str]:
        """Human-readable summary lines for stdout."""
        lines = [
            f"robot {self.robot} ({self.n_joints} joints), gait {self.gait}",
            f"simulated {self.duration_s:g} s at dt = {self.dt_s * 1e3:g} ms "
            f"({self.steps} RK4 steps) in {self.wall_time_s:.2f} s wall time "
            f"({self.real_time_factor:.1f}x real time)",
            f"tracking error commanded vs simulated: RMS {self.rms_tracking_error_rad:.3g} rad, "
            f"max {self.max_tracking_error_rad:.3g} rad (tolerance {self.tolerance_rad:g} rad)",
            f"max |torque| {self.max_abs_torque_nm:.4g} N m, "
            f"energy range {self.energy_range_j:.4g} J",
        ]
        if self.diverged_at_s is not None:
            lines.append(
                f"diverged: the state left the finite numbers at t = {self.diverged_at_s:.6g} s"
            )
        return lines


def summarise(
    result: SimulationResult,
    commanded: FloatArray,
    robot: str,
    gait: str,
    wall_time: float,
    *,
    dt: float,
    tolerance: float,
    diverged_at: float | None = None,
) -> RunSummary:
    """The :class:`RunSummary` of a run against the commanded angles.

    Args:
        result: the simulated run (its finite part if it diverged).
        commanded: the commanded angles at the run's samples [rad], shape (N, n).
        robot: the robot's name.
        gait: the gait's name.
        wall_time: the simulation's wall time [s].
        dt: the RK4 step [s].
        tolerance: the largest acceptable |commanded - simulated| angle [rad].
        diverged_at: when the state left the finite numbers [s], or None.
    """
    err = np.abs(result.q - commanded)
    over = np.flatnonzero((err > tolerance).any(axis=1))
    first = int(over[0]) if over.size else None
    duration = float(result.t[-1])
    return RunSummary(
        robot=robot,
        gait=gait,
        n_joints=int(result.q.shape[1]),
        duration_s=duration,
        dt_s=dt,
        steps=int(result.t.size - 1),
        wall_time_s=wall_time,
        real_time_factor=duration / wall_time if wall_time > 0 else math.inf,
        max_abs_torque_nm=float(np.max(np.abs(result.tau))),
        rms_tracking_error_rad=float(np.sqrt(np.mean(err**2))),
        max_tracking_error_rad=float(np.max(err)),
        energy_range_j=float(np.ptp(result.energy)),
        tolerance_rad=tolerance,
        within_tolerance=first is None and diverged_at is None,
        first_exceeded_s=None if first is None else float(result.t[first]),
        first_exceeded_joint=(
            None if first is None else result.joint_names[int(np.argmax(err[first]))]
        ),
        diverged_at_s=diverged_at,
    )


def panel_grid(n: int) -> tuple[int, int]:
    """Rows and columns (at most 4) of a grid of n per-joint panels."""
    cols = min(4, n)
    return math.ceil(n / cols), cols


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (files only, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: Path) -> Path:
    """Lay out ``fig``, write it to ``path`` (PNG at 110 dpi) and close it; returns ``path``."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    pyplot().close(fig)
    return path


class Curve(NamedTuple):
    """One series of joint angles, drawn in every per-joint panel.

    Attributes:
        q: angles [rad], shape (N, n); drawn in degrees.
        fmt: matplotlib format string, e.g. ``"k--"``.
        label: legend entry (None: not in the legend).
        width: line width [pt].
    """

    q: FloatArray
    fmt: str
    label: str | None = None
    width: float = 1.0


def joint_panels(
    path: Path, t: FloatArray, names: Sequence[str], curves: Sequence[Curve], title: str
) -> Path:
    """The paper's Figure 4 layout: one panel per joint, the curves over time; a PNG file.

    Args:
        path: the PNG file to write.
        t: sample times [s], shape (N,).
        names: joint names, one per panel (the curves' columns).
        curves: what each panel shows.
        title: the figure's title.

    Returns:
        ``path``.
    """
    plt = pyplot()
    n = len(names)
    rows, cols = panel_grid(n)
    fig, axes = plt.subplots(
        rows, cols, figsize=(3.2 * cols, 2.2 * rows), sharex=True, squeeze=False
    )
    for k in range(rows * cols):
        ax = axes[k // cols][k % cols]
        if k >= n:
            ax.axis("off")
            continue
        for curve in curves:
            ax.plot(t, np.degrees(curve.q[:, k]), curve.fmt, lw=curve.width, label=curve.label)
        ax.set_title(names[k], fontsize=9)
        ax.set_ylabel("deg", fontsize=8)
        ax.tick_params(labelsize=7)
    if any(curve.label for curve in curves):
        axes[0][0].legend(fontsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("t [s]", fontsize=8)
    fig.suptitle(title)
    return save_figure(fig, path)


def write_run(
    folder: Path,
    result: SimulationResult,
    commanded: FloatArray,
    summary: RunSummary,
    config: dict[str, Any],
    plots: bool = True,
) -> list[Path]:
    """Write the run's data, summary, configuration and (optionally) plots to ``folder``.

    Returns:
        The files written.
    """
    folder.mkdir(parents=True, exist_ok=True)
    written = [result.save_npz(folder / "run.npz"), result.save_csv(folder / "run.csv")]
    np.save(folder / "commanded_q.npy", commanded)
    written.append(folder / "commanded_q.npy")
    summary_path = folder / "summary.json"
    summary_path.write_text(json.dumps({"summary": asdict(summary), "config": config}, indent=2))
    written.append(summary_path)
    if plots:
        written += _plots(folder, result, commanded)
    return written


def _plots(folder: Path, result: SimulationResult, commanded: FloatArray) -> list[Path]:
    plt = pyplot()
    n = result.q.shape[1]
    out = [
        joint_panels(
            folder / "joint_angles.png",
            result.t,
            result.joint_names,
            (Curve(commanded, "k--", "commanded"), Curve(result.q, "C0-", "MFM simulated", 1.2)),
            "Joint angles: commanded vs MFM simulation",
        )
    ]

    fig, ax = plt.subplots(figsize=(8, 4))
    for k in range(n):
        ax.plot(result.t, result.tau[:, k], lw=1.0, label=result.joint_names[k])
    ax.set_xlabel("t [s]")
    ax.set_ylabel("torque [N m]")
    ax.set_title("Joint torques (inverse dynamics, eq. 81)")
    ax.legend(fontsize=7, ncol=max(1, n // 8))
    out.append(save_figure(fig, folder / "torques.png"))

    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.plot(result.t, result.kinetic, label="kinetic K (eq. 65)")
    ax.plot(result.t, result.potential, label="potential V")
    ax.plot(result.t, result.energy, "k", lw=1.5, label="K + V")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("energy [J]")
    ax.legend(fontsize=8)
    out.append(save_figure(fig, folder / "energy.png"))
    return out


def write_ground_run(
    folder: Path,
    run: FloatingRun,
    joint_names: Sequence[str],
    travel: Locomotion,
    config: dict[str, Any],
    plots: bool = True,
) -> list[Path]:
    """Write a run on the ground: ``run.npz`` and ``run.csv`` (t; base position and
    quaternion (x, y, z, w); centre of mass; heading; per joint q, q_dot, tau),
    ``summary.json`` (the travel, eq. 238, and the configuration) and ``path.png``.

    Returns:
        The files written.
    """
    folder.mkdir(parents=True, exist_ok=True)
    columns = {
        "t": run.t,
        **{f"base_{a}": run.position[:, i] for i, a in enumerate("xyz")},
        **{f"base_q{a}": run.quaternion[:, i] for i, a in enumerate("xyzw")},
        **{f"com_{a}": run.com[:, i] for i, a in enumerate("xyz")},
        "heading": run.heading,
        **{f"q_{name}": run.q[:, k] for k, name in enumerate(joint_names)},
        **{f"qd_{name}": run.nu[:, 6 + k] for k, name in enumerate(joint_names)},
        **{f"tau_{name}": run.tau[:, k] for k, name in enumerate(joint_names)},
    }
    npz = folder / "run.npz"
    np.savez_compressed(npz, **run._asdict(), joint_names=np.array(joint_names))
    csv = folder / "run.csv"
    table = np.column_stack(list(columns.values()))
    np.savetxt(csv, table, delimiter=",", header=",".join(columns), comments="", fmt="%.9g")
    summary = folder / "summary.json"
    summary.write_text(json.dumps({"travel": travel._asdict(), "config": config}, indent=2))
    written = [npz, csv, summary]
    if plots:
        written.append(_path_plot(folder / "path.png", run, travel))
    return written


def _path_plot(path: Path, run: FloatingRun, travel: Locomotion) -> Path:
    """The centre of mass's and the tail's paths seen from above, start and end marked."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 6))
    ax.plot(run.position[:, 0], run.position[:, 1], "C1-", lw=0.8, label="tail (base_link)")
    ax.plot(run.com[:, 0], run.com[:, 1], "C0-", lw=1.6, label="centre of mass")
    ax.plot(*run.com[0, :2], "ko", label="start")
    ax.plot(*run.com[-1, :2], "k^", label="end")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_title(
        f"{travel.distance:.3f} m in {run.t[-1]:g} s, {travel.forward_speed * 100:.2f} cm/s "
        f"forward, heading drift {math.degrees(travel.heading_drift):.1f} deg",
        fontsize=9,
    )
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return save_figure(fig, path)


class SweepPoint(NamedTuple):
    """One point of ``snake sweep``: the gait's parameters and what the run achieved."""

    params: dict[str, float]
    travel: Locomotion


def write_sweep(
    folder: Path,
    grid: Sequence[SweepPoint],
    x_name: str,
    xs: Sequence[float],
    y_name: str,
    ys: Sequence[float],
    config: dict[str, Any],
    plots: bool = True,
    units: Mapping[str, str] | None = None,
) -> tuple[list[Path], list[str]]:
    """Write ``sweep.csv`` (one row per point), ``summary.json`` (the configuration, the
    fastest and the cheapest point) and ``sweep.png`` (mean speed and cost-of-transport
    heatmaps over the grid, the best points marked).

    Args:
        folder: the output folder (made if missing).
        grid: the points, x varying fastest (row-major over y).
        x_name: the first parameter's name; xs its values.
        y_name: the second parameter's name; ys its values.
        config: the run's settings, stored in summary.json.
        plots: write the PNG.
        units: the parameters' units by name, for the axes' labels.

    Returns:
        The files written, and the lines naming the best points.
    """
    folder.mkdir(parents=True, exist_ok=True)
    header = [x_name, y_name, "distance_m", "mean_speed_mps", "forward_speed_mps"]
    header += ["heading_drift_rad", "positive_work_j", "cost_of_transport"]
    rows = [[p.params[x_name], p.params[y_name], *p.travel] for p in grid]  # Locomotion's order
    csv = folder / "sweep.csv"
    np.savetxt(csv, np.array(rows), delimiter=",", header=",".join(header), comments="", fmt="%.9g")
    speed = np.array([p.travel.mean_speed for p in grid]).reshape(len(ys), len(xs))
    cot = np.array([p.travel.cost_of_transport for p in grid]).reshape(len(ys), len(xs))
    fastest = int(np.argmax(speed))
    finite = np.where(np.isfinite(cot), cot, np.inf)
    cheapest = int(np.argmin(finite)) if np.isfinite(finite).any() else None

    def named(i: int) -> str:
        return f"{x_name}={grid[i].params[x_name]:g} {y_name}={grid[i].params[y_name]:g}"

    best = {"fastest": {**grid[fastest].params, **grid[fastest].travel._asdict()}}
    lines = [
        f"fastest: {named(fastest)}: {speed.flat[fastest] * 100:.3g} cm/s "
        f"(cost of transport {cot.flat[fastest]:.3g})"
    ]
    if cheapest is not None:
        best["cheapest"] = {**grid[cheapest].params, **grid[cheapest].travel._asdict()}
        lines.append(
            f"cheapest: {named(cheapest)}: cost of transport {cot.flat[cheapest]:.3g} "
            f"({speed.flat[cheapest] * 100:.3g} cm/s)"
        )
    summary = folder / "summary.json"
    summary.write_text(json.dumps({"config": config, "best": best}, indent=2, default=str))
    written = [csv, summary]
    if plots:
        units = units or {}
        labels = [f"{name} [{units[name]}]" if name in units else name for name in (x_name, y_name)]
        title = f"{config.get('gait', '')} on {Path(str(config.get('robot', ''))).stem}"
        written.append(
            _heatmaps(
                folder / "sweep.png",
                speed,
                cot,
                (labels[0], xs),
                (labels[1], ys),
                fastest,
                cheapest,
                title,
            )
        )
    return written, lines


def _heatmaps(
    path: Path,
    speed: FloatArray,
    cot: FloatArray,
    x: tuple[str, Sequence[float]],
    y: tuple[str, Sequence[float]],
    fastest: int,
    cheapest: int | None,
    title: str,
) -> Path:
    """Speed [cm/s] and cost of transport (log colour scale) over the grid, side by side,
    best points marked."""
    from matplotlib.colors import LogNorm

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    xs, ys = np.asarray(x[1]), np.asarray(y[1])
    finite = np.where(np.isfinite(cot) & (cot > 0), cot, np.nan)
    log = LogNorm() if np.isfinite(finite).any() else None
    panels = (
        (speed * 100, "mean speed [cm/s]", "viridis", fastest, "fastest", None),
        (finite, "cost of transport", "magma_r", cheapest, "cheapest", log),
    )
    for ax, (values, name, cmap, mark, label, norm) in zip(axes, panels, strict=True):
        image = ax.pcolormesh(xs, ys, values, cmap=cmap, shading="nearest", norm=norm)
        fig.colorbar(image, ax=ax)
        if mark is not None:
            ax.plot(xs[mark % len(xs)], ys[mark // len(xs)], "w*", ms=16, mec="k", label=label)
            ax.legend(fontsize=8, loc="upper left")
        ax.set_xlabel(x[0])
        ax.set_ylabel(y[0])
        ax.set_title(name)
    fig.suptitle(title)
    return save_figure(fig, path)
