"""``snake optimize`` against a fine grid: the reference and how close the search gets.

The reference is one gait parameter (the serpenoid's phase lag, its amplitude and frequency
fixed) of the default robot on its ground with ideal servos, 2 s simulated a point, on a
fine grid of ``--points`` values: each point is ``snake_bringup.sweep.ground_point`` (what
both ``snake sweep`` and ``snake optimize`` run) scored by
``snake_bringup.optimization.objective_value`` (the mean speed). ``--reference FILE`` writes
the grid and its setup as JSON (the checked-in ``bench/optimize_reference.json`` that
test/bringup/test_optimize.py reads). Then ``snake optimize`` runs on the same setup with a
tenth of the grid's runs (seeded TPE) and the best it found is compared with the grid's.

    python bench/optimize.py [--points 200] [--workers 2] [--reference FILE] [--output FILE]
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout

from report import emit  # bench/report.py (this folder is on sys.path)

from snake_bringup.cluster import Job, connect, run_jobs
from snake_bringup.optimization import TRIALS_FILE, objective_value
from snake_bringup.sweep import ground_point
from snake_ros.paths import load_robot

#: The searched parameter's range [rad] and the rest of the setup.
LOW, HIGH = 0.3, 1.0
SETUP: dict[str, Any] = {
    "robot": "robot",
    "gait": "serpenoid",
    "param": "phase_lag",
    "fixed": {"amplitude": 0.8, "frequency": 1.0},
    "duration_s": 2.0,
    "dt_s": 0.001,
    "ideal_servos": True,
    "objective": "speed",
}


def grid(points: int, workers: int) -> list[dict[str, float]]:
    """The objective on ``points`` amplitudes from LOW to HIGH, on a local cluster."""
    robot = load_robot(SETUP["robot"])
    values = [float(v) for v in np.linspace(LOW, HIGH, points)]
    jobs = [
        Job(
            str(i),
            ground_point,
            (
                robot,
                SETUP["gait"],
                {**SETUP["fixed"], SETUP["param"]: v},
                SETUP["duration_s"],
                SETUP["dt_s"],
                SETUP["ideal_servos"],
            ),
        )
        for i, v in enumerate(values)
    ]
    with connect(None, workers, 30.0) as client:
        outcomes = {o.key: o for o in run_jobs(client, jobs)}
    rows = []
    for i, v in enumerate(values):
        point = outcomes[str(i)].result
        assert point is not None, outcomes[str(i)].error
        rows.append(
            {
                SETUP["param"]: v,
                "objective": objective_value(SETUP["objective"], point),
                "saturated_share": max(point.saturated or (0.0,)),
            }
        )
    return rows


def optimize_command(reference: dict[str, Any], trials: int, output: Path) -> list[str]:
    """``snake optimize`` on the reference's setup (seeded TPE, two local workers)."""
    setup = reference["setup"]
    return [
        sys.executable,
        "-m",
        "snake_bringup.cli",
        "optimize",
        "--robot",
        setup["robot"],
        "--gait",
        setup["gait"],
        "--param",
        f"{setup['param']}={reference['low']}:{reference['high']}",
        *(f"--set={k}={v}" for k, v in setup["fixed"].items()),
        "--duration",
        str(setup["duration_s"]),
        "--dt",
        str(setup["dt_s"]),
        *(["--ideal-servos"] if setup["ideal_servos"] else []),
        "--objective",
        setup["objective"],
        "--trials",
        str(trials),
        "--seed",
        "0",
        "--jobs",
        "2",
        "--no-plots",
        "-o",
        str(output),
    ]


def best_trial(folder: Path) -> dict[str, str]:
    """The trials CSV's row of the best objective value (maximised)."""
    with (folder / TRIALS_FILE).open() as f:
        rows = [r for r in csv.DictReader(f) if r["objective"]]
    return max(rows, key=lambda r: float(r["objective"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--reference", type=Path, help="write the grid as JSON here")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    start = time.perf_counter()
    rows = grid(args.points, args.workers)
    grid_s = time.perf_counter() - start
    reference = {"setup": SETUP, "low": LOW, "high": HIGH, "grid": rows}
    if args.reference is not None:
        args.reference.write_text(json.dumps(reference, indent=1) + "\n")
    best = max(rows, key=lambda r: r["objective"])
    trials = max(1, args.points // 10)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        subprocess.run(optimize_command(reference, trials, Path(tmp)), check=True)
        search_s = time.perf_counter() - start
        found = best_trial(Path(tmp))
    emit(
        {
            "machine": f"{platform.machine()}, {platform.python_version()}",
            "grid_points": args.points,
            "grid_wall_s": round(grid_s, 1),
            "grid_best": best,
            "trials": trials,
            "search_wall_s": round(search_s, 1),
            "search_best": {k: float(found[k]) for k in (SETUP["param"], "objective")},
            "search_best_over_grid_best": round(float(found["objective"]) / best["objective"], 4),
        },
        args.output,
    )


if __name__ == "__main__":
    main()
