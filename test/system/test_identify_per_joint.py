"""Per-joint servo identification (snake_dynamics/sim/identification.py,
``fit_servo_per_joint``, eq. 470) on a plant that is not the model: the MuJoCo robot of
config/plant_mujoco.yaml, every effect at its default (each joint's servo spread, backlash,
gear friction, rotor inertia, battery, brackets), held by its tail and driven by the
experiment's pulses in-process; its servo law is the reference."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from snake_bringup.plant_bridge import build_plant
from snake_dynamics.robot import Robot
from snake_dynamics.servo import NOMINAL, ServoModel
from snake_dynamics.sim import PulseMap
from snake_dynamics.sim.identification import (
    PER_JOINT,
    SEPARATED,
    Excitation,
    Recording,
    fit_servo,
    fit_servo_per_joint,
)
from snake_ros.paths import robot_config

#: The command period [s] (the driver's 50 Hz) and where a command falls in a pulse period.
PERIOD, PHASE = 0.02, 0.0073
#: A pulse's width at the range's centre [s]: the servo reads its target at the pulse's end.
PULSE = 0.0015


def _width(pulse: PulseMap, q: float) -> float:
    """The pulse [us] that carries joint angle q [rad] (PulseMap.target's inverse)."""
    centre = 0.5 * (pulse.pulse_min_us + pulse.pulse_max_us)
    span = pulse.pulse_max_us - pulse.pulse_min_us
    return centre + (pulse.direction * q + pulse.zero_offset) * span / pulse.travel


def held_mujoco_recording(tmp_path: Path) -> tuple[Recording, Robot, ServoModel, float]:
    """The experiment on the MuJoCo plant held by its tail: a command every 20 ms, carried by
    the next pulse; the shafts measured at each command (no pot noise: the plant's servo law
    against the model's, not the pots). Returns the recording, the robot and the plant's
    truth: each joint's servo and the mass scale."""
    robot = Robot.load(robot_config("robot_table"))
    held = tmp_path / "plant_held.yaml"
    base = str(robot_config("plant_mujoco").resolve())
    held.write_text(yaml.safe_dump({"base": base, "ground": None, "pose_sensor": None}))
    plant = build_plant(robot, held)
    model = plant.model
    exp = Excitation.within(model.joint_limits[:, 0], model.joint_limits[:, 1])
    widths, ages = np.zeros(16), np.full(16, math.inf)
    t, reference, measured = [], [], []
    for k in range(math.ceil((exp.duration + 1.0) / PERIOD)):
        now = PERIOD * k + PHASE
        q = exp.evaluate(now).q if now < exp.duration else np.zeros(model.n_joints)
        plant.advance(now)
        t.append(now)
        reference.append(q)
        measured.append(plant.shaft.copy())
        plant.advance(PERIOD * (k + 1) + PULSE)
        for j, pulse in enumerate(plant.pulses):
            widths[pulse.channel], ages[pulse.channel] = _width(pulse, float(q[j])), 0.0
        plant.take_pulses(plant.time, list(widths), list(ages))
    rec = Recording(np.array(t), np.array(reference), np.array(measured), tuple(model.joint_names))
    law: ServoModel = getattr(plant, "servo")  # noqa: B009 - the MuJoCo plant's spread
    return rec, robot, law, plant.params.mass_scale


@pytest.mark.slow
def test_each_joint_s_stiffness_and_stall_torque_within_15_percent_of_the_mujoco_plant(
    tmp_path: Path,
) -> None:
    """The per-joint fit finds each joint's K and T_s within 15 % of the MuJoCo plant's
    servo law (torques relative to the config's body: the plant's over its mass scale),
    where one servo for all joints misses the spread's outliers; its parameters with a
    standard error above 10 % are the ones it names as not separated."""
    rec, robot, plant_servo, scale = held_mujoco_recording(tmp_path)
    model = dataclasses.replace(robot.model, gravity=np.zeros(3), base="fixed", ground=None)
    shared = fit_servo(model, rec, NOMINAL)
    fit = fit_servo_per_joint(model, rec, shared.params)
    errors = {}
    for k, (name, found) in enumerate(zip(fit.joint_names, fit.servo.joints, strict=True)):
        law = plant_servo.joints[k]
        for key in ("stiffness", "stall_torque"):
            errors[name, key] = getattr(found, key) / (getattr(law, key) / scale) - 1.0
    print(
        {"shared": dataclasses.asdict(shared.params), "evaluations": fit.evaluations},
        {k: round(v, 3) for k, v in errors.items()},
        [(dataclasses.asdict(p), e) for p, e in zip(fit.servo.joints, fit.stderr, strict=True)],
        fit.unseparated,
    )
    bad = {k: round(v, 3) for k, v in errors.items() if abs(v) > 0.15}
    assert not bad
    for name, key in fit.unseparated:
        k = fit.joint_names.index(name)
        assert getattr(fit.servo.joints[k], key) == getattr(shared.params, key)
    for name, params, err in zip(fit.joint_names, fit.servo.joints, fit.stderr, strict=True):
        assert set(err) == set(PER_JOINT)
        for key in PER_JOINT:
            if (name, key) not in fit.unseparated:
                assert 0.0 < err[key] <= SEPARATED * getattr(params, key), (name, key)


needs_avr = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("avr-gcc", "simavr")), reason="needs gcc-avr and simavr"
)


@pytest.mark.simavr
@needs_avr
def test_identify_on_the_mujoco_robot_predicts_two_held_out_crawls(tmp_path: Path) -> None:
    """``snake identify --emulate --plant plant_mujoco`` through the firmware ELF, every
    effect at its default: each joint's stiffness and stall torque within 15 % of the
    plant's servo law (over its mass scale), and the two held-out 15 s crawls predicted with
    the identified overlay within 2 deg RMS on the joints, 10 % on the travel and 2 cm RMS
    on the path (after the best rigid motion in the plane, eq. 248)."""
    out = tmp_path / "identify"
    command = ["identify", "--emulate", "--plant", "plant_mujoco", "-o", str(out), "--no-plots"]
    done = subprocess.run(
        [sys.executable, "-m", "snake_bringup.cli", *command, "-q"],
        capture_output=True,
        text=True,
        timeout=3000,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    fit = json.loads((out / "fit.json").read_text())
    truth = build_plant(Robot.load(robot_config("robot_table")), robot_config("plant_mujoco"))
    law: ServoModel = getattr(truth, "servo")  # noqa: B009 - the MuJoCo plant's spread
    scale = truth.params.mass_scale
    errors = {
        (name, key): fit["per_joint"][name]["params"][key] / (getattr(p, key) / scale) - 1.0
        for name, p in zip(truth.model.joint_names, law.joints, strict=True)
        for key in ("stiffness", "stall_torque")
    }
    held = fit["held_out"]
    print(json.dumps({"errors": {str(k): v for k, v in errors.items()}, "held_out": held}))
    assert not {k: v for k, v in errors.items() if abs(v) > 0.15}
    assert len(held) == 2 and "## Held-out crawls" in done.stdout
    for label, row in held.items():
        got, measured = row["identified"], row["measured_travel"]
        assert math.degrees(got["joint_rms"]) <= 2.0, label
        assert got["travel"] == pytest.approx(measured, rel=0.10), label
        assert got["path_rms"] <= 0.02, label
        assert {"config", "identified", "plant truth"} <= set(row), label
