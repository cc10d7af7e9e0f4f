"""The floor fit's landscape over a grid of floors, from a ``snake identify`` folder's crawls.

For every floor of a log-spaced grid (mu_along by mu_across, the robot config's other ground
parameters), predicts each fitted crawl with the folder's identified servos (eq. 243) and
reports its RMS path error (eq. 244) and RMS joint error (eq. 246) [mm], as JSON on stdout:
what the fit's coarse search (eq. 247) and least squares see.

    python bench/floor_grid.py runs/identify-<time> [--robot robot_table] [--points 9]
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np
from report import emit  # bench/report.py (this folder is on sys.path)

from snake_bringup.identification.floor import CRAWLS
from snake_bringup.identification.poses import crawl_recording
from snake_dynamics.ground import Ground
from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim.floor_identification import joint_error, path_error, predict_crawl
from snake_ros.paths import robot_config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a snake identify output folder with crawls")
    parser.add_argument("--robot", default="robot_table", help="the identification's robot")
    parser.add_argument("--points", type=int, default=9, help="grid points per coefficient")
    parser.add_argument("--along", type=float, nargs=2, default=(0.04, 0.3))
    parser.add_argument("--across", type=float, nargs=2, default=(0.2, 1.0))
    parser.add_argument("--output", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    model = SnakeModel.from_yaml(robot_config(args.robot))
    names = model.joint_names
    servo = ServoModel.from_yaml(args.folder / "robot_identified.yaml", names)
    start = model.ground or Ground()
    takes = {
        label: crawl_recording(args.folder / f"{label}_bag", names).recording
        for label, _, _ in CRAWLS
    }
    along = np.geomspace(*args.along, args.points)
    across = np.geomspace(*args.across, args.points)
    grid: dict[str, dict[str, list[list[float]]]] = {
        label: {"path_mm": [], "joint_mm": []} for label in takes
    }
    for a in along:
        for label in takes:
            grid[label]["path_mm"].append([])
            grid[label]["joint_mm"].append([])
        for c in across:
            ground = dataclasses.replace(start, mu_along=float(a), mu_across=float(c))
            for label, take in takes.items():
                predicted = predict_crawl(model, servo, ground, take)
                rms = [
                    float(np.sqrt(np.mean(e**2))) * 1e3
                    for e in (
                        path_error(predicted.xy, take),
                        joint_error(model, predicted.q, take),
                    )
                ]
                grid[label]["path_mm"][-1].append(round(rms[0], 1))
                grid[label]["joint_mm"][-1].append(round(rms[1], 2))
    emit(
        {
            "folder": str(args.folder),
            "mu_along": [round(float(a), 4) for a in along],
            "mu_across": [round(float(c), 4) for c in across],
            "rows": "mu_along",
            "crawls": grid,
        },
        args.output,
    )


if __name__ == "__main__":
    main()
