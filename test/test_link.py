"""DriverLink against the real firmware core (the POSIX host build over a pty): configure,
command, telemetry in joint terms, clock mapping, e-stop, authentication, reconnect."""

from __future__ import annotations

import math
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from snake_driver.calibration import load_servo_map
from snake_driver.link import DriverLink, Measurement
from snake_driver.protocol import Flag
from snake_driver.transport import SerialTransport

ROOT = Path(__file__).resolve().parents[1]
FIRMWARE = ROOT / "firmware" / "build" / "host" / "snake_fw_posix"
KEY_HEX = "000102030405060708090a0b0c0d0e0f"


@pytest.fixture(scope="module")
def firmware_binary() -> Path:
    if shutil.which("cc") is None:
        pytest.skip("no C compiler for the firmware's host build")
    subprocess.run(
        ["make", "-C", str(ROOT / "firmware"), "posix"],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return FIRMWARE


def start_firmware(binary: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [str(binary), "--seconds", "30", *args], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line.startswith("PTY "), line
    return proc, line.split(" ", 1)[1]


@pytest.fixture
def firmware(firmware_binary: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    proc, pty = start_firmware(firmware_binary)
    yield proc, pty
    proc.kill()
    proc.wait(timeout=5)


def run_for(link: DriverLink, seconds: float) -> list[Measurement]:
    out: list[Measurement] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        measurements, _ = link.poll(0.01)
        out += measurements
    return out


def test_commands_reach_the_servos_and_telemetry_comes_back(firmware) -> None:
    _, pty = firmware
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    link = DriverLink(SerialTransport(pty), servos, now=time.monotonic)
    assert run_for(link, 0.3), "telemetry after connecting"
    target = {name: (0.3 if k % 2 else -0.2) for k, name in enumerate(servos.joint_names)}
    for _ in range(10):
        link.ping()
        link.send_targets(target)
        run_for(link, 0.05)
    last = run_for(link, 0.5)[-1]
    assert last.flags & Flag.ENABLED and not last.flags & Flag.ESTOP
    for name, angle in target.items():
        assert last.positions[name] == pytest.approx(angle, abs=math.radians(0.01))
        assert last.pulses_us[name] == servos.by_joint()[name].pulse_us(angle)
    # clock mapping: telemetry stamps land within a few ms of the host clock
    assert link.clock.estimate is not None and last.stamp is not None
    assert abs(last.stamp - time.monotonic()) < 0.05
    assert link.decoder.stats.bad_crc == 0 and link.decoder.stats.frames_ok > 10


def test_estop_stops_pulses_until_enabled(firmware) -> None:
    _, pty = firmware
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    link = DriverLink(SerialTransport(pty), servos, now=time.monotonic)
    run_for(link, 0.2)
    link.estop()
    last = run_for(link, 0.3)[-1]
    assert last.flags & Flag.ESTOP and all(p == 0 for p in last.pulses_us.values())
    link.enable(True)
    link.send_targets(dict.fromkeys(servos.joint_names, 0.0))
    last = run_for(link, 0.3)[-1]
    assert not last.flags & Flag.ESTOP and all(p == 1500 for p in last.pulses_us.values())


def test_authenticated_link_and_a_wrong_key(firmware_binary) -> None:
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    proc, pty = start_firmware(firmware_binary, "--key", KEY_HEX)
    try:
        good = DriverLink(
            SerialTransport(pty), servos, now=time.monotonic, key=bytes.fromhex(KEY_HEX)
        )
        assert run_for(good, 0.3), "authenticated telemetry"
        good.close()
        wrong = DriverLink(SerialTransport(pty), servos, now=time.monotonic, key=bytes(16))
        assert run_for(wrong, 0.3) == []  # nothing it can verify
        assert wrong.decoder.stats.bad_auth > 0
    finally:
        proc.kill()
        proc.wait(timeout=5)


def test_reconnects_after_the_firmware_restarts(firmware_binary) -> None:
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    proc, pty = start_firmware(firmware_binary)
    link = DriverLink(
        SerialTransport(pty), servos, now=time.monotonic, min_backoff=0.05, max_backoff=0.2
    )
    assert run_for(link, 0.2)
    proc.kill()
    proc.wait(timeout=5)
    events = []
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and not any(e.kind == "lost" for e in events):
        events += link.poll(0.01)[1]
    assert any(e.kind == "lost" for e in events) and not link.connected
    # a new firmware process on a new pty: point the transport at it, the link reconnects
    proc2, pty2 = start_firmware(firmware_binary)
    try:
        link.transport = SerialTransport(pty2)
        assert run_for(link, 1.0), "telemetry after reconnecting"
        assert link.stats.connects == 2 and link.stats.disconnects == 1
    finally:
        proc2.kill()
        proc2.wait(timeout=5)


def test_a_lost_configuration_frame_is_repaired_by_the_refresh(firmware) -> None:
    _, pty = firmware
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    link = DriverLink(SerialTransport(pty), servos, now=time.monotonic)
    assert run_for(link, 0.2)
    # as if channel 3's configuration had been corrupted on the way: a wrong direction
    wrong = replace(servos.channels[3].config_message(), direction=-1)
    link.send(wrong)
    target = dict.fromkeys(servos.joint_names, 0.3)
    expected = servos.by_joint()["joint_4"].pulse_us(0.3)
    seen_wrong = False
    deadline = time.monotonic() + 4.0
    last = None
    while time.monotonic() < deadline:
        link.send_targets(target)
        for m in run_for(link, 0.02):
            last = m
            seen_wrong |= m.pulses_us["joint_4"] == 3000 - expected  # mirrored about 1500 us
        if seen_wrong and last is not None and last.pulses_us["joint_4"] == expected:
            break
    assert seen_wrong, "the wrong calibration never took effect"
    assert last is not None and last.pulses_us["joint_4"] == expected
