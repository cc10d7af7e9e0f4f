"""How fast the open-loop replay of `snake simulate` leaves each gait; prints a Markdown table.

For every robot, gait and step it runs the paper's validation loop (inverse-dynamics torques
replayed open loop, RK4, no servo feedback) for ``--duration`` seconds and reports, from the
per-sample error e(t) = max over joints of |commanded - simulated| angle:

- ``t(e > 0.1 rad)``: the first sample time with e > 0.1 rad [s] (- if none);
- ``growth``: the slope of log(e) against t [1/s], fitted on the running maximum of e over
  the exponential phase 1e-6 < e < 1e-2 rad, above the rounding floor and below saturation
  (- if e spends less than 0.1 s there);
- ``max error``: max e over the run [rad], and whether it stays within ``--tolerance`` (the
  default of `snake simulate`) or the state left the finite numbers (and when).

Usage: python bench/open_loop.py [--robot robot --robot snake20] [--dt 0.001 --dt 0.0005]
    [--duration 10] [--tolerance 0.05]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout

from snake_dynamics import GAITS, SnakeModel, make_gait
from snake_dynamics.mfm.integrators import DivergenceError, simulate_gait
from snake_ros.paths import robot_config

#: The exponential phase the growth rate is fitted on [rad].
PHASE = (1e-6, 1e-2)
#: The error whose first crossing is reported [rad].
THRESHOLD = 0.1


def growth_rate(t: NDArray[np.float64], error: NDArray[np.float64]) -> float | None:
    """Slope of log(running max of error) over :data:`PHASE` [1/s], or None if too short.

    Args:
        t: sample times [s], shape (N,).
        error: max over joints of |commanded - simulated| [rad], shape (N,).
    """
    envelope = np.maximum.accumulate(error)
    phase = (envelope > PHASE[0]) & (envelope < PHASE[1])
    if not phase.any() or np.ptp(t[phase]) < 0.1:
        return None
    return float(np.polyfit(t[phase], np.log(envelope[phase]), 1)[0])


def row(robot: str, gait_name: str, dt: float, duration: float, tolerance: float) -> str:
    """One table row: open-loop replay of ``gait_name`` on ``robot`` at step ``dt`` [s]."""
    model = SnakeModel.from_yaml(robot_config(robot))
    gait = make_gait(gait_name, model)
    try:
        result, diverged = simulate_gait(model, gait, duration, dt), None
    except DivergenceError as exc:
        result, diverged = exc.result, exc.t
    commanded = np.array([gait(float(t)).q for t in result.t])
    error = np.abs(result.q - commanded).max(axis=1)
    over = np.flatnonzero(error > THRESHOLD)
    crossing = f"{result.t[over[0]]:.3f}" if over.size else "-"
    rate = growth_rate(result.t, error)
    if diverged is not None:
        verdict = f"non-finite at {diverged:.3f} s"
    else:
        verdict = "within" if error.max() <= tolerance else "over"
    return (
        f"| {model.name} | {gait_name} | {dt * 1e3:g} | {crossing} | "
        f"{'-' if rate is None else f'{rate:.1f}'} | {error.max():.2g} | {verdict} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", action="append", help="robot config (default: robot, snake20)")
    parser.add_argument(
        "--dt", type=float, action="append", help="RK4 step [s] (default: 1, 0.5 ms)"
    )
    parser.add_argument("--duration", type=float, default=10.0, help="run length [s] (default: 10)")
    parser.add_argument(
        "--tolerance", type=float, default=0.05, help="verdict threshold [rad] (default: 0.05)"
    )
    args = parser.parse_args()
    print(
        f"| robot | gait | dt [ms] | t(e > {THRESHOLD:g} rad) [s] | growth [1/s] | "
        f"max error {args.duration:g} s [rad] | vs {args.tolerance:g} rad |"
    )
    print("|---|---|---|---|---|---|---|")
    for robot in args.robot or ["robot", "snake20"]:
        for dt in args.dt or [0.001, 0.0005]:
            for gait in GAITS:
                print(row(robot, gait, dt, args.duration, args.tolerance), flush=True)


if __name__ == "__main__":
    main()
