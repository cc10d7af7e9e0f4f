"""What an identification leaves: the fitted servo as a robot config overlay
(``robot_identified.yaml``), the Markdown report (fitted values with standard errors, the
validation gait's prediction error with the config's servo model and with the fitted one)
and ``fit.json``."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from numpy.typing import NDArray

from snake_dynamics.ground import Ground
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim.identification import (
    FITTED,
    PER_JOINT,
    SEPARATED,
    PerJointFit,
    ServoFit,
)

#: Units of the fitted parameters.
UNITS = {
    "dead_time": "s",
    "deadband": "rad",
    "stiffness": "N m/rad",
    "damping": "N m s/rad",
    "stall_torque": "N m",
    "no_load_speed": "rad/s",
}


def overall(rms: NDArray[np.float64]) -> float:
    """One RMS over every joint from the per-joint RMS errors [rad]."""
    return float(np.sqrt(np.mean(np.square(rms))))


def _short(value: object) -> object:
    """A float to 6 significant digits (the overlay's precision); anything else as is."""
    return float(f"{value:.6g}") if isinstance(value, float) else value


def write_overlay(
    path: Path,
    robot: Path,
    fit: ServoFit,
    before: NDArray[np.float64],
    after: NDArray[np.float64],
    ground: Ground | None = None,
    per_joint: PerJointFit | None = None,
) -> Path:
    """The fitted servo (and floor) as a robot config overlay on ``robot`` (``base:``).

    Args:
        path: the overlay to write.
        robot: the robot config identified.
        fit: the fit.
        before: the validation gait's per-joint RMS error with the config's servo [rad].
        after: the same with the fitted servo [rad].
        ground: the identified floor, written as ``model: ground:`` (None: none): a floating
            use of the overlay (``snake simulate --ground``, a floating base) crawls on it.
        per_joint: each joint's own servo (``servo: joints:``, over the shared fit's
            ``defaults:``); None: the shared servo at every joint.
    """
    servo = {k: _short(v) for k, v in asdict(fit.params).items()}
    joints: dict[str, dict[str, object]] = {}
    which = "the fitted\n# servo at every joint"
    if per_joint is not None:
        which = "each joint's own\n# K, D, T_s and w_0 (eq. 470) over the shared servo"
        joints = {
            name: {k: _short(getattr(params, k)) for k in PER_JOINT}
            for name, params in zip(per_joint.joint_names, per_joint.servo.joints, strict=True)
        }
    header = (
        f"# Servo model identified by `snake identify` (docs/mfm.md, eqs. 207-210): {which}"
        f", over {robot.name}. Validation gait RMS error, all joints:\n"
        f"# {math.degrees(overall(before)):.3f} deg with the config's servo model, "
        f"{math.degrees(overall(after)):.3f} deg with this one.\n"
        "# Use it as any robot config: --robot <this file>, robot_config:=<this file>.\n"
    )
    doc: dict[str, object] = {"base": str(robot), "servo": {"defaults": servo, "joints": joints}}
    if ground is not None:
        header += "# model: ground: the floor identified by its crawls (eqs. 243-245).\n"
        doc["model"] = {"ground": {k: _short(v) for k, v in asdict(ground).items()}}
    path.write_text(header + yaml.safe_dump(doc, sort_keys=False))
    return path


def report_text(
    fit: ServoFit,
    config_servo: ServoModel,
    names: Sequence[str],
    before: NDArray[np.float64],
    after: NDArray[np.float64],
    overlay: Path,
    per_joint: PerJointFit | None = None,
) -> str:
    """The report (Markdown): fitted values (each joint's too, with ``per_joint``),
    validation errors, where the overlay is."""
    start = config_servo.joints[0]
    lines = [
        "# Servo identification",
        "",
        f"Before: {config_servo.describe()}",
        "",
        "| parameter | fitted | std. error | config | unit |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for name in FITTED:
        value, err = getattr(fit.params, name), fit.stderr[name]
        lines.append(
            f"| {name} | {value:.4g} | {err:.2g} | {getattr(start, name):.4g} | {UNITS[name]} |"
        )
    lines += [
        "",
        f"Fit: {fit.evaluations} predictions, {fit.samples} residuals, RMS "
        f"{math.degrees(overall(fit.rms)):.3f} deg (each joint's constant pot offset removed).",
        "Torques are relative to the robot config's body inertia (no torque sensor).",
        "",
        *([] if per_joint is None else per_joint_lines(per_joint, fit)),
        "Validation gait (not used by the fit), RMS prediction error [deg]:",
        "",
        "| joint | config servo | identified | ratio |",
        "| --- | ---: | ---: | ---: |",
    ]
    for k, name in enumerate(names):
        ratio = before[k] / after[k] if after[k] > 0 else math.inf
        lines.append(
            f"| {name} | {math.degrees(before[k]):.3f} | {math.degrees(after[k]):.3f} "
            f"| {ratio:.1f} |"
        )
    total_b, total_a = overall(before), overall(after)
    lines.append(
        f"| all | {math.degrees(total_b):.3f} | {math.degrees(total_a):.3f} "
        f"| {total_b / total_a if total_a > 0 else math.inf:.1f} |"
    )
    lines += ["", f"Overlay: {overlay} (use it with --robot)", ""]
    return "\n".join(lines)


def per_joint_lines(per_joint: PerJointFit, fit: ServoFit) -> list[str]:
    """The report's table of each joint's servo (value +- standard error), a line for each
    parameter the experiment did not separate, and a blank line."""
    heads = " | ".join(f"{k} [{UNITS[k]}]" for k in PER_JOINT)
    lines = [
        f"Each joint's servo (eq. 470; dead time and deadband shared), value +- std. error, "
        f"{per_joint.evaluations} predictions, RMS "
        f"{math.degrees(overall(per_joint.rms)):.3f} deg:",
        "",
        f"| joint | {heads} |",
        "| --- |" + " ---: |" * len(PER_JOINT),
    ]
    for name, params, err in zip(
        per_joint.joint_names, per_joint.servo.joints, per_joint.stderr, strict=True
    ):
        cells = " | ".join(f"{getattr(params, k):.4g} +- {err[k]:.2g}" for k in PER_JOINT)
        lines.append(f"| {name} | {cells} |")
    lines.append("")
    for name, key in per_joint.unseparated:
        lines.append(
            f"- {name} {key}: not separated by the experiment (std. error above "
            f"{SEPARATED:.0%}): the shared {getattr(fit.params, key):.4g} {UNITS[key]}"
        )
    return [*lines, ""] if per_joint.unseparated else lines


def write_fit(
    path: Path,
    robot: Path,
    fit: ServoFit,
    config_servo: ServoModel,
    before: NDArray[np.float64],
    after: NDArray[np.float64],
    floor: dict[str, Any] | None = None,
    per_joint: PerJointFit | None = None,
    held_out: dict[str, object] | None = None,
) -> None:
    """``fit.json``: the fitted parameters, their standard errors, the fit's and the
    validation's RMS errors [rad], the config's servo model; ``per_joint``: each joint's
    servo and standard errors, and the parameters not separated; ``floor``: the floor
    stage's entry (:func:`.floor.fit_json`), if it ran; ``held_out``: the held-out crawls'
    predictions (:func:`.heldout.judged_json`)."""
    joints = (
        {}
        if per_joint is None
        else {
            "per_joint": {
                name: {"params": asdict(params), "stderr": err}
                for name, params, err in zip(
                    per_joint.joint_names, per_joint.servo.joints, per_joint.stderr, strict=True
                )
            },
            "unseparated": [list(x) for x in per_joint.unseparated],
            "per_joint_evaluations": per_joint.evaluations,
        }
    )
    path.write_text(
        json.dumps(
            {
                "robot": str(robot),
                "params": asdict(fit.params),
                "stderr": fit.stderr,
                "dead_time_after_pulse": fit.dead_time_after_pulse,
                "fit_rms_rad": fit.rms.tolist(),
                "validation_rms_before_rad": before.tolist(),
                "validation_rms_after_rad": after.tolist(),
                "config_servo": config_servo.describe(),
                "evaluations": fit.evaluations,
                **joints,
                **({} if floor is None else {"floor": floor}),
                **({} if held_out is None else {"held_out": held_out}),
            },
            indent=2,
        )
    )
