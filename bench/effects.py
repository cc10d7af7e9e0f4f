"""Which effect costs what: the MFM prediction against the MuJoCo robot with each effect the
model leaves out on alone, then all together, before and after identification; JSON on
stdout and a Markdown table on stderr.

The robot is the demo's (``robot_table`` on ``config/plant_mujoco.yaml``: its servos, pots
and table, on MuJoCo). Each variant starts from every effect off (``NO_EFFECTS``: MuJoCo's
contact, not the model's, is then all that differs from the MFM plant) and turns one effect
on at its default (snake_dynamics/sim/mujoco_plant/params.py); ``bracket`` brings the
armature it needs, ``backlash`` the bracket and armature; ``all`` is config/plant_mujoco.yaml
as it is. No firmware: the plant is driven from the pulses directly, as the plant tests do,
each pulse ending ``COMMAND_TO_PULSE_END`` after the 50 Hz command it carries (eq. 210's
mean), the pots read at each command and the marker's true pose at 100 Hz.

Per variant, as ``snake identify`` does (eqs. 207-209, 245): the servo experiment on the
robot held by its tail, one servo fitted for every joint (``fit_servo``); the two crawls of
``snake identify``'s floor stage on the table, the floor's two coefficients fitted with that
servo (``fit_ground``); then the held-out crawl (the floor stage's validation serpenoid,
never fitted) predicted with the robot config (before) and with the fitted servo and floor
(after): the joints' RMS error, the travel predicted and measured, the path's RMS error.

    python bench/effects.py [--quick] [--no-fit] [--effects contact backlash ...]
        [--output bench/results/effects.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import platform
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from report import emit  # bench/report.py (this folder is on sys.path)

from snake_bringup.identification.floor import CRAWLS, FLOOR_VALIDATION, crawl
from snake_bringup.identification.poses import heading
from snake_bringup.plant_bridge import build_plant
from snake_driver.calibration import servos_of
from snake_dynamics.gaits import Gait
from snake_dynamics.ground import Ground
from snake_dynamics.robot import Robot
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim import Plant, PlantParams, load_plant, make_plant
from snake_dynamics.sim.floor_identification import PathRecording, fit_ground, predict_crawl
from snake_dynamics.sim.identification import (
    COMMAND_TO_PULSE_END,
    PULSE_PERIOD,
    Excitation,
    Recording,
    fit_servo,
    rms_error,
)
from snake_dynamics.sim.mujoco_plant import NO_EFFECTS, Effects
from snake_ros.paths import load_robot, robot_config

FloatArray = NDArray[np.float64]

#: The robot and its plant: the demo's.
ROBOT, PLANT = "robot_table", "plant_mujoco"
#: Each variant: the effects on top of every effect off (None: the plant file's, all on).
_ON = Effects()
VARIANTS: dict[str, dict[str, Any] | None] = {
    "contact": {},
    "servo_spread": {"servo_spread": _ON.servo_spread},
    "frictionloss": {"frictionloss": _ON.frictionloss},
    "armature": {"armature": _ON.armature},
    "battery": {"battery": _ON.battery},
    "bracket": {"bracket": _ON.bracket, "armature": _ON.armature},
    "backlash": {"backlash": _ON.backlash, "bracket": _ON.bracket, "armature": _ON.armature},
    "all": None,
}
#: Run lengths [s]: (servo experiment's chirp, each fitted crawl, the held-out crawl). The
#: full run: ``snake identify``'s crawls and a 15 s held-out crawl, its experiment's chirp
#: halved, its step levels from 0.12 rad up and its first five rests (9.6 s of its 16.5 s:
#: eight variants' servo fits in minutes, not an hour, on a shared 2-core machine).
FULL = (2.5, 3.0, 15.0)
QUICK = (1.5, 2.0, 3.0)
#: The pose samples' period [s] (the pose sensor's 100 Hz).
POSE_PERIOD = 0.01


def variant_effects(name: str, plant_effects: Effects) -> Effects:
    """The effects of variant ``name`` (:data:`VARIANTS`): ``plant_effects`` for ``all``,
    else every effect off but the variant's own (at the plant file's values).

    Raises:
        KeyError: an unknown variant.
    """
    on = VARIANTS[name]
    if on is None:
        return plant_effects
    return dataclasses.replace(
        NO_EFFECTS, seed=plant_effects.seed, **{k: getattr(plant_effects, k) for k in on}
    )


def experiment(limits: FloatArray, chirp_time: float) -> Excitation:
    """``snake identify``'s servo experiment within the joints' limits (eq. 207), its chirp
    ``chirp_time`` long; shorter than 5 s, also without the smallest step levels (from the
    fifth on: 0.12 rad and up, where the torque-speed line shows) and with five rests."""
    base = Excitation.within(limits[:, 0], limits[:, 1])
    if chirp_time >= base.chirp_time:
        return base
    return dataclasses.replace(
        base, levels=base.levels[4:], chirp_time=chirp_time, rests=base.rests[:5]
    )


@dataclasses.dataclass(frozen=True)
class Take:
    """What a run of the plant left: the commands at 50 Hz, the pots' angles then, and on
    the table the marker's true pose at 100 Hz."""

    t: FloatArray
    reference: FloatArray
    measured: FloatArray
    pose_t: FloatArray
    xy: FloatArray
    yaw: FloatArray
    orientation: FloatArray | None

    def path(self) -> PathRecording:
        """The take as the floor fit reads it."""
        return PathRecording(
            self.t, self.reference, self.pose_t, self.xy, self.yaw, self.orientation, self.measured
        )


def play(
    plant: Plant, pulse_us: Sequence[Callable[[float], int]], gait: Gait, duration: float
) -> Take:
    """Drive ``plant`` from rest with ``gait`` for ``duration`` [s]: a command every
    :data:`PULSE_PERIOD` from t = 0, each joint's pulse carrying it ending
    :data:`COMMAND_TO_PULSE_END` later (eq. 210's mean), one plant step a millisecond.
    Channels are the plant's :attr:`Plant.pulses`; ``pulse_us[j]`` is joint j's firmware
    calibration (angle [rad] -> width [us])."""
    channels = [p.channel for p in plant.pulses]
    widths, ages = [0.0] * 16, [math.inf] * 16
    period_ms, delay_ms = round(PULSE_PERIOD * 1e3), COMMAND_TO_PULSE_END * 1e3
    ticks = round(duration * 1e3)
    commands = [gait(k * PULSE_PERIOD).q for k in range(ticks // period_ms + 1)]
    t_cmd, ref, meas, pose_t, xy, yaw = [], [], [], [], [], []
    orientation = None
    free = plant.base_state is not None
    for ms in range(ticks + 1):
        t = ms * 1e-3
        if ms:
            k = math.floor((ms - delay_ms) / period_ms)
            if k >= 0:
                for j, channel in enumerate(channels):
                    widths[channel] = float(pulse_us[j](float(commands[k][j])))
                    ages[channel] = t - (k * PULSE_PERIOD + COMMAND_TO_PULSE_END)
            plant.step(t, widths, ages)
        if ms % period_ms == 0:
            t_cmd.append(t)
            ref.append(commands[ms // period_ms])
            meas.append(plant.shaft.copy())
        if free and ms % round(POSE_PERIOD * 1e3) == 0:
            centre, quaternion = plant.marker_pose()
            orientation = quaternion if orientation is None else orientation
            pose_t.append(t)
            xy.append(centre[:2])
            yaw.append(heading(quaternion.tolist()))
    return Take(
        np.array(t_cmd),
        np.array(ref),
        np.array(meas),
        np.array(pose_t),
        np.array(xy).reshape(-1, 2),
        np.array(yaw),
        orientation,
    )


def numbers(robot: Robot, servo: ServoModel, ground: Ground, take: Take) -> dict[str, float]:
    """The held-out crawl predicted with ``servo`` on ``ground``: the joints' RMS error over
    every joint [deg] (eq. 209's residuals), the marker's travel predicted and measured [m],
    and its path's RMS error (eq. 244) [cm]."""
    recording = take.path()
    predicted = predict_crawl(robot.model, servo, ground, recording)
    joints = rms_error(predicted.q, take.measured)
    error = np.hypot(*(recording.xy - predicted.xy).T)
    return {
        "joints_rms_deg": round(math.degrees(float(np.sqrt(np.mean(joints**2)))), 2),
        "travel_predicted_m": round(float(np.hypot(*(predicted.xy[-1] - predicted.xy[0]))), 3),
        "travel_measured_m": round(float(np.hypot(*(take.xy[-1] - take.xy[0]))), 3),
        "path_rms_cm": round(100.0 * float(np.sqrt(np.mean(error**2))), 2),
    }


def one(
    robot: Robot,
    params: PlantParams,
    pulses: Sequence[Any],
    calibration: Sequence[Callable[[float], int]],
    name: str,
    lengths: tuple[float, float, float],
    fit: bool = True,
) -> dict[str, Any]:
    """Variant ``name``: identify on its plant (unless not ``fit``), then predict the
    held-out crawl before and after (see the module's docstring)."""
    start = time.perf_counter()
    assert params.effects is not None and params.ground is not None
    effects = variant_effects(name, params.effects)
    model = robot.model
    table = dataclasses.replace(params, effects=effects)
    config_ground = robot.ground if robot.ground is not None else Ground()
    chirp, crawl_time, held_out = lengths
    _, gait, gait_params = FLOOR_VALIDATION
    check = play(
        make_plant(model, pulses, table),
        calibration,
        crawl(model, gait, gait_params, held_out),
        held_out,
    )
    result: dict[str, Any] = {
        "variant": name,
        "before": numbers(robot, robot.servo, config_ground, check),
    }
    if not fit:
        return result | {"wall_s": round(time.perf_counter() - start, 1)}
    limits = np.asarray(model.joint_limits, dtype=np.float64)
    held = dataclasses.replace(params, effects=effects, ground=None, pose_sensor=None)
    excitation = experiment(limits, chirp)
    take = play(make_plant(model, pulses, held), calibration, excitation, excitation.duration)
    body = dataclasses.replace(model, gravity=np.zeros(3), base="fixed", ground=None)
    servo_fit = fit_servo(
        body,
        Recording(take.t, take.reference, take.measured, robot.joint_names),
        robot.servo.joints[0],  # the fit's start: the config's servo (snake identify's)
    )
    servo = ServoModel.uniform(servo_fit.params, model.n_joints, "identified")
    crawls = [
        play(
            make_plant(model, pulses, table),
            calibration,
            crawl(model, gait, gait_params, crawl_time),
            crawl_time,
        ).path()
        for _, gait, gait_params in CRAWLS
    ]
    floor = fit_ground(model, servo, crawls, config_ground).ground
    return result | {
        "after": numbers(robot, servo, floor, check),
        "servo_fit": {
            k: round(float(getattr(servo_fit.params, k)), 4)
            for k in ("dead_time", "deadband", "stiffness", "damping", "stall_torque")
        }
        | {"no_load_speed": round(float(servo_fit.params.no_load_speed), 3)},
        "floor_fit": {"mu_along": round(floor.mu_along, 4), "mu_across": round(floor.mu_across, 4)},
        "wall_s": round(time.perf_counter() - start, 1),
    }


def table(runs: Sequence[Mapping[str, Any]]) -> str:
    """The runs as bench/README.md's Markdown table."""

    def cells(n: Mapping[str, float]) -> str:
        return (
            f"{n['joints_rms_deg']:.2f} | {n['travel_predicted_m']:.3f} / "
            f"{n['travel_measured_m']:.3f} | {n['path_rms_cm']:.1f}"
        )

    lines = [
        "| effect on | before: joints RMS [deg] | travel pred. / meas. [m] | path RMS [cm] "
        "| after: joints RMS [deg] | travel pred. / meas. [m] | path RMS [cm] |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for run in runs:
        after = cells(run["after"]) if "after" in run else "n/a | n/a | n/a"
        lines.append(f"| {run['variant']} | {cells(run['before'])} | {after} |")
    return "\n".join(lines)


def run(
    names: Sequence[str], lengths: tuple[float, float, float], fit: bool = True
) -> list[dict[str, Any]]:
    """Every variant of ``names`` on the demo's robot and plant, in order (without ``fit``:
    the held-out crawl predicted with the robot config alone)."""
    robot = load_robot(ROBOT)
    plant_file = robot_config(PLANT)
    params = load_plant(plant_file, robot.joint_names)
    pulses = build_plant(robot, plant_file).pulses
    channels = servos_of(robot).by_joint()
    calibration = [channels[name].pulse_us for name in robot.joint_names]
    return [one(robot, params, pulses, calibration, name, lengths, fit) for name in names]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--effects",
        nargs="+",
        choices=list(VARIANTS),
        default=list(VARIANTS),
        help="the variants (default: every one, in this order)",
    )
    parser.add_argument("--quick", action="store_true", help="short runs (a smoke test)")
    parser.add_argument(
        "--no-fit", action="store_true", help="no identification: the 'before' columns only"
    )
    parser.add_argument("--output", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    lengths = QUICK if args.quick else FULL
    start = time.perf_counter()
    runs = run(args.effects, lengths, fit=not args.no_fit)
    emit(
        {
            "benchmark": "the MFM prediction against the MuJoCo robot, effect by effect",
            "machine": platform.processor() or platform.machine(),
            "robot": ROBOT,
            "plant": PLANT,
            "lengths_s": dict(zip(("chirp", "crawl", "held_out"), lengths, strict=True)),
            "runs": runs,
            "wall_s": round(time.perf_counter() - start, 1),
        },
        args.output,
    )
    print(table(runs), file=sys.stderr)


if __name__ == "__main__":
    main()
