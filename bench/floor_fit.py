"""The floor fit again on a ``snake identify`` folder's crawls, with the servos and starting
floor of a robot config of your choice, as JSON on stdout: what the fit (eq. 245) finds when
it is told the plant's true servos and the floor's other parameters (``--robot
robot_table_true --servo robot``) against what it finds with the identified servos (the
folder's overlay, as ``snake identify`` fits).

With ``--plant FILE`` (the plant file the folder's ``snake identify --emulate`` ran on) the
start is that plant's truth instead: its servo (torques divided by its mass scale, for the
config's body) with the dead time the folder identified (the host's link adds latency no
plant key holds), and its floor. ``start_floor_paths`` reports each crawl's path RMS from the
prediction with those parameters, as measured and after the best rigid motion in the plane
(which takes out the start pose the sensor's noise sets), against the sensor's noise.

    python bench/floor_fit.py runs/identify-<time> [--robot robot_table] \\
        [--servo identified|robot] [--plant FILE] [--tie-backward] [--fit-backward]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import numpy as np
import yaml
from report import emit  # bench/report.py (this folder is on sys.path)
from scipy.spatial.transform import Rotation

from snake_bringup.identification.floor import CRAWLS
from snake_bringup.identification.poses import crawl_recording
from snake_dynamics.ground import Ground
from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import ServoModel, ServoParams
from snake_dynamics.sim.floor_identification import fit_ground, predict_crawl
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
        "--plant", type=Path, help="start from this plant file's servo and floor (its truth)"
    )
    parser.add_argument("--output", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    config = robot_config(args.robot)
    model = SnakeModel.from_yaml(config)
    body = dataclasses.replace(model, gravity=np.zeros(3))  # as snake identify's floor stage
    names = model.joint_names
    servo_file = args.folder / "robot_identified.yaml" if args.servo == "identified" else config
    servo = ServoModel.from_yaml(servo_file, names)
    start = model.ground or Ground()
    source = str(servo_file)
    if args.plant is not None:
        servo, start = plant_truth(args.plant, args.folder, names)
        source = f"{args.plant} (the folder's dead time)"
    if args.tie_backward:
        start = dataclasses.replace(start, mu_backward=None)
    takes = [crawl_recording(args.folder / f"{label}_bag", names).recording for label, *_ in CRAWLS]
    check = crawl_recording(args.folder / "floor_validation_bag", names).recording
    truth = {}
    labels = [label for label, *_ in CRAWLS] + ["floor_validation"]
    for label, take in zip(labels, [*takes, check], strict=True):
        xy = predict_crawl(body, servo, start, take).xy
        truth[label] = {
            "path_rms_mm": round(_rms(xy - take.xy) * 1e3, 2),
            "aligned_path_rms_mm": round(_rms(_aligned(xy, take.xy) - take.xy) * 1e3, 2),
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


def plant_truth(plant: Path, folder: Path, names: list[str]) -> tuple[ServoModel, Ground]:
    """A plant file's servo for the config's body (torques / mass_scale) with the folder's
    identified dead time, and its floor (over :class:`Ground`'s defaults, as the plant)."""
    doc = yaml.safe_load(plant.read_text())
    scale = float(doc.get("mass_scale", 1.0))
    drawn = dict(doc["servo"]["defaults"])
    for name in ("stiffness", "damping", "stall_torque"):
        drawn[name] /= scale
    fit = json.loads((folder / "fit.json").read_text())
    drawn["dead_time"] = fit["params"]["dead_time"]
    return ServoModel.uniform(ServoParams(**drawn), len(names)), Ground.from_dict(doc["ground"])


def _rms(error: np.ndarray) -> float:
    """RMS of the distances of (k, 2) position errors [m]."""
    return float(np.sqrt(np.mean(np.sum(np.square(error), axis=1))))


def _aligned(predicted: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """The predicted path moved by the rigid motion in the plane that brings it closest to
    the measured one in the least-squares sense (scipy's ``Rotation.align_vectors``)."""
    p0, m0 = predicted.mean(axis=0), measured.mean(axis=0)
    pad = np.zeros((len(predicted), 1))
    rotation, _ = Rotation.align_vectors(
        np.hstack([measured - m0, pad]), np.hstack([predicted - p0, pad])
    )
    moved: np.ndarray = rotation.apply(np.hstack([predicted - p0, pad]))[:, :2] + m0
    return moved


if __name__ == "__main__":
    main()
