"""The emulated robot's physical plant (snake_dynamics/sim/plant.py, snake_bringup/plant_bridge.py,
firmware/tools/plant_link.c): pulses -> targets through the calibration, limp without pulses,
plant files, and a step through the real firmware ELF in simavr against the servo model."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from scipy.spatial.transform import Rotation
from support.plant import (
    CHANNELS,
    assert_plant_file_refused,
    assert_served_as_stepped,
    assert_snake_refuses_plant,
    pulses,
    records,
)

from snake_bringup import plant_bridge
from snake_bringup.emulator import Emulator, EmulatorError, firmware_dir
from snake_bringup.plant_bridge import REPLY, build_plant, pulse_map, serve
from snake_bringup.process import ROBOT_NICE, ROBOT_RT_PRIORITY, priority, robot_process
from snake_driver.calibration import load_servo_map, servo_map
from snake_driver.link import DriverLink
from snake_driver.transport import make_transport
from snake_dynamics.floating import centre_of_mass, world_poses
from snake_dynamics.gaits import make_gait
from snake_dynamics.mfm.integrators import joint_response
from snake_dynamics.model import SnakeModel
from snake_dynamics.robot import Robot
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim import (
    CommandReference,
    CrawlingSimulator,
    PoseReading,
    PrescribedInput,
    Simulator,
)
from snake_dynamics.sim import crawler as crawler_module
from snake_dynamics.sim.plant import (
    DECODER_US,
    LIMP_AFTER,
    NO_VOLTAGE,
    PWM_PERIOD_US,
    TABLE_WIDTH,
    Plant,
    PulseTargets,
    load_plant,
)
from snake_ros.paths import robot_config

ROBOT = robot_config("robot")
PLANT = robot_config("plant")


def test_pulse_to_target_inverts_the_calibration() -> None:
    model, _ = load_servo_map(ROBOT)
    spec = {
        "defaults": {"pulse_min_us": 600, "pulse_max_us": 2400, "travel_deg": 170.0},
        "joints": {
            name: {"channel": k, "direction": -1 if k % 2 else 1, "zero_offset_deg": 7.5 * k}
            for k, name in enumerate(model.joint_names)
        },
    }
    for channel in servo_map(spec, model).channels:
        mapping = pulse_map(channel)
        us_per_rad = (channel.pulse_max_us - channel.pulse_min_us) / channel.travel
        for angle in np.linspace(channel.lower, channel.upper, 37):
            width = channel.pulse_us(float(angle))
            shaft = channel.direction * angle + channel.zero_offset
            if abs(shaft) >= channel.travel / 2:  # the firmware clamps at the pulse range
                continue
            # the firmware rounds to whole microseconds: within half of one
            assert mapping.target(width) == pytest.approx(angle, abs=0.5 / us_per_rad + 1e-9)


def _plant(**changes: object) -> Plant:
    plant = build_plant(Robot.load(ROBOT), PLANT)
    params = dataclasses.replace(plant.params, **changes)
    model, _ = load_servo_map(ROBOT)
    return Plant(model, plant.pulses, params)


def test_pulse_targets_give_each_stage_time_the_newest_target_its_servo_sees() -> None:
    """Every stage time t sees, per joint, the newest target set at or before t - dead time
    (eq. 201): against a plain look-up, on grids that meet the targets' times exactly."""
    rng = np.random.default_rng(201)
    lags = np.array([0.0, 0.004, 0.0065, 0.02])
    targets = PulseTargets(np.zeros(4), lags)
    plain: list[list[tuple[float, float]]] = [[(-math.inf, 0.0)] for _ in lags]
    for k in range(400):
        t = 0.004 * k  # targets on the stage grid, and some between its points
        for j in range(4):
            if rng.random() < 0.4:
                when = t + (
                    rng.integers(4) * 0.0005 if rng.random() < 0.5 else rng.random() * 0.004
                )
                value = float(rng.normal())
                targets.set(j, when, value)
                if value != plain[j][-1][1] and when > plain[j][-1][0]:
                    plain[j].append((when, value))
        stages = t - 0.004 + 0.0005 * np.arange(9)  # the last period's 2 x 4 stages of 0.5 ms
        got = targets.inputs(stages)
        assert np.all(got[:, :4] == 0.0) and np.all(got[:, 8:] == 0.0)
        for j, lag in enumerate(lags):
            want = [[v for w, v in plain[j] if w <= s - lag][-1] for s in stages]
            np.testing.assert_array_equal(got[:, 4 + j], want)


@pytest.mark.parametrize("dead_time", [0.008, 0.0001], ids=["ahead", "in-turn"])
def test_the_bridge_answers_every_record_as_the_plant_steps(dead_time: float) -> None:
    """serve() answers the runner bit for bit as Plant.step would: computing each period
    ahead while the MCU runs it when every dead time is at least a period (a pulse's target
    acts only after it), in turn otherwise. Held plant, at rest until the first pulses."""
    plant = _plant()
    params = dataclasses.replace(
        plant.params,
        servo=ServoModel(
            tuple(dataclasses.replace(p, dead_time=dead_time) for p in plant.params.servo.joints),
            "test",
        ),
    )
    model, _ = load_servo_map(ROBOT)
    served, stepped = Plant(model, plant.pulses, params), Plant(model, plant.pulses, params)
    assert_served_as_stepped(served, stepped, records(served, 600))
    assert np.abs(stepped.q).max() > 0.3  # the joints swept


def test_the_bridge_tells_the_lag_the_running_graph_added_apart_from_its_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The end line's lag: the most the emulated clock fell behind the wall clock overall,
    and, from the graph's ready signal on, beyond the lag it had then. Wall clock faked per
    record: 39.2 ms lost while the nodes start, 10 ms more once the graph runs, then caught
    up."""
    plant = _plant()
    sent = records(plant, 200)
    wall = [0.0]
    monkeypatch.setattr(plant_bridge.time, "monotonic", lambda: wall[0])
    ready = threading.Event()
    ours, theirs = socket.socketpair()

    def runner() -> None:
        for tick, record in enumerate(sent):
            step = 1.8e-3 if tick < 50 else 1.5e-3 if 100 < tick <= 120 else 1e-3
            wall[0] += step if tick < 150 else 0.2e-3  # the runner catching up at the end
            if tick == 100:
                ready.set()
            ours.sendall(record)
            ours.recv(REPLY.size, socket.MSG_WAITALL)
        ours.close()

    thread = threading.Thread(target=runner)
    thread.start()
    stats = serve(plant, theirs, graph_ready=ready)
    thread.join()
    theirs.close()
    assert stats.ticks == 200
    assert stats.behind_s == pytest.approx(0.0492, abs=1e-9)  # 49 x 0.8 ms + 20 x 0.5 ms
    assert stats.behind_at_ready_s == pytest.approx(0.0392, abs=1e-9)
    assert stats.behind_running_s == pytest.approx(0.0100, abs=1e-9)
    assert "max_behind_ms=49.2 running_behind_ms=10.0 (at ready 39.2)" in str(stats)
    ours, theirs = socket.socketpair()
    ours.close()  # no records, and no ready signal
    assert "running_behind_ms=n/a" in str(serve(plant, theirs))
    theirs.close()


def test_the_emulated_robot_s_processes_take_the_cpu_first_where_the_user_may_let_them() -> None:
    """A real robot has its own processor: simavr's runner starts under the round-robin
    real-time policy where the user may (root here and in CI), else at a higher weight where
    the user may, else at the parent's (the plant raises its own the same way once its
    kernels are compiled: test_demo reads it); the plant's end line says which."""
    child = subprocess.run(
        [sys.executable, "-c", "from snake_bringup.process import priority; print(priority())"],
        preexec_fn=robot_process,
        capture_output=True,
        text=True,
        check=True,
    )
    if os.geteuid() == 0 or resource.getrlimit(resource.RLIMIT_RTPRIO)[0] >= ROBOT_RT_PRIORITY:
        expected = f"rr:{ROBOT_RT_PRIORITY}"
    elif 20 - resource.getrlimit(resource.RLIMIT_NICE)[0] <= ROBOT_NICE:  # the lowest nice
        expected = f"nice:{ROBOT_NICE}"
    else:
        expected = priority()
    assert child.stdout.strip() == expected
    assert priority() == f"nice:{os.getpriority(os.PRIO_PROCESS, 0)}"  # the test's own
    ours, theirs = socket.socketpair()
    ours.close()
    assert f"priority={priority()}" in str(serve(_plant(), theirs))
    theirs.close()


def test_the_emulated_robot_keeps_the_normal_priority_when_told(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """SNAKE_ROBOT_PRIORITY=normal keeps the parent's (the suite's loaded runs use it, so that
    their robot falls behind); a value that is neither is one line, before anything starts."""
    code = "from snake_bringup.process import priority; print(priority())"
    monkeypatch.setenv("SNAKE_ROBOT_PRIORITY", "normal")
    child = subprocess.run(
        [sys.executable, "-c", code], preexec_fn=robot_process, capture_output=True, text=True
    )
    assert child.stdout.strip() == priority()
    monkeypatch.setenv("SNAKE_ROBOT_PRIORITY", "high")
    with pytest.raises(
        EmulatorError, match=r"^SNAKE_ROBOT_PRIORITY must be raised or normal, got 'high'$"
    ):
        Emulator(eeprom=tmp_path / "eeprom.bin").start()
    assert not (tmp_path / "eeprom.bin").exists()


def test_the_true_table_overlay_holds_the_plant_s_body_floor_and_servos() -> None:
    """config/robot_table_true.yaml is the demo's robot as config/plant_floor.yaml makes it:
    a prediction from it has nothing left to identify."""
    names = [f"joint_{k}" for k in range(1, 9)]
    plant = load_plant(robot_config("plant_floor"), names)
    table = SnakeModel.from_yaml(robot_config("robot_table"))
    true = SnakeModel.from_yaml(robot_config("robot_table_true"))
    assert true.lengths == pytest.approx(table.lengths) and true.radii == pytest.approx(table.radii)
    assert true.masses == pytest.approx(table.masses * plant.mass_scale, rel=1e-12)
    assert true.inertias == pytest.approx(table.inertias * plant.mass_scale, rel=1e-12)
    assert true.ground == plant.ground
    assert table.ground is not None and plant.ground is not None
    assert table.ground.width == plant.ground.width == TABLE_WIDTH  # the same body
    servo = ServoModel.from_yaml(robot_config("robot_table_true"), names)
    for ours, theirs in zip(servo.joints, plant.servo.joints, strict=True):
        # the prediction starts at the command, the plant at the end of the pulse: half a
        # 20 ms period and a 1.5 ms pulse later on average (eq. 210)
        assert ours.dead_time == pytest.approx(theirs.dead_time + 0.0115, abs=1e-12)
        assert dataclasses.replace(ours, dead_time=theirs.dead_time) == theirs


def test_no_pulses_no_torque_but_the_gearbox() -> None:
    plant = _plant()
    t = 0.0
    for _ in range(200):  # joint 3 driven towards 0.5 rad for 0.2 s
        t += 0.001
        plant.step(t, *pulses(plant, {3: 0.5}))
    assert plant.powered.tolist() == [j == 3 for j in range(8)]
    assert plant.q[3] > 0.1
    moving = plant.sim.qd.copy()
    widths, ages = pulses(plant, {3: 0.5})
    ages[plant.pulses[3].channel] = LIMP_AFTER + 1e-3  # the pulses stopped
    plant.step(t + 0.001, widths, ages)
    assert not plant.powered.any()
    assert np.abs(moving).max() > 0.01
    # only the gearbox's damping acts, on every joint
    assert plant.sim.tau == pytest.approx(-plant.params.limp_damping * plant.sim.qd, abs=1e-12)


def test_after_its_warm_up_the_plant_builds_no_simulator_when_every_servo_powers_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A simulator's step count searches 65 poses (tens of ms): built at the first pulses,
    it held the emulated robot's clock back 109 ms in a demo. The warm-up builds the one of
    every servo powered; a joint powered alone still gets its own."""
    plant = _floor_plant()
    plant.warm_up()
    built = []
    search = crawler_module.crawling_substeps

    def counted(*args: Any) -> int:
        built.append(args)
        return search(*args)

    monkeypatch.setattr(crawler_module, "crawling_substeps", counted)
    every = dict.fromkeys(range(8), 0.1)
    plant.step(0.001, *pulses(plant, every))
    assert plant.powered.all() and not built
    plant.step(0.002, *pulses(plant, {3: 0.1}))
    assert plant.powered.sum() == 1 and len(built) == 1


def test_a_pulse_the_servo_cannot_decode_is_ignored() -> None:
    """A runt or a pulse far too long is not a target: the servo keeps its last one, still
    powered; it is counted once however often the runner reports it."""
    plant = _plant()
    t = 0.0
    for _ in range(40):
        t += 0.001
        plant.step(t, *pulses(plant, {2: 0.3}))
    widths, ages = pulses(plant, {2: 0.3})
    channel = plant.pulses[2].channel
    widths[channel] = 12_000.0  # no servo pulse, not a missed compare either
    plant.step(t + 0.02, widths, ages)
    assert plant.targets.latest(2) == pytest.approx(0.3)
    assert plant.powered[2] and plant.ignored_pulses == 1
    ages[channel] = 0.001
    plant.step(t + 0.021, widths, ages)  # the same pulse seen again: counted once
    assert plant.ignored_pulses == 1
    widths[channel] = 200.0  # a runt
    ages[channel] = 0.0
    plant.step(t + 0.04, widths, ages)
    assert plant.targets.latest(2) == pytest.approx(0.3) and plant.ignored_pulses == 2
    assert DECODER_US[0] > 200.0 and DECODER_US[1] < 12_000.0
    assert plant.missed_compares == 0


def test_simavr_s_missed_compare_is_taken_as_silicon_sends_it() -> None:
    """simavr 1.6 (no OCR double-buffering): a pulse shortened below the count while it
    runs stays high into the next period and falls at its match, one period plus the new
    width. The plant takes the new width, ending where the long pulse ends, as the servo of
    a silicon MCU (double-buffered OCR) gets it; counted apart from the undecodable."""
    plant = _plant()
    t = 0.0
    for _ in range(40):
        t += 0.001
        plant.step(t, *pulses(plant, {2: 0.3}))
    widths, ages = pulses(plant, {2: -0.2})
    channel = plant.pulses[2].channel
    widths[channel] += PWM_PERIOD_US
    plant.step(t + 0.02, widths, ages)
    ages[channel] = 0.001
    plant.step(t + 0.021, widths, ages)  # seen again: taken once
    ages[channel] = 0.004 - 3e-10  # and again, its end rounded 0.3 ns later
    plant.step(t + 0.024, widths, ages)
    assert plant.targets.latest(2) == pytest.approx(-0.2)
    assert (plant.missed_compares, plant.ignored_pulses) == (1, 0)


def test_one_joint_step_is_the_servo_models_closed_loop() -> None:
    """One body on the fixed tail (known inertia about the joint), pulses every 20 ms that
    carry a step: the plant's joint is joint_response's, the servo model's pure form."""
    mass, length, radius = 0.1, 0.1, 0.02
    inertia = mass * (3 * radius**2 + length**2) / 12 + mass * (length / 2) ** 2
    model = SnakeModel(
        masses=[1.0, mass], lengths=[0.1, length], radii=[0.02, radius], axes=[[0.0, 0.0, 1.0]]
    )
    params = load_plant(
        PLANT,
        ["joint_1", "joint_2", "joint_3", "joint_4", "joint_5", "joint_6", "joint_7", "joint_8"],
    )
    servo = params.servo.joints[3]  # a joint with the defaults
    one = dataclasses.replace(params, servo=ServoModel.uniform(servo, 1), mass_scale=1.0)
    plant = Plant(model, [build_plant(Robot.load(ROBOT), PLANT).pulses[0]], one)
    r, dt = 0.3, 0.001
    t = np.arange(0.0, 0.4, dt)
    q = [0.0]
    for k in range(1, t.size):  # a pulse ends at 1 ms, 21 ms, 41 ms, ...
        widths, ages = pulses(plant, {0: r})
        ages[0] = ((t[k] - 0.001) % 0.020) if t[k] >= 0.001 else math.inf
        plant.step(t[k], widths, ages)
        q.append(plant.q[0])
    # the reference: 0 until the first pulse's end, then r (joint_response's reference is
    # linear between samples: the step over the sample after it, half a sample late)
    expected, _ = joint_response(servo, inertia, t, np.where(t > 0.0015, r, 0.0))
    assert np.all(np.asarray(q)[t <= 0.001 + servo.dead_time] == 0.0)
    # half a sample of the ramp at the no-load speed at most
    np.testing.assert_allclose(q, expected, rtol=0, atol=servo.no_load_speed * dt / 2)
    # overdamped, it creeps up to the deadband's edge and rests there
    assert q[-1] == pytest.approx(r - servo.deadband, abs=1e-3)


def test_potentiometer_voltages_follow_the_shaft() -> None:
    plant = _plant(potentiometer=dataclasses.replace(_plant().params.potentiometer, noise_mv=0))
    mv = plant.millivolts()
    pot = plant.params.potentiometer
    for pulse in plant.pulses:
        assert mv[pulse.channel] == round(pot.offset_mv)
    others = set(range(CHANNELS)) - {p.channel for p in plant.pulses}
    assert all(mv[c] == NO_VOLTAGE for c in others)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("mass_scale: 0\n", "mass_scale must be a number > 0"),
        ("mass: 1.1\n", "unknown keys ['mass']"),
        ("potentiometer: {gain: 3}\n", "potentiometer: unknown keys ['gain']"),
        ("potentiometer: {seed: true}\n", "potentiometer.seed must be an integer"),
        ("servo: {defaults: {stall_torque: -1}}\n", "servo.defaults.stall_torque must be"),
        ("servo: {joints: {joint_9: {}}}\n", "unknown joints ['joint_9']"),
        ("[1, 2\n", "not valid YAML"),
        ("ground: {mu_sideways: 0.4}\n", "ground: unknown keys ['mu_sideways']"),
        ("ground: {mu_along: -0.1}\n", "ground.mu_along must be finite and >= 0, got -0.1"),
        ("ground: {contacts: 0}\n", "ground.contacts must be an integer 1..16, got 0"),
        ("ground: wheels\n", "ground must be a mapping of snake_dynamics.ground.Ground's keys"),
        ("pose_sensor: {rate: 100}\n", "pose_sensor needs a ground:"),
        ("ground: {}\npose_sensor: {fps: 100}\n", "pose_sensor: unknown keys ['fps']"),
        ("ground: {}\npose_sensor: {latency: -1}\n", "pose_sensor.latency must be"),
        ("ground: {}\npose_sensor: {body: 9}\n", "pose_sensor.body must be an integer 0..8"),
        ("base: 3\n", "base must be the path of a plant file, got 3"),
    ],
)
def test_bad_plant_files_give_one_line(tmp_path: Path, text: str, message: str) -> None:
    assert_plant_file_refused(tmp_path, text, message)


needs_avr = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("avr-gcc", "cc")),
    reason="needs gcc-avr and simavr (make test installs them)",
)


@pytest.mark.simavr
@needs_avr
def test_snake_emulate_names_a_bad_plant_file(tmp_path: Path) -> None:
    path = tmp_path / "plant.yaml"
    path.write_text("potentiometer: {noise_mv: -1}\n")
    message = "potentiometer.noise_mv must be a number >= 0 mV, got -1"
    assert_snake_refuses_plant(path, message, "emulate")


#: robot.yaml's feedback example: the default plant's pots (0.5 V to 4.5 V over 180 deg)
FEEDBACK = {"adc_lo": 102, "angle_lo_deg": -90, "adc_hi": 921, "angle_hi_deg": 90}


@pytest.mark.simavr
@needs_avr
def test_step_through_the_firmware_moves_the_plant_as_the_servo_model(tmp_path: Path) -> None:
    """The ELF in simavr drives the plant: the pulses' targets are the commanded angles, the
    joint follows them as the plant's servo model and body predict, later and slower than
    the nominal servo, and the firmware measures the plant's angles on its pots."""
    doc = yaml.safe_load(ROBOT.read_text())
    for entry in doc["servos"]["joints"].values():
        entry["feedback"] = FEEDBACK
    robot = tmp_path / "robot.yaml"
    robot.write_text(yaml.safe_dump(doc))
    log = tmp_path / "plant.csv"
    _, servos = load_servo_map(robot)
    rest = dict.fromkeys(servos.joint_names, 0.0)
    step = {**rest, "joint_4": 0.4, "joint_7": -0.3}
    telemetry = []
    with Emulator(plant=PLANT, robot=str(robot), plant_log=log) as emulator:
        link = DriverLink(
            make_transport(emulator.endpoint.transport, emulator.endpoint.port),
            servos,
            now=time.monotonic,
        )
        for pose, seconds in ((rest, 1.5), (step, 1.5)):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                link.ping()
                link.send_targets(pose)
                for _ in range(5):
                    telemetry += link.poll(0.01)[0]
        link.close()
    assert emulator.plant_report.startswith("PLANT end ticks=")
    data = np.genfromtxt(log, delimiter=",", names=True)
    t = data["t"]
    header = (firmware_dir() / "tools" / "plant_link.h").read_text()
    period = int(re.search(r"#define PLANT_PERIOD_US (\d+)u", header)[1]) * 1e-6  # type: ignore[index]
    assert np.diff(t) == pytest.approx(period)  # every exchange, none skipped
    plant = build_plant(Robot.load(ROBOT), PLANT)
    n = plant.model.n_joints
    names = plant.model.joint_names
    q = np.column_stack([data[f"joint_{k}"] for k in range(1, n + 1)])
    targets = np.column_stack([data[f"joint_{k}_target"] for k in range(1, n + 1)])
    # the pulses' targets end at the commanded angles (whole microseconds of pulse)
    for k, name in enumerate(servos.joint_names):
        assert targets[-1, k] == pytest.approx(step[name], abs=0.003)
    # the joints settle there, within the deadband and the body's coupling
    assert q[-1] == pytest.approx(targets[-1], abs=0.01)
    # the same servo model and body, fed the logged targets, predict the same motion
    moved = int(np.argmax(np.abs(targets[:, 3]) > 0.01))  # joint_4's step reaches a pulse
    assert moved > 0
    sim = Simulator(plant.model, 0.001, servo=plant.params.servo)
    sim.reset(t[moved - 1], q[moved - 1], np.zeros(n))
    reference = CommandReference(targets[moved - 1], timeout=10.0)
    for k in range(moved - 1, len(t)):
        reference.push(t[k], targets[k], np.zeros(n))
    source = PrescribedInput(
        sim.fast_model, reference, plant.params.servo.dead_times, feed_forward=False
    )
    predicted = [sim.q.copy()]
    for k in range(moved, len(t)):
        sim.run_until(t[k], source, max_steps=10)
        predicted.append(sim.q.copy())
    error = np.asarray(predicted) - q[moved - 1 :]
    assert np.sqrt(np.mean(error[:, 3] ** 2)) < 0.01
    # later: the joint starts its dead time after the pulse that carried the step
    start = int(np.argmax(np.abs(q[:, 3]) > 1e-3))
    assert t[start] - t[moved] >= plant.params.servo.dead_times[3]
    # slower: the datasheet servo (acting on the pulse at once) on the nominal body gets
    # to 90 % of the step sooner
    nominal = Simulator(load_servo_map(ROBOT)[0], 0.001, servo=ServoModel.from_yaml(ROBOT, names))
    nominal.reset(t[moved - 1], q[moved - 1], np.zeros(n))
    fast = PrescribedInput(nominal.fast_model, reference, 0.0, feed_forward=False)
    rise = []
    for k in range(moved, len(t)):
        nominal.run_until(t[k], fast, max_steps=10)
        rise.append(nominal.q[3])
    t90 = np.argmax(q[moved:, 3] >= 0.9 * step["joint_4"])
    assert 0 < np.argmax(np.asarray(rise) >= 0.9 * step["joint_4"]) < t90
    # the firmware's measured angles are the plant's, through pots, ADC and calibration
    measured = [m for m in telemetry if m.measured == frozenset(servos.joint_names)]
    assert len(measured) > 0.8 * len(telemetry) > 50
    mcu_s = np.array([m.mcu_time_us for m in measured]) * 1e-6
    angles = np.array([[m.positions[name] for name in names] for m in measured])
    # best aligned, the measured angle trails the plant's (filter, sampling, telemetry: 13 ms
    # measured) and matches it to ADC counts of 0.22 deg, pot noise and offsets of mV
    lags = np.arange(-30, 11) * 1e-3
    rms = [
        np.sqrt(np.mean((np.interp(mcu_s + lag, t, q[:, 3]) - angles[:, 3]) ** 2)) for lag in lags
    ]
    best = int(np.argmin(rms))
    assert -0.025 <= lags[best] <= 0.0
    assert rms[best] < 0.006
    for k in range(n):
        assert angles[-1, k] == pytest.approx(np.interp(mcu_s[-1], t, q[:, k]), abs=0.01)


FLOOR = robot_config("plant_floor")


def _floor_plant(**ground: float | None) -> Plant:
    """The robot on plant_floor.yaml's table (its ground's keys changed by ``ground``)."""
    params = load_plant(FLOOR, load_servo_map(ROBOT)[0].joint_names)
    assert params.ground is not None
    params = dataclasses.replace(params, ground=dataclasses.replace(params.ground, **ground))
    return Plant(load_servo_map(ROBOT)[0], build_plant(Robot.load(ROBOT), PLANT).pulses, params)


def _crawl(plant: Plant, seconds: float, joints: range = range(8)) -> list[PoseReading]:
    """From the plant's time on, pulses of the default serpenoid gait every 20 ms on
    ``joints`` (none: limp), stepped every millisecond; the pose sensor's readings."""
    gait = make_gait("serpenoid", plant.model)
    t0, readings = plant.time, []
    for k in range(1, round(seconds * 1000) + 1):
        t = t0 + k * 0.001
        sent = t - (k % 20) * 0.001  # the last pulse ended then
        q = gait(sent).q
        widths, ages = pulses(plant, {j: float(q[j]) for j in joints})
        plant.step(t, widths, [a + t - sent for a in ages])
        readings += plant.pose_readings()
    return readings


def test_on_the_floor_the_servos_crawl_by_the_anisotropic_friction() -> None:
    """The law of lateral undulation (docs/mfm.md, "The snake on the ground"): friction
    across the bodies higher than along them carries the snake forward, towards its head;
    on an isotropic floor the same gait goes nearly nowhere. Round bodies (width 0): the law
    is the friction's; on flat undersides the body's small rolls about its length shift its
    weight between the edges, and an isotropic floor moves it about half as far."""
    travel = []
    for ground in ({"width": 0.0}, {"mu_across": 0.12, "mu_backward": None, "width": 0.0}):
        plant = _floor_plant(**ground)
        assert plant.model.base == "floating" and plant.model.gravity[2] == -9.81
        start = plant.base_state
        assert start is not None and plant.params.ground is not None
        _crawl(plant, 4.0)
        state = plant.base_state
        assert state is not None
        travel.append(centre_of_mass(plant.model, state) - centre_of_mass(plant.model, start))
        # lying on the floor: the tail's CM at most its radius above, and below it at most
        # the contact's sag under the whole weight on the tail's three points
        sag = 9.81 * plant.model.masses.sum() / (3 * plant.params.ground.stiffness)
        assert -sag < state.position[2] - plant.model.radii[0] < 1e-3
    forward, isotropic = travel
    print(f"CM travel in 4 s: {forward[1] * 100:.2f} cm, isotropic {isotropic[1] * 100:.2f} cm")
    assert forward[1] > 0.01  # [m] along e2, the head's way
    assert forward[1] > 3 * np.linalg.norm(isotropic[:2])


def test_the_body_stays_where_it_lies_when_servos_switch_on_and_off() -> None:
    """Each set of powered servos has its simulator: a switch carries the whole state over
    (where the body lies, its velocity); it never jumps back to the start."""
    plant = _floor_plant()
    assert isinstance(plant.sim, CrawlingSimulator)
    yaw = 0.7
    away = plant.sim.base_state._replace(
        position=np.array([1.0, -2.0, plant.model.radii.max()]),
        quaternion=np.array([0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)]),
    )
    plant.sim.reset(0.0, plant.q, plant.sim.qd, base=away)
    readings = []
    for joints in (range(1, 8, 2), range(8), range(0), range(8)):  # yaw, all, limp, all
        readings += _crawl(plant, 0.4, joints)
    assert len(plant._simulators) == 3
    sensor = plant.params.pose_sensor
    assert sensor is not None
    positions = np.array([r.position for r in readings])
    yaws = np.array([Rotation.from_quat(r.quaternion).as_euler("zyx")[0] for r in readings])
    # from where it was put, at most 0.3 m/s and 5 rad/s between readings 10 ms apart, plus
    # 4 sigma of two readings' noise
    assert np.abs(positions[0, :2] - [1.0, -2.0]).max() < 0.003 + 4 * sensor.position_noise
    assert yaws[0] == pytest.approx(yaw, abs=0.05 + 4 * sensor.yaw_noise)
    jump = 4 * math.sqrt(2)
    assert np.abs(np.diff(positions[:, :2], axis=0)).max() < 0.003 + jump * sensor.position_noise
    assert np.abs(np.diff(yaws)).max() < 0.05 + jump * sensor.yaw_noise


@pytest.mark.parametrize("period_ms", [4, 7])
def test_the_pose_sensor_samples_on_its_grid_however_far_the_plant_moves_at_a_time(
    period_ms: int,
) -> None:
    """A record every ``period_ms`` (the runner exchanges one per PLANT_PERIOD_US, 4 ms)
    moves the plant several steps at once; its pose sensor still samples at the first step
    at or after each sample time, as with a record every millisecond: the same readings, to
    the bit. (Every dead time is at least the period, so each pulse is taken before its
    target acts, and every joint is powered from the first record on.)"""
    gait = make_gait("serpenoid", _floor_plant().model)
    readings: dict[int, list[PoseReading]] = {}
    for every in (1, period_ms):
        plant = _floor_plant()
        assert min(plant.params.servo.dead_times) >= period_ms * 1e-3
        readings[every] = []
        for k in range(28, 1009, every):  # from 28 ms on (every channel has had a pulse) to 1008
            t = k * 1e-3
            widths, ages = [0.0] * CHANNELS, [math.inf] * CHANNELS
            for j in range(plant.model.n_joints):  # joint j's pulses end j + 0.7 ms into a frame
                ended = t - (t - (j + 0.7) * 1e-3) % 0.02
                w, a = pulses(plant, {j: float(gait(ended).q[j])})
                channel = plant.pulses[j].channel
                widths[channel], ages[channel] = w[channel], t - ended
            plant.step(t, widths, ages)
            readings[every] += plant.pose_readings()
    fine, coarse = readings[1], readings[period_ms]
    assert len(fine) == len(coarse) > 90  # 1 s at 100 Hz, less the dropouts
    for a, b in zip(fine, coarse, strict=True):
        assert (a.frame, a.time) == (b.frame, b.time)
        assert a.time * 100.0 == pytest.approx(round(a.time * 100.0), abs=1e-9)  # on the grid
        assert np.array_equal(a.position, b.position)
        assert np.array_equal(a.quaternion, b.quaternion)
    assert np.ptp([r.position[1] for r in fine]) > 1e-3  # the body moved meanwhile


@pytest.mark.parametrize("body", [0, 8])
def test_the_pose_sensor_reads_its_bodys_pose(body: int) -> None:
    """Without noise and latency a reading is the marker body's CM and frame when it was
    taken (the tail's: the floating base's own pose)."""
    plant = _floor_plant()
    assert plant.params.pose_sensor is not None
    sensor = dataclasses.replace(
        plant.params.pose_sensor, position_noise=0.0, yaw_noise=0.0, latency=0.0, body=body
    )
    plant = Plant(plant.model, plant.pulses, dataclasses.replace(plant.params, pose_sensor=sensor))
    for _ in range(3):
        readings = _crawl(plant, 0.05)
        state = plant.base_state
        assert state is not None and readings and readings[-1].time == pytest.approx(plant.time)
        rotations, centres = world_poses(plant.model, state)
        assert readings[-1].position == pytest.approx(centres[body], abs=1e-15)
        turn = Rotation.from_quat(readings[-1].quaternion).as_matrix() - rotations[body]
        assert np.abs(turn).max() < 1e-12
    if body == 0:
        assert readings[-1].position == pytest.approx(state.position, abs=1e-15)


def test_without_a_floor_the_tail_is_held_in_zero_gravity() -> None:
    """A plant file without ``ground:`` under a robot config that lies on a floor (gravity
    on, robot_table): the body is held by its tail in zero gravity, as the servo stage of
    snake identify assumes; the same robot with the plant's floor feels gravity."""
    table = load_servo_map(robot_config("robot_table"))[0]
    assert np.any(table.gravity)
    held = Plant(
        table, build_plant(Robot.load(ROBOT), PLANT).pulses, load_plant(PLANT, table.joint_names)
    )
    assert not np.any(held.model.gravity) and held.model.base == "floating"  # (as its config)
    assert type(held.sim) is Simulator  # the fixed tail
    floor = load_plant(robot_config("plant_floor"), table.joint_names)
    on_floor = Plant(table, build_plant(Robot.load(ROBOT), PLANT).pulses, floor)
    np.testing.assert_allclose(on_floor.model.gravity, [0.0, 0.0, -9.81])
