"""The emulated robot's plant in tests: servo pulses as the firmware would send them (widths
and ages for Plant.step, the runner's records of firmware/tools/plant_link.h for the bridge),
the check that the bridge answers them as the plant steps, and a plant file's refusal."""

from __future__ import annotations

import io
import math
import socket
import threading
from pathlib import Path
from typing import Any

import pytest

from snake_bringup.plant_bridge import NO_PULSE, REPLY, REQUEST, serve
from snake_driver.calibration import load_servo_map
from snake_dynamics.errors import ModelError
from snake_dynamics.sim import load_plant
from snake_ros.paths import robot_config
from support import cli

CHANNELS = 16
#: The MuJoCo plant's ``effects:`` with every effect off: as close to the MFM plant as its
#: engine allows.
EFFECTS_OFF: dict[str, Any] = {
    "servo_spread": 0.0,
    "backlash": 0.0,
    "frictionloss": 0.0,
    "armature": 0.0,
    "battery": None,
    "bracket": None,
}


def pulses(
    plant: Any, angles: dict[int, float], age: float = 0.0
) -> tuple[list[float], list[float]]:
    """Widths [us] and ages [s] of pulses for the given joints (joint -> angle [rad]), each
    ended ``age`` seconds ago; the other channels without a pulse."""
    widths, ages = [0.0] * CHANNELS, [math.inf] * CHANNELS
    for j, angle in angles.items():
        pulse = plant.pulses[j]
        centre = 0.5 * (pulse.pulse_min_us + pulse.pulse_max_us)
        us_per_rad = (pulse.pulse_max_us - pulse.pulse_min_us) / pulse.travel
        widths[pulse.channel] = centre + (pulse.direction * angle + pulse.zero_offset) * us_per_rad
        ages[pulse.channel] = age
    return widths, ages


def records(plant: Any, ticks: int, freq: int = 16_000_000) -> list[bytes]:
    """The runner's records (plant_link.h) of a sweep on every joint: each channel's pulse
    every 20 ms, ended j + 0.7 ms into the frame for joint j, from the first millisecond on
    (never on a step boundary, where float rounding decides which step sees it first)."""
    widths, ages = [0] * CHANNELS, [NO_PULSE] * CHANNELS
    out = []
    for tick in range(1, ticks + 1):
        t = tick * 1e-3
        for j, pulse in enumerate(plant.pulses):
            if (tick - j) % 20 == 0 or widths[pulse.channel] == 0:
                width, _ = pulses(plant, {j: 0.6 * math.sin(2.0 * math.pi * t + j)})
                widths[pulse.channel] = round(width[pulse.channel] * freq * 1e-6)
                ages[pulse.channel] = 3 * freq // 10_000  # ended 0.3 ms before the tick
            else:
                ages[pulse.channel] += freq // 1000
        out.append(REQUEST.pack(tick, 1000, freq, *widths, *ages))
    return out


def assert_served_as_stepped(served: Any, stepped: Any, sent: list[bytes]) -> None:
    """serve() on ``served`` answers each of the runner's records ``sent`` bit for bit as
    ``stepped.step`` does, and logs per record t, the joints and their targets (6 decimals)."""
    ours, theirs = socket.socketpair()
    replies: list[bytes] = []

    def runner() -> None:
        for record in sent:
            ours.sendall(record)
            replies.append(ours.recv(REPLY.size, socket.MSG_WAITALL))
        ours.close()

    thread = threading.Thread(target=runner)
    thread.start()
    log = io.StringIO()
    stats = serve(served, theirs, log)
    thread.join()
    theirs.close()
    assert stats.ticks == len(sent) == len(replies)
    rows = log.getvalue().splitlines()
    for record, reply, row in zip(sent, replies, rows, strict=True):
        fields = REQUEST.unpack(record)
        freq = fields[2]
        widths = [w / freq * 1e6 for w in fields[3:19]]
        ages = [math.inf if a == NO_PULSE else a / freq for a in fields[19:35]]
        t = fields[0] * fields[1] * 1e-6
        assert REPLY.unpack(reply) == tuple(int(v) for v in stepped.step(t, widths, ages))
        joints = [*stepped.q, *(stepped.targets.latest(j) for j in range(len(stepped.q)))]
        assert row == f"{t:.3f}," + ",".join(f"{x:.6f}" for x in joints)


def assert_plant_file_refused(folder: Path, text: str, message: str) -> None:
    """A plant file of ``text`` (in ``folder``) for the robot is refused in one line that
    holds ``message`` and the file's path."""
    path = folder / "plant.yaml"
    path.write_text(text)
    model, _ = load_servo_map(robot_config("robot"))
    with pytest.raises(ModelError) as err:
        load_plant(path, model.joint_names)
    assert message in str(err.value) and str(path) in str(err.value)
    assert "\n" not in str(err.value)


def assert_snake_refuses_plant(path: Path, message: str, *command: str) -> None:
    """``snake command... --plant path`` exits 1 with the one line ``snake: error: path:
    message``, before anything starts."""
    proc = cli.snake(*command, "--plant", str(path), timeout=120, env=None)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [f"snake: error: {path}: {message}"]
