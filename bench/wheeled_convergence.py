"""The floating MFM snake on the ground converging to the wheeled (= kinematic) snake as the
friction across its links grows: a table on stdout and a log-log figure.

The floating twin of the 3-link kinematic snake (docs/mfm.md, "Cross-checks between the
wheeled, kinematic and floating snakes", eqs. 420-427: a floating tail and two links of
length L, yaw joints, one contact point per body 2 mm below its CM, no friction along the
links) follows the lateral-undulation gait exactly (eq. 228) for two periods, RK4 at the
ground's stable step (eq. 237), with the compiled ``simulate_prescribed_fast``. The error
is the largest distance and heading difference of its middle link from the kinematic
snake's reconstruction over the second period, started from the twin's own pose (eq. 426);
"from rest" is the distance over both periods, the reference started at t = 0, where the
twin starts at rest as a whole and the gait's wheels would already be rolling.

Three sweeps, each against the damping c across a link [N s/m] (eq. 425): viscous friction
c_n; Coulomb friction with μ_across growing at v_s = m g / 5000 N s/m; Coulomb friction
with v_s shrinking at μ_across = 1. For Coulomb, c = μ m g / v_s, the slope of tanh's
linear range.

    python bench/wheeled_convergence.py [--length 0.2] [--mass 0.5] [--radius 0.002]
        [--amplitude 40] [--phase 90] [--frequency 3.14159] [--step-fraction 1]
        [--png docs/img/wheeled-convergence.png] [--output FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout

from snake_dynamics.ground import Ground
from snake_dynamics.planar import LateralUndulation, cycle_displacement
from snake_dynamics.planar.crosscheck import (
    GRAVITY,
    convergence_error,
    coulomb_ground,
    viscous_ground,
)

ROOT = Path(__file__).resolve().parents[1]
VISCOUS = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1e3, 3e3, 1e4, 3e4)
MUS = (0.0625, 0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
VELOCITY_SCALES = (1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4)


def sweeps(mass: float) -> dict[str, list[tuple[float, float, Ground]]]:
    """Per sweep: (its coefficient, the damping c [N s/m], the ground)."""
    scale = mass * GRAVITY / 5000.0
    return {
        "viscous c_n [N s/m]": [(c, c, viscous_ground(c)) for c in VISCOUS],
        f"Coulomb mu_across (v_s = {scale * 1e3:.3g} mm/s)": [
            (mu, mu * mass * GRAVITY / scale, coulomb_ground(mu, scale)) for mu in MUS
        ],
        "Coulomb v_s [m/s] (mu_across = 1)": [
            (vs, mass * GRAVITY / vs, coulomb_ground(1.0, vs)) for vs in VELOCITY_SCALES
        ],
    }


def plot(rows: list[dict[str, Any]], title: str, path: Path) -> None:
    """Position and heading errors against c, log-log, one line per sweep, and 1/c."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.5))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2)
    names = list(dict.fromkeys(row["sweep"] for row in rows))
    for ax, key, label in (
        (axes[0], "position_error_m", "largest position error e_p [m]"),
        (axes[1], "heading_error_rad", "largest heading error e_θ [rad]"),
    ):
        for name, marker in zip(names, "osd", strict=False):
            mine = [row for row in rows if row["sweep"] == name]
            ax.loglog(
                [row["damping_Ns_per_m"] for row in mine],
                [row[key] for row in mine],
                marker=marker,
                label=name,
            )
        anchor = next(row for row in rows if row["damping_Ns_per_m"] == 1e4)
        cs = [1e2, 1e5]
        ax.loglog(cs, [anchor[key] * 1e4 / c for c in cs], "k--", lw=0.8, label="∝ 1/c")
        ax.set(xlabel="damping across a link c [N s/m] (Coulomb: μ m g / v_s)", ylabel=label)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize="small")
    fig.suptitle(title, fontsize="medium")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=float, default=0.2, help="link length L [m]")
    parser.add_argument("--mass", type=float, default=0.5, help="body mass [kg]")
    parser.add_argument("--radius", type=float, default=0.002, help="body radius [m]")
    parser.add_argument("--amplitude", type=float, default=40.0, help="gait amplitude [deg]")
    parser.add_argument("--phase", type=float, default=90.0, help="gait phase [deg]")
    parser.add_argument("--frequency", type=float, default=math.pi, help="gait ω [rad/s]")
    parser.add_argument(
        "--step-fraction", type=float, default=1.0, help="RK4 step / the stable step, (0, 1]"
    )
    parser.add_argument(
        "--png", type=Path, default=ROOT / "docs" / "img" / "wheeled-convergence.png"
    )
    parser.add_argument("--output", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args()
    gait = LateralUndulation(math.radians(args.amplitude), math.radians(args.phase), args.frequency)
    shift = cycle_displacement(gait, args.length, steps=4000)
    title = (
        f"floating MFM snake → wheeled snake: L = {args.length} m, m = {args.mass} kg, "
        f"radius {args.radius * 1e3:g} mm; gait a = {args.amplitude:g}°, φ = {args.phase:g}°, "
        f"ω = {args.frequency:.4g} rad/s (cycle: {math.hypot(*shift[:2]):.3f} m)"
    )
    print(title)
    header = (
        f"{'coefficient':>12} {'c [N s/m]':>10} {'dt [ms]':>8} {'steps':>7} "
        f"{'e_p [m]':>9} {'e_θ [rad]':>9} {'from rest [m]':>13} {'wall [s]':>8}"
    )
    rows: list[dict[str, Any]] = []
    for name, points in sweeps(args.mass).items():
        print(f"\n{name}\n{header}")
        for coefficient, damping, ground in points:
            start = time.perf_counter()
            run = convergence_error(
                ground,
                gait,
                args.length,
                args.mass,
                args.radius,
                step_fraction=args.step_fraction,
            )
            wall = time.perf_counter() - start
            print(
                f"{coefficient:12.4g} {damping:10.4g} {run.dt * 1e3:8.4f} {run.steps:7d} "
                f"{run.position_error:9.3e} {run.heading_error:9.3e} "
                f"{run.from_rest_error:13.3e} {wall:8.2f}"
            )
            rows.append(
                {
                    "sweep": name,
                    "coefficient": coefficient,
                    "damping_Ns_per_m": damping,
                    "dt_s": run.dt,
                    "steps": run.steps,
                    "position_error_m": run.position_error,
                    "heading_error_rad": run.heading_error,
                    "from_rest_error_m": run.from_rest_error,
                    "wall_s": wall,
                }
            )
    plot(rows, title, args.png)
    print(f"\nwrote {args.png}")
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps({"title": title, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
