"""The floor fit again on a ``snake identify`` folder's crawls, with the servos and starting
floor of a robot config of your choice, as JSON on stdout: what the fit (eq. 245) finds when
it is told the plant's true servos and the floor's other parameters (``--robot
robot_table_true --servo robot``) against what it finds with the identified servos (the
folder's overlay, as ``snake identify`` fits).

With ``--plant FILE`` (the plant file the folder's ``snake identify --emulate`` ran on) the
start is that plant's truth instead: its body (the config's, times its mass scale), its
servos (their dead time, which a plant counts from the end of the pulse, seen from the
command: plus half a pulse period and the pulse, eq. 210) and its floor.
``start_floor_paths`` reports each crawl's path RMS from the prediction with those
parameters, as measured and after the best rigid motion in the plane (eq. 248: that takes
out the start pose the sensor's noise sets), against the sensor's noise
(``sensor_noise_rms_mm``: sqrt(2) times its ``position_noise``).

    python bench/floor_fit.py runs/identify-<time> [--robot robot_table] \\
        [--servo identified|robot] [--plant FILE] [--tie-backward] [--fit-backward]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path

import numpy as np
from report import emit  # bench/report.py (this folder is on sys.path)

from snake_bringup.identification.floor import CRAWLS
from snake_bringup.identification.poses import crawl_recording
from snake_bringup.plant_bridge import build_plant
from snake_dynamics.ground import Ground
from snake_dynamics.robot import Robot
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim.floor_identification import aligned_path, fit_ground, predict_crawl
from snake_dynamics.sim.identification import seen_from_the_command
from snake_ros.paths import robot_config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a snake identify output folder with crawls")
    parser.add_argument("--robot", default="robot_table", help="the body and starting floor")
    parser.add_argument(
        "--servo",
        choices=("identified", "robot"),
        default="identified",
        help="the folder's identified servos, or the --robot config's",
    )
    parser.add_argument(
        "--tie-backward", action="store_true", help="mu_backward follows mu_along (unset)"
    )
    parser.add_argument("--fit-backward", action="store_true", help="fit mu_backward too")
    parser.add_argument(
        "--plant", type=Path, help="start from this plant file's body, servo and floor (its truth)"
    )
    parser.add_argument("--output", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    config = robot_config(args.robot)
    robot = Robot.load(config)  # once
    model = robot.model
    body = dataclasses.replace(model, gravity=np.zeros(3))  # as snake identify's floor stage
    names = model.joint_names
    servo_file = args.folder / "robot_identified.yaml" if args.servo == "identified" else config
    servo = robot.servo if servo_file == config else ServoModel.from_yaml(servo_file, names)
    start = model.ground or Ground()
    source = str(servo_file)
    labels = [label for label, *_ in CRAWLS] + ["floor_validation"]
    recordings = [
        crawl_recording(args.folder / f"{label}_bag", names).recording for label in labels
    ]
    noise: float | None = None  # the plant's pose sensor's, in the plane [m]
    if args.plant is not None:
        plant = build_plant(robot, args.plant)
        body, start = plant.model, plant.params.ground or Ground()
        servo = seen_from_the_command(plant.params.servo)
        if plant.params.pose_sensor is not None:
            noise = math.sqrt(2.0) * plant.params.pose_sensor.position_noise
        source = f"{args.plant} (its body; its dead time seen from the command, eq. 210)"
    if args.tie_backward:
        start = dataclasses.replace(start, mu_backward=None)
    *takes, check = recordings
    truth: dict[str, object] = {
        "sensor_noise_rms_mm": None if noise is None else round(noise * 1e3, 3)
    }
    for label, take in zip(labels, recordings, strict=True):
        xy = predict_crawl(body, servo, start, take).xy
        truth[label] = {
            "path_rms_mm": round(_rms(xy - take.xy) * 1e3, 2),
            "aligned_path_rms_mm": round(_rms(aligned_path(xy, take.xy) - take.xy) * 1e3, 2),
        }
    fitted = ("mu_along", "mu_across", *(("mu_backward",) if args.fit_backward else ()))
    fit = fit_ground(body, servo, takes, start, fitted=fitted)
    xy = predict_crawl(body, servo, fit.ground, check).xy
    measured = float(np.hypot(*(check.xy[-1] - check.xy[0])))
    predicted = float(np.hypot(*(xy[-1] - xy[0])))
    emit(
        {
            "folder": str(args.folder),
            "robot": args.robot,
            "servo": source,
            "start": {k: getattr(start, k) for k in ("mu_along", "mu_across", "mu_backward")},
            "fitted": {k: round(float(getattr(fit.ground, k)), 4) for k in fitted},
            "path_rms_mm_before": [round(float(x) * 1e3, 2) for x in fit.rms_before],
            "path_rms_mm_after": [round(float(x) * 1e3, 2) for x in fit.rms_after],
            "evaluations": fit.evaluations,
            "start_floor_paths": truth,
            "validation_travel_m": {
                "measured": round(measured, 4),
                "predicted": round(predicted, 4),
            },
        },
        args.output,
    )


def _rms(error: np.ndarray) -> float:
    """RMS of the distances of (k, 2) position errors [m]."""
    return float(np.sqrt(np.mean(np.sum(np.square(error), axis=1))))


if __name__ == "__main__":
    main()
