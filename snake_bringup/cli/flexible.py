"""``snake flexible``: the flexible-manipulator paper's 4-DOF arm and its PD manoeuvre, run
linearised and nonlinear, compared, and plotted as the paper's Figs. 6-10 (docs/flexible.md)."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from snake_dynamics.errors import ModelError, SimulationError

from .options import no_plots_option, output_option

if TYPE_CHECKING:
    from snake_dynamics.flexible import FlexibleModel, FlexibleResult

    from .options import Subparsers

#: The figures: file name, title, which elastic kind (None: the joints; "tau": the torques).
FIGURES = (
    ("fig6_joints.png", "joint angles and speeds", None),
    ("fig7_flexure_xy.png", "flexure in xy", 1),
    ("fig8_torsion.png", "torsion", 0),
    ("fig9_flexure_xz.png", "flexure in xz", 2),
    ("fig10_torques.png", "joint torques", "tau"),
)


def register(sub: Subparsers) -> None:
    """Add ``snake flexible [-o DIR] [--modes N] [--t-end S] [--arm FILE] [--no-plots]``."""
    p = sub.add_parser(
        "flexible",
        help="the flexible arm's manoeuvre: linearised vs nonlinear, figures 6-10",
    )
    output_option(p, "output directory", Path("flexible"))
    p.add_argument("--modes", type=int, default=2, help="assumed modes of each kind (default 2)")
    p.add_argument("--t-end", type=float, default=6.0, help="run length [s] (default 6)")
    p.add_argument("--arm", type=Path, help="a 4-joint arm file (default: the paper's arm)")
    no_plots_option(p, "tables only, no figures")
    p.set_defaults(
        run=lambda a: run(
            output=a.output, modes=a.modes, t_end=a.t_end, arm=a.arm, plots=not a.no_plots
        )
    )


def run(*, output: Path, modes: int, t_end: float, arm: Path | None, plots: bool) -> int:
    """Run the manoeuvre with both models, print the comparison, write the data and figures."""
    # imported here: the model family's numba and scipy stay out of every other command
    from snake_dynamics.flexible import FlexibleModel, arm_from_yaml, paper_arm, run_paper_manoeuvre

    if modes < 1:
        raise ModelError(f"--modes must be >= 1, got {modes}")
    if not (math.isfinite(t_end) and 0 < t_end <= 60):
        raise SimulationError(f"--t-end must be in (0, 60] s, got {t_end}")
    the_arm = paper_arm(modes=modes) if arm is None else arm_from_yaml(arm)
    if the_arm.n_joints != 4:
        raise ModelError(f"{arm}: links must list the manoeuvre's 4 links, got {the_arm.n_joints}")
    model = FlexibleModel(the_arm)
    run_paper_manoeuvre(model, False, t_end=1e-3)  # compile (or load) the kernels first
    results: dict[str, FlexibleResult] = {}
    cpu: dict[str, float] = {}
    for name, linearized in (("nonlinear", False), ("linearised", True)):
        start = time.process_time()
        results[name] = run_paper_manoeuvre(model, linearized, t_end=t_end)
        cpu[name] = time.process_time() - start
    lin, non = results["linearised"], results["nonlinear"]
    print(f"arm: {model.n} coordinates, RK4 step {lin.dt * 1e6:.1f} us, {t_end:g} s")
    for name in cpu:
        print(f"{name:>10}: {cpu[name]:.2f} s CPU ({cpu[name] / t_end:.2f} x real time)")
    print(f"{'coordinate':>14} {'max |nonlinear|':>16} {'max |lin - non|':>16}")
    for k, label in enumerate(coordinate_labels(model)):
        unit = "deg" if k < model.n_joints else ""
        scale = math.degrees(1) if k < model.n_joints else 1.0
        big = float(np.abs(non.q[:, k]).max()) * scale
        diff = float(np.abs(lin.q[:, k] - non.q[:, k]).max()) * scale
        print(f"{label:>14} {big:16.4g} {diff:16.4g} {unit}")
    output.mkdir(parents=True, exist_ok=True)
    np.savez(
        output / "flexible.npz",
        t=non.t,
        q_nonlinear=non.q,
        u_nonlinear=non.u,
        tau_nonlinear=non.tau,
        q_linearised=lin.q,
        u_linearised=lin.u,
        tau_linearised=lin.tau,
    )
    if plots:
        for path in plot_figures(model, lin, non, output):
            print(f"wrote {path}")
    print(f"wrote {output / 'flexible.npz'}")
    return 0


def coordinate_labels(model: FlexibleModel) -> list[str]:
    """q1 .. qn, then per elastic link i: torsion k, xy k, xz k (e.g. ``2:xy1``)."""
    labels = [f"q{i + 1}" for i in range(model.n_joints)]
    for i, link in enumerate(model.arm.links):
        n_modes = getattr(link, "n_modes", 0)
        if not n_modes:
            continue
        for kind, count in (
            ("tor", link.torsion_modes),  # type: ignore[union-attr]
            ("xy", link.xy_modes),  # type: ignore[union-attr]
            ("xz", link.xz_modes),  # type: ignore[union-attr]
        ):
            labels += [f"{i + 1}:{kind}{k + 1}" for k in range(count)]
    return labels


def plot_figures(
    model: FlexibleModel, lin: FlexibleResult, non: FlexibleResult, output: Path
) -> list[Path]:
    """The paper's Figs. 6-10: linearised solid, nonlinear dashed; coordinates left, speeds
    right."""
    from snake_viz.offline import pyplot

    plt = pyplot()
    labels = coordinate_labels(model)
    groups: dict[int, list[int]] = {0: [], 1: [], 2: []}
    for k, label in enumerate(labels[model.n_joints :], start=model.n_joints):
        kind = label.split(":")[1][:2]
        groups[{"to": 0, "xy": 1, "xz": 2}[kind]].append(k)
    written = []
    for name, title, what in FIGURES:
        if what == "tau":
            fig, axes = plt.subplots(1, 1, figsize=(7, 4), squeeze=False)
            for j in range(model.n_joints):
                (line,) = axes[0, 0].plot(lin.t, lin.tau[:, j], label=f"T{j + 1}")
                axes[0, 0].plot(non.t, non.tau[:, j], "--", color=line.get_color())
            axes[0, 0].set_ylabel("torque [N m]")
            axes[0, 0].legend(fontsize=8)
        else:
            idx = list(range(model.n_joints)) if what is None else groups[int(what)]
            scale = math.degrees(1) if what is None else 1.0
            fig, axes = plt.subplots(1, 2, figsize=(11, 4), squeeze=False)
            for k in idx:
                for col, (a, b) in enumerate(((lin.q, non.q), (lin.u, non.u))):
                    (line,) = axes[0, col].plot(lin.t, a[:, k] * scale, label=labels[k])
                    axes[0, col].plot(non.t, b[:, k] * scale, "--", color=line.get_color())
            unit = ("deg", "deg/s") if what is None else ("[m] or [rad]", "[m/s] or [rad/s]")
            axes[0, 0].set_ylabel(f"coordinate {unit[0]}")
            axes[0, 1].set_ylabel(f"speed {unit[1]}")
            axes[0, 0].legend(fontsize=7, ncol=2)
        for ax in axes.flat:
            ax.set_xlabel("t [s]")
            ax.grid(alpha=0.3)
        fig.suptitle(f"{title}: linearised (solid), nonlinear (dashed)")
        fig.tight_layout()
        path = output / name
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written
