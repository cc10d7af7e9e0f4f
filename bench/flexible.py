"""CPU time of the flexible arm's 6 s PD manoeuvre (docs/flexible.md), linearised and
nonlinear, against the paper's MATLAB figures (314 s linearised, 3901 s nonlinear, 14 s
linearised after code optimisation: another machine and another language, so only the
ratios between the paper's runs and ours say anything).

Each model: the kernels compiled (or loaded from numba's cache) first, then the manoeuvre
``--repeat`` times; the best CPU time (``time.process_time``) is reported, with the RK4 step,
the number of steps and the CPU time per evaluation of the equations of motion (four a
step). Also the largest difference of every coordinate between the two models.

    python bench/flexible.py [--repeat 2] [--stations 8] [--modes 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import platform
import time

import numpy as np

from snake_dynamics.flexible import FlexibleModel, paper_arm, run_paper_manoeuvre
from snake_dynamics.flexible.arm import T_END

#: The paper's CPU times of the manoeuvre [s] (its Section VI-B).
PAPER = {"nonlinear": 3901.0, "linearised": 314.0, "linearised, optimised code": 14.0}


def main() -> None:
    """Print the table of bench/README.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--stations", type=int, default=8, help="Gauss stations per link")
    parser.add_argument("--modes", type=int, default=2, help="modes of each kind")
    args = parser.parse_args()
    arm = dataclasses.replace(paper_arm(modes=args.modes), stations=args.stations)
    model = FlexibleModel(arm)
    runs = {}
    cpu = {}
    for name, linearized in (("nonlinear", False), ("linearised", True)):
        run_paper_manoeuvre(model, linearized, t_end=1e-3)  # compile or load the cache
        best = math.inf
        for _ in range(args.repeat):
            start = time.process_time()
            runs[name] = run_paper_manoeuvre(model, linearized)
            best = min(best, time.process_time() - start)
        cpu[name] = best
    dt = runs["nonlinear"].dt
    steps = round(T_END / dt)
    print(f"{platform.processor() or platform.machine()}, {platform.python_version()}, "
          f"{args.stations} stations, {args.modes} modes a kind, n = {model.n}, "
          f"RK4 step {dt * 1e6:.1f} us, {steps} steps")  # fmt: skip
    print("| model | CPU [s] | x real time | per evaluation [us] | paper [s] | paper / ours |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in ("nonlinear", "linearised"):
        per = cpu[name] / (4 * steps) * 1e6
        print(f"| {name} | {cpu[name]:.2f} | {cpu[name] / T_END:.2f} | {per:.1f} | "
              f"{PAPER[name]:g} | {PAPER[name] / cpu[name]:.0f} |")  # fmt: skip
    print(f"| (paper: linearised, optimised code) | | | | {PAPER['linearised, optimised code']:g} "
          f"| {PAPER['linearised, optimised code'] / cpu['linearised']:.1f} |")  # fmt: skip
    diff = np.abs(runs["linearised"].q - runs["nonlinear"].q).max(axis=0)
    print(f"largest |linearised - nonlinear|: joints {np.degrees(diff[:4]).round(4)} deg, "
          f"elastic {diff[4:].max():.2e} (m or rad)")  # fmt: skip


if __name__ == "__main__":
    main()
