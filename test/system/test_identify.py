"""Servo identification (snake_dynamics/sim/identification.py, ``snake identify``): the experiment
within the joint limits, the fit on a recording the model made itself, the bags, one-line
errors, and identification of a randomly drawn plant through the real firmware ELF in simavr."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import yaml
from support.cli import ROOT, snake
from support.load import BusyCores

from snake_bringup.identification.experiment import REST_S, IdentifyError, Take
from snake_bringup.identification.floor import CRAWLS, FLOOR_VALIDATION
from snake_bringup.identification.heldout import HELD_OUT, HELD_OUT_S
from snake_bringup.identification.poses import crawl_recording
from snake_bringup.identification.recording import read_recording, write_bag
from snake_bringup.plant_bridge import build_plant
from snake_driver.calibration import load_servo_map
from snake_driver.link import Measurement
from snake_driver.protocol import Counters, Flag
from snake_dynamics.errors import IdentificationError
from snake_dynamics.model import SnakeModel
from snake_dynamics.robot import Robot
from snake_dynamics.servo import NOMINAL, ServoModel, ServoParams
from snake_dynamics.sim import random_plant
from snake_dynamics.sim.floor_identification import aligned_path, predict_crawl
from snake_dynamics.sim.identification import (
    PULSE_PERIOD,
    Excitation,
    Recording,
    fit_servo,
    predict,
    rms_error,
    seen_from_the_command,
)
from snake_ros.paths import robot_config

ROBOT = robot_config("robot_feedback")


def test_the_experiment_steps_holds_and_chirps_within_the_limits() -> None:
    model = SnakeModel.from_yaml(ROBOT)
    low, high = model.joint_limits[:, 0], model.joint_limits[:, 1]
    exp = Excitation.within(low, high)
    t = np.arange(0.0, exp.duration + 0.5, 0.001)
    q = np.array([exp.evaluate(x).q for x in t])
    assert np.all(q >= 0.8 * low - 1e-12) and np.all(q <= 0.8 * high + 1e-12)
    assert np.abs(q).max() == pytest.approx(0.3)
    # neighbours bend opposite ways; every level is held, then the chirp, then rest
    assert np.all(q[:, 0] == -q[:, 1])
    held = np.array([exp.evaluate((i + 0.5) * exp.hold).q[0] for i in range(len(exp.levels))])
    assert held == pytest.approx(exp.levels)
    after = len(exp.levels) * exp.hold + exp.chirp_time
    rests = [exp.evaluate(after + (i + 0.5) * exp.rest_hold).q[0] for i in range(len(exp.rests))]
    assert rests == pytest.approx(exp.rests) and min(exp.rests) < 0.0 < max(exp.rests)
    assert np.all(q[t >= exp.duration] == 0.0)
    chirp = (t > len(exp.levels) * exp.hold) & (t < after)
    assert np.abs(q[chirp, 0]).max() == pytest.approx(exp.chirp_amplitude, rel=1e-3)
    # the rate is the derivative of the angle
    k = int(np.argmax(chirp)) + 1234
    assert exp.evaluate(t[k]).qd == pytest.approx((q[k + 1] - q[k - 1]) / 0.002, rel=1e-3)
    # narrow limits scale it down; limits that exclude the rest pose are refused
    small = Excitation.within(np.full(8, -0.2), np.full(8, 0.25))
    assert max(abs(x) for x in small.levels) == pytest.approx(0.16)
    assert max(abs(x) for x in small.rests) == pytest.approx(0.016)
    with pytest.raises(IdentificationError, match="contain 0"):
        Excitation.within(np.full(8, 0.1), np.full(8, 0.5))


def _synthetic(model: SnakeModel, servo: ServoParams) -> Recording:
    """The experiment as the model itself would record it: reference sampled every 20 ms,
    the prediction as measurement plus a pot offset per joint."""
    exp = Excitation.within(model.joint_limits[:, 0], model.joint_limits[:, 1])
    t = 0.0073 + np.arange(0.0, exp.duration + 1.0, 0.02)
    reference = np.array([exp.evaluate(x - 0.0073).q for x in t])
    rec = Recording(t, reference, np.zeros_like(reference), tuple(model.joint_names))
    measured = predict(model, servo, rec) + np.linspace(-0.01, 0.01, model.n_joints)
    return Recording(t, reference, measured, tuple(model.joint_names))


@pytest.mark.slow
def test_the_fit_recovers_the_servo_that_made_the_recording() -> None:
    """Noise-free data from the model itself, with a constant offset on every pot: from the
    nominal servo the fit finds the parameters that made it."""
    model = SnakeModel.from_yaml(ROBOT)
    true = ServoParams(0.024, 0.005, 8.0, 0.4, 0.8, 6.0)
    rec = _synthetic(model, true)
    before = rms_error(predict(model, NOMINAL, rec), rec.measured)
    assert np.all(before > np.radians(0.05))
    progress: list[tuple[int, float]] = []
    fit = fit_servo(model, rec, NOMINAL, progress=lambda k, rms: progress.append((k, rms)))
    for name in ("dead_time", "deadband", "stiffness", "damping", "stall_torque", "no_load_speed"):
        assert getattr(fit.params, name) == pytest.approx(getattr(true, name), rel=0.01), name
    assert np.all(fit.rms < np.radians(0.01))
    # one call per prediction, numbered 1..n (the Jacobian's run on threads, in any order)
    assert sorted(k for k, _ in progress) == list(range(1, fit.evaluations + 1))
    assert fit.dead_time_after_pulse == pytest.approx(fit.params.dead_time - 0.0115)  # (210)
    assert set(fit.stderr) == {f.name for f in dataclasses.fields(ServoParams)}
    assert all(0.0 <= e < 0.01 * getattr(fit.params, k) for k, e in fit.stderr.items())
    with pytest.raises(IdentificationError, match="finite torque-speed line"):
        fit_servo(model, rec, ServoParams.pd(10.0, 0.5))


def _measurement(stamp: float | None, pulses: int, angle: float, mcu_us: int = 0) -> Measurement:
    names = [f"joint_{k}" for k in range(1, 9)]
    return Measurement(
        stamp,
        mcu_us,
        dict.fromkeys(names, angle),
        dict.fromkeys(names, pulses),
        Flag(0),
        0,
        Counters(*([0] * len(dataclasses.fields(Counters)))),
    )


def test_bags_hold_targets_and_measurements_by_stamp(tmp_path: Path) -> None:
    """Reports are stamped on the robot's clock from the first mapped one on: here the host
    mapping stretches (an emulated robot falling behind, 30 ms of host time per 20 ms report)
    and the MCU's 32-bit clock wraps, and the recording keeps the MCU's 20 ms steps."""
    _, servos = load_servo_map(ROBOT)
    wrap = 1 << 32
    mcu = [wrap - 30_000 + 20_000 * k for k in range(7)]  # wraps between reports 1 and 2
    reports = [
        _measurement(None, 1500, 0.0, mcu[0] % wrap),  # before the clock mapping: not written
        _measurement(10.0, 0, 0.0, mcu[1] % wrap),  # a servo not driven yet: not written
        *(
            _measurement(10.0 + 0.03 * k, 1500 + 10 * k, 0.001 * k, mcu[k + 1] % wrap)
            for k in range(1, 6)
        ),
    ]
    take = Take([(10.0, dict.fromkeys(servos.joint_names, 0.0))], reports)
    assert write_bag(tmp_path / "bag", take, servos) == 5
    rec = read_recording(tmp_path / "bag", servos.joint_names)
    assert rec.t == pytest.approx(10.0 + 0.02 * np.arange(1, 6), abs=2e-9)  # integer ns
    # 10 us of the 2000 us / 180 deg pulse per sample
    assert rec.reference[:, 3] == pytest.approx(np.radians(0.9) * np.arange(1, 6))
    assert rec.measured[:, 7] == pytest.approx(0.001 * np.arange(1, 6))
    with pytest.raises(IdentifyError, match="not an identification bag"):
        read_recording(tmp_path / "nothing", servos.joint_names)


def _snake(*args: str) -> subprocess.CompletedProcess[str]:
    """``snake identify args...`` in this process's environment."""
    return snake("identify", *args, timeout=600, env=None)


def test_a_robot_without_feedback_is_refused_in_one_line(tmp_path: Path) -> None:
    done = _snake("--robot", "robot", "-o", str(tmp_path / "out"))
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "joint_1, joint_2" in done.stderr and "no feedback" in done.stderr
    done = _snake("--gait-param", "amplitude", "--emulate", "-o", str(tmp_path / "out"))
    assert done.returncode == 1 and "NAME=VALUE" in done.stderr
    assert not (tmp_path / "out").exists()


#: The held-out crawls' length in the run through the firmware [s]: bench/identify.py
#: judges on HELD_OUT_S (15 s); here 5 s (a 0.5 s ramp at either end) tells the identified
#: servos from the config's as well, and spares 2 x 10 s of real time and their predictions.
HELD_OUT_TEST_S = 5.0
#: ``snake identify`` (this checkout) with held-out crawls HELD_OUT_TEST_S long: the crawls'
#: player and the report read the length from their modules' HELD_OUT_S.
SHORT_HELD_OUT = (
    "import runpy\n"
    "from snake_bringup.identification import floor, heldout\n"
    f"assert floor.HELD_OUT_S == heldout.HELD_OUT_S == {HELD_OUT_S}, 'HELD_OUT_S moved'\n"
    f"floor.HELD_OUT_S = heldout.HELD_OUT_S = {HELD_OUT_TEST_S}\n"
    "runpy.run_module('snake_bringup.cli', run_name='__main__', alter_sys=True)\n"
)


needs_avr = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("avr-gcc", "simavr")), reason="needs gcc-avr and simavr"
)


@pytest.mark.simavr
@needs_avr
def test_identify_recovers_a_random_plant_and_floor_through_the_firmware_with_both_cores_busy(
    tmp_path: Path, busy_cores: BusyCores, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``snake identify --emulate`` on a plant drawn at random (seeded) within realistic
    ranges, lying on a floor drawn at random too: every servo parameter within 10 % of the
    plant's (torques relative to the config's body, i.e. divided by the plant's mass scale),
    the dead time within one telemetry period, and the validation gait's prediction error at
    least 3x smaller than with the nominal servo; then the floor stage: both friction
    coefficients within 10 % of the floor's, and the validation crawl's predicted travel
    within 5 % of the measured. Every take with both cores busy beside it, as an idle machine
    gets it (an idle run is the same check, 180 s more of the suite); what is left to
    compute on the bags after the last take, without (:func:`_identify_busy`). The emulated
    robot may fall behind real time, and the fit, on the robot's own clock, is as good (its
    report says how far behind). This plant's floor came within 1.1 % idle and 1.0 % busy
    (bench/README.md). The crawls' measured paths lie within twice the pose sensor's
    noise of the plant's own prediction (its true body, servos and floor), up to the start
    pose (eq. 248), and no pulse missed its compare match in simavr."""
    busy_cores(2)
    monkeypatch.setenv("SNAKE_ROBOT_PRIORITY", "normal")  # a robot that may fall behind
    doc = random_plant(np.random.default_rng(12), floor=True)  # the same servo as without
    servo, mass_scale = doc["servo"]["defaults"], doc["mass_scale"]
    plant = tmp_path / "plant.yaml"
    plant.write_text(yaml.safe_dump(doc))
    out = tmp_path / "identify"
    args = ["identify", "--emulate", "--plant", str(plant), "-o", str(out), "--no-plots"]
    command = [sys.executable, "-c", SHORT_HELD_OUT, *args, "--held-out"]
    done = _identify_busy(command, busy_cores, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert busy_cores.is_paused  # from the last take on
    fit = json.loads((out / "fit.json").read_text())
    found = fit["params"]
    print(json.dumps({"plant": servo, "mass_scale": mass_scale, "fit": found}, indent=1))
    # the fitted dead time counts from the command: less the mean wait for the next pulse
    # and the pulse (eq. 210), it is the plant's, plus the feedback filter and the sampling
    assert abs(fit["dead_time_after_pulse"] - servo["dead_time"]) < 0.020  # telemetry period
    body = {"stiffness", "damping", "stall_torque"}
    for name in ("deadband", "stiffness", "damping", "stall_torque", "no_load_speed"):
        expected = servo[name] / (mass_scale if name in body else 1.0)
        assert found[name] == pytest.approx(expected, rel=0.10), name
    before = math.sqrt(np.mean(np.square(fit["validation_rms_before_rad"])))
    after = math.sqrt(np.mean(np.square(fit["validation_rms_after_rad"])))
    assert before >= 3.0 * after
    overlay = yaml.safe_load((out / "robot_identified.yaml").read_text())
    assert overlay["servo"]["defaults"]["stiffness"] == pytest.approx(found["stiffness"], rel=1e-5)
    assert "robot_identified.yaml" in done.stdout and "| all |" in done.stdout
    assert "Emulated robot: PLANT end ticks=" in done.stdout and "max_behind_ms=" in done.stdout
    # the firmware gives a running pulse's new width at its end, as silicon's double-buffered
    # OCR does; written at once, simavr missed 5-9 matches in a servo stage
    assert re.findall(r"missed_compares=(\d+)", done.stdout) == ["0", "0"], done.stdout[-2000:]
    floor, table = fit["floor"], doc["ground"]
    print(json.dumps({"floor": table, "fit": floor["ground"], "check": floor["validation"]}))
    for name in ("mu_along", "mu_across"):
        assert floor["ground"][name] == pytest.approx(table[name], rel=0.10), name
    assert floor["ground"]["width"] == table["width"]  # the body's, not fitted
    measured = floor["validation"]["travel_measured_m"]
    assert floor["validation"]["after"]["travel"] == pytest.approx(measured, rel=0.05)
    assert "## Floor identification" in done.stdout
    # the held-out crawls, gaits neither fit saw: the identified servos and floor predict the
    # joints better than the datasheet's, and the plant's truth is there for reference
    held = fit["held_out"]
    print(json.dumps(held))
    assert set(held) == {label for label, *_ in HELD_OUT} and "## Held-out crawls" in done.stdout
    # as long as this test asked: each bag holds the crawl and the rest after it, give or
    # take a report at either end (3.84-4.12 s for a 3 s crawl)
    assert f"Gaits neither fit saw, {HELD_OUT_TEST_S:g} s each" in done.stdout
    names = SnakeModel.from_yaml(ROBOT).joint_names
    for label, row in held.items():
        t = crawl_recording(out / f"{label}_bag", names).recording.t
        assert t[-1] - t[0] == pytest.approx(HELD_OUT_TEST_S + REST_S, abs=0.3), label
        assert set(row) == {"measured_travel", "config", "identified", "plant truth"}, label
        assert row["identified"]["joint_rms"] < row["config"]["joint_rms"], label
    paths = truth_paths(out, plant)
    print(json.dumps(paths))
    for label, (rms, noise) in paths.items():
        assert rms <= TRUTH_PATH_NOISE * noise, label


#: The end of the progress line (``[identify] ...`` on stderr) of the run's last take, the
#: second held-out crawl's: after it ``snake identify`` computes on the bags alone.
LAST_TAKE = f"-> {HELD_OUT[-1][0]}_bag"


def _identify_busy(
    command: list[str], busy: BusyCores, tmp_path: Path, timeout: float = 600.0
) -> subprocess.CompletedProcess[str]:
    """``snake identify`` (``command``) run to its end, at most ``timeout`` [s], with the
    busy cores paused once its last take is written (LAST_TAKE): every take shares the
    machine, the fits and predictions after them do not (their results are the same either
    way; beside the busy loops their threads would get half the cores). Its stdout and
    stderr captured."""
    stdout = tmp_path / "identify.stdout"
    lines: list[str] = []
    with stdout.open("w") as sink:
        child = subprocess.Popen(command, cwd=ROOT, stdout=sink, stderr=subprocess.PIPE, text=True)
        timer = threading.Timer(timeout, child.kill)
        timer.start()
        try:
            assert child.stderr is not None
            for line in child.stderr:
                lines.append(line)
                if line.rstrip().endswith(LAST_TAKE):
                    busy.pause()
            child.wait()
        finally:
            timer.cancel()
    stderr = "".join(lines) + (f"killed after {timeout} s\n" if child.returncode < 0 else "")
    return subprocess.CompletedProcess(command, child.returncode, stdout.read_text(), stderr)


#: How far the measured path may lie from the plant's own prediction, in multiples of the
#: pose sensor's noise in the plane (eq. 248). The noise alone gives 1, and a prediction
#: whose own error is as large as the noise sqrt(2) = 1.41. Measured 1.03-1.29 over these
#: crawls in two idle runs and 1.08-1.37 in two with both cores busy, since the firmware
#: updates its outputs just before each pulse slot (bench/README.md); 2 leaves a margin.
TRUTH_PATH_NOISE = 2.0


def truth_paths(out: Path, plant: Path) -> dict[str, tuple[float, float]]:
    """Each crawl of a ``snake identify`` folder predicted with its plant's truth (its body,
    servos and floor; the dead time seen from the command, eq. 210), against the measured
    path after the best rigid motion in the plane (eq. 248: the start pose the first noisy
    pose sets): label -> (that RMS, the sensor's noise RMS in the plane) [m]."""
    table = robot_config("robot_table")  # what identify predicts a plant on a floor with
    truth = build_plant(Robot.load(table), plant)
    sensor, ground = truth.params.pose_sensor, truth.params.ground
    assert sensor is not None and ground is not None
    servo = seen_from_the_command(truth.params.servo)
    got = {}
    for label in [label for label, *_ in CRAWLS] + [FLOOR_VALIDATION[0]]:
        take = crawl_recording(out / f"{label}_bag", truth.model.joint_names).recording
        xy = predict_crawl(truth.model, servo, ground, take).xy
        error = aligned_path(xy, take.xy) - take.xy
        got[label] = (
            math.sqrt(float(np.mean(np.sum(error**2, axis=1)))),
            math.sqrt(2.0) * sensor.position_noise,
        )
    return got


def test_a_plant_s_servo_is_seen_from_the_command_half_a_period_and_a_pulse_later() -> None:
    """Eq. 210 the other way: a plant's dead time counts from the end of the pulse, a
    prediction's from the command, half a 20 ms period and a 1.5 ms pulse earlier on average;
    the rest is the plant's."""
    plant = ServoModel.uniform(dataclasses.replace(NOMINAL, dead_time=0.0065), 8, "plant")
    seen = seen_from_the_command(plant)
    assert seen.dead_times == pytest.approx(np.full(8, 0.0065 + 0.5 * PULSE_PERIOD + 0.0015))
    assert seen.joints[3] == dataclasses.replace(plant.joints[3], dead_time=0.018)
    assert seen.source == "plant"
