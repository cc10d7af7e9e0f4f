"""The real ATmega2560 ELF in simavr, reached by DriverLink over its pty and over socat's
TCP and UDP bridges (the Wi-Fi stand-in): telemetry flows and follows the targets."""

from __future__ import annotations

import math
import os
import shutil
import time
from pathlib import Path

import pytest

from snake_bringup import emulator as emulator_module
from snake_bringup.emulator import Emulator, build_firmware
from snake_driver.calibration import load_servo_map
from snake_driver.link import DriverLink
from snake_driver.protocol import Flag
from snake_driver.transport import make_transport
from snake_ros.paths import robot_config

pytestmark = [
    pytest.mark.simavr,
    pytest.mark.skipif(
        not all(shutil.which(t) for t in ("avr-gcc", "socat")),
        reason="needs gcc-avr and socat (make test installs them)",
    ),
]


@pytest.mark.parametrize("bridge", [None, "tcp", "udp"])
def test_driver_link_reaches_the_emulated_robot(bridge: str | None) -> None:
    _, servos = load_servo_map(robot_config("robot"))
    with Emulator(bridge=bridge, seconds=20) as emulator:
        endpoint = emulator.endpoint
        link = DriverLink(
            make_transport(endpoint.transport, endpoint.port), servos, now=time.monotonic
        )
        target = {
            name: math.radians(10.0 * (k + 1) - 40.0) for k, name in enumerate(servos.joint_names)
        }
        last = None
        joined = None  # decoder counts once in sync (a bridge may join mid-frame)
        deadline = time.monotonic() + 8.0
        while time.monotonic() < deadline:
            link.ping()
            link.send_targets(target)
            for _ in range(5):
                measurements, _ = link.poll(0.01)
                last = measurements[-1] if measurements else last
                if last is not None and joined is None:
                    joined = link.decoder.stats.bad_crc + link.decoder.stats.bad_length
            if last is not None and all(
                abs(last.positions[j] - a) < 1e-3 for j, a in target.items()
            ):
                break
        link.close()
    assert last is not None, f"no telemetry over {endpoint}"
    assert last.flags & Flag.ENABLED
    for joint, angle in target.items():
        assert last.positions[joint] == pytest.approx(angle, abs=1e-3)
        assert last.pulses_us[joint] == servos.by_joint()[joint].pulse_us(angle)
    # after the first good frame, not one byte was lost or corrupted
    assert link.decoder.stats.bad_crc + link.decoder.stats.bad_length == joined
    assert link.decoder.stats.seq_gaps == 0


def test_read_only_firmware_sources_build_in_the_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sources installed read-only with a ROS package build in $XDG_CACHE_HOME, not beside
    themselves (root may write anywhere, so "read-only" is what os.access says)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    access = emulator_module.os.access
    monkeypatch.setattr(  # nothing is writable; what is executable stays so (shutil.which)
        emulator_module.os,
        "access",
        lambda path, mode, **kw: mode != os.W_OK and access(path, mode, **kw),
    )
    elf, runner = build_firmware()
    cache = tmp_path / "mfm_snake" / "firmware"
    assert elf.is_file() and elf.is_relative_to(cache), elf
    assert runner.is_file() and runner.is_relative_to(cache), runner
