"""``snake sweep``'s throughput on Dask: runs per minute against local workers, the scaling
efficiency from 1 to 2 workers, and the overhead per point against the point's own time.

The points are ``snake_bringup.sweep.ground_point`` on the default robot on its ground
(serpenoid, amplitudes and frequencies on a grid, ``--seconds`` simulated each at 1 ms),
submitted through ``snake_bringup.cluster.run_jobs`` to a ``LocalCluster`` of N worker
processes (1 thread each), every worker warmed up first (``client.run``: imports and the
numba cache). Timed: from the first submission to the last result (the cluster's start is
reported apart), and each point inside its worker. Overhead per point = (wall x workers -
the points' own times) / points (submission, scheduling, results, progress polling and the
idle tail of the last round), also as a fraction of the mean point's own time. Efficiency =
rate(2 workers) / (2 rate(1 worker)). The same points one after the other in this process
are reported for reference (on a shared machine, the points' own times vary by 30 % or more
from one run to the next: compare the overhead, not the serial time, with the cluster's).

    python bench/sweep.py [--points 8] [--seconds 10] [--workers 1 2] [--output FILE]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout

from report import emit  # bench/report.py (this folder is on sys.path)

from snake_bringup.cluster import Job, connect, run_jobs
from snake_bringup.sweep import ground_point
from snake_dynamics.robot import Robot
from snake_ros.paths import load_robot


def points(n: int) -> list[dict[str, float]]:
    """``n`` serpenoid points: amplitude 0.3-0.9 rad by frequency 0.5-1.0 Hz."""
    side = int(np.ceil(np.sqrt(n)))
    grid = [
        {"amplitude": float(a), "frequency": float(f)}
        for f in np.linspace(0.5, 1.0, side)
        for a in np.linspace(0.3, 0.9, side)
    ]
    return grid[:n]


def warm(robot: Robot) -> bool:
    """A short point: imports and the numba kernels loaded (on a worker, or here)."""
    ground_point(robot, "serpenoid", {"amplitude": 0.5, "frequency": 0.5}, 0.1, 0.001, False)
    return True


def timed_point(robot: Robot, params: dict[str, float], seconds: float) -> float:
    """One point on a worker; its own time [s] (perf_counter, in the worker)."""
    start = time.perf_counter()
    ground_point(robot, "serpenoid", params, seconds, 0.001, False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0, help="simulated per point [s]")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    robot = load_robot("robot")
    grid = points(args.points)
    warm(robot)
    start = time.perf_counter()
    for p in grid:
        ground_point(robot, "serpenoid", p, args.seconds, 0.001, False)
    serial = time.perf_counter() - start
    point_s = serial / len(grid)
    runs: list[dict[str, Any]] = []
    for workers in args.workers:
        t0 = time.perf_counter()
        with connect(None, workers, 30.0) as client:
            started = time.perf_counter() - t0
            client.run(warm, robot)
            jobs = [Job(str(i), timed_point, (robot, p, args.seconds)) for i, p in enumerate(grid)]
            t1 = time.perf_counter()
            own = [o.result for o in run_jobs(client, jobs) if o.result is not None]
            wall = time.perf_counter() - t1
        assert len(own) == len(grid), f"{len(grid) - len(own)} points failed"
        overhead = (wall * workers - sum(own)) / len(grid)
        runs.append(
            {
                "workers": workers,
                "cluster_start_s": round(started, 2),
                "wall_s": round(wall, 2),
                "runs_per_minute": round(60.0 * len(grid) / wall, 1),
                "point_own_s": round(sum(own) / len(own), 3),
                "overhead_per_point_s": round(overhead, 3),
                "overhead_fraction": round(overhead / (sum(own) / len(own)), 4),
            }
        )
    result: dict[str, Any] = {
        "points": len(grid),
        "simulated_per_point_s": args.seconds,
        "serial_point_s": round(point_s, 3),
        "serial_runs_per_minute": round(60.0 / point_s, 1),
        "runs": runs,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }
    one = next((r for r in runs if r["workers"] == 1), None)
    two = next((r for r in runs if r["workers"] == 2), None)
    if one is not None and two is not None:
        result["efficiency_1_to_2"] = round(
            two["runs_per_minute"] / (2 * one["runs_per_minute"]), 3
        )
    emit(result, args.output)


if __name__ == "__main__":
    main()
