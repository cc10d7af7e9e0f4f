"""Faults between the driver and the real ATmega2560 firmware in simavr (real-time paced):
a corrupted byte stream, datagram loss, an unplugged and replugged board, and an attacker on
the network in authenticated mode. Each time the driver keeps serving and nothing that
could be kept is lost.

References: the proxies of ``fault_proxy`` record the stream each sender sent and where they
damaged it, so the frames a correct receiver must accept are known exactly (a message count,
independent of the decoders under test); the firmware's own counters arrive in telemetry.
Targets are "reached" when the firmware's servo-model estimate is within 1e-3 rad (its
resolution is 1 cdeg = 1.7e-4 rad).
"""

from __future__ import annotations

import math
import os
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from support.fault_proxy import TcpFaultProxy, UdpLossProxy, expected_seq_gaps, intact_frames

from snake_bringup.emulator import Emulator
from snake_driver.calibration import ServoMap, load_servo_map
from snake_driver.link import ESTOP_CONFIRM_S, ESTOP_REPEAT_S, DriverLink, LinkEvent, Measurement
from snake_driver.protocol import Flag, MsgType
from snake_driver.transport import SerialTransport, make_transport
from snake_ros.paths import robot_config

pytestmark = [
    pytest.mark.simavr,
    pytest.mark.skipif(
        not all(shutil.which(t) for t in ("avr-gcc", "socat")),
        reason="needs gcc-avr and socat (make test installs them)",
    ),
]

REACHED_RAD = 1e-3
#: Targets and pings every 50 ms here (driver_node sends targets at 50 Hz and pings at 5 Hz:
#: config/driver_node.yaml).
COMMAND_PERIOD_S = 0.05
TELEMETRY_HZ = 50.0  # config/robot.yaml: telemetry_period_ms 20
EMULATOR_S = 30  # bound on every emulator's life [emulated s]
KEY_HEX = "5a0e3c1f77d2a9b46e8801c3f0b2d4e6"
RESUME_S = 2.0  # telemetry resumes this soon after a replug [s] (reconnect backoff <= 0.2 s)
FIRMWARE = Path(__file__).resolve().parents[2] / "firmware"


def servo_map() -> ServoMap:
    return load_servo_map(robot_config("robot"))[1]


def pose(servos: ServoMap, sign: float) -> dict[str, float]:
    """Distinct angles per joint [rad]: ±(10..80 deg), so a channel mix-up shows."""
    return {n: sign * math.radians(10.0 * (k + 1)) for k, n in enumerate(servos.joint_names)}


def at(m: Measurement | None, target: dict[str, float]) -> bool:
    return m is not None and all(abs(m.positions[j] - a) < REACHED_RAD for j, a in target.items())


class Driver:
    """What driver_node does with a DriverLink (targets and pings every COMMAND_PERIOD_S,
    poll between)."""

    def __init__(self, link: DriverLink) -> None:
        self.link = link
        self.measurements: list[Measurement] = []
        self.events: list[LinkEvent] = []

    @property
    def last(self) -> Measurement | None:
        return self.measurements[-1] if self.measurements else None

    def run(
        self,
        target: dict[str, float] | None,
        seconds: float,
        until: Callable[[Driver], bool] = lambda d: False,
    ) -> bool:
        """Drive for at most ``seconds`` [s] (sending nothing if target is None); True as soon
        as ``until`` holds."""
        deadline = time.monotonic() + seconds
        next_send = 0.0
        while time.monotonic() < deadline:
            if target is not None and time.monotonic() >= next_send:
                next_send = time.monotonic() + COMMAND_PERIOD_S
                self.events += self.link.ping()
                self.events += self.link.send_targets(target)[1]
            measurements, events = self.link.poll(0.01)
            self.measurements += measurements
            self.events += events
            if until(self):
                return True
        return until(self)

    def reach(self, target: dict[str, float], seconds: float) -> bool:
        """Drive toward target until the telemetry shows it, at most ``seconds`` [s]."""
        return self.run(target, seconds, lambda d: at(d.last, target))


def test_garbage_and_flipped_bits_are_rejected_counted_and_nothing_else_lost() -> None:
    servos = servo_map()
    a, b = pose(servos, 1.0), pose(servos, -1.0)
    with (
        Emulator(bridge="tcp", seconds=EMULATOR_S) as emulator,
        TcpFaultProxy(int(emulator.endpoint.port), seed=4, p_flip=0.002, p_garbage=0.002) as proxy,
    ):
        driver = Driver(DriverLink(make_transport("tcp", str(proxy.port)), servos, time.monotonic))
        # a clean start: the configuration and ENABLE sent on connect arrive intact
        assert driver.reach(a, 8.0), "clean link: target a not reached"
        proxy.faults.set()
        before = len(driver.measurements)
        t0 = time.monotonic()
        reached = driver.reach(b, 6.0)

        def enough_faults(_: Driver) -> bool:
            # at least 3 s, and faults both ways: which bytes get hit is random (the
            # stream's cut into reads varies with the load), so a fixed time may see few
            return (
                time.monotonic() - t0 >= 3.0
                and proxy.to_mcu.flips + proxy.to_mcu.inserts >= 5
                and proxy.to_host.flips > 5
                and proxy.to_host.inserts > 5
            )

        driver.run(b, 15.0 - (time.monotonic() - t0), enough_faults)
        under_faults = len(driver.measurements) - before
        faulty_s = time.monotonic() - t0
        proxy.faults.clear()
        driver.run(b, 0.3)  # clean traffic flushes any bogus frame a parser still waits on
        driver.run(None, 0.4)  # quiet: the last telemetry has counted every host frame
        firmware = driver.last
        proxy.paused.set()
        driver.run(None, 0.2)  # drain what was forwarded before the pause
    link = driver.link
    assert proxy.error is None
    assert reached and at(firmware, b), "target b not reached under faults"
    # about a third of the reports are hit (reads of a few bytes each get faults): a quarter
    # of the nominal rate is "still flowing" with margin for a loaded machine
    assert under_faults >= 0.25 * TELEMETRY_HZ * faulty_s, "telemetry stopped flowing"
    # faults did happen both ways within 15 s (the host sends ~40 chunks a second)
    assert proxy.to_host.flips > 5 and proxy.to_host.inserts > 5
    assert proxy.to_mcu.flips + proxy.to_mcu.inserts >= 5

    # host: every frame the faults missed is accepted, every damaged one rejected and counted
    intact, damaged = intact_frames(proxy.to_host)
    stats = link.decoder.stats
    assert len(damaged) >= proxy.to_host.flips // 2  # a flip always lands in a frame
    assert stats.frames_ok == len(intact)
    assert stats.seq_gaps == expected_seq_gaps(intact)
    assert stats.bad_crc + stats.bad_length >= len(damaged) // 2
    assert stats.bad_payload == 0

    # firmware: likewise for the host's frames, as its telemetry counters report
    assert firmware is not None
    counters = firmware.counters
    intact_mcu, damaged_mcu = intact_frames(proxy.to_mcu)
    assert len(damaged_mcu) >= 2
    assert counters.frames_ok == len(intact_mcu)
    assert counters.bad_crc + counters.bad_length >= len(damaged_mcu) // 2
    assert counters.bad_payload == 0 and counters.rx_dropped == 0
    assert link.stats.connects == 1 and not [e for e in driver.events if e.kind != "connected"]


def test_udp_datagram_loss_counts_sequence_gaps_and_motion_continues() -> None:
    servos = servo_map()
    a, b = pose(servos, 1.0), pose(servos, -1.0)
    with (
        Emulator(bridge="udp", seconds=EMULATOR_S) as emulator,
        UdpLossProxy(int(emulator.endpoint.port), seed=10, p_drop=0.1) as proxy,
    ):
        driver = Driver(DriverLink(make_transport("udp", str(proxy.port)), servos, time.monotonic))
        assert driver.reach(a, 8.0), "clean link: target a not reached"
        proxy.faults.set()
        chunks0 = proxy.to_host.chunks, proxy.to_mcu.chunks
        t0 = time.monotonic()
        reached = driver.reach(b, 6.0)
        driver.run(b, 4.0 - (time.monotonic() - t0))
        chunks = proxy.to_host.chunks - chunks0[0], proxy.to_mcu.chunks - chunks0[1]
        proxy.faults.clear()
        driver.run(b, 0.3)
        driver.run(None, 0.4)
        firmware = driver.last
        proxy.paused.set()
        driver.run(None, 0.2)
    link = driver.link
    assert proxy.error is None
    assert reached and at(firmware, b), "motion stopped under 10 % datagram loss"
    assert firmware is not None and not firmware.flags & Flag.WATCHDOG_TRIPPED
    # the proxy dropped about 10 %: within 4 binomial standard deviations
    for dropped, n in ((proxy.to_host.dropped, chunks[0]), (proxy.to_mcu.dropped, chunks[1])):
        assert n > 50
        assert abs(dropped / n - 0.1) <= 4.0 * math.sqrt(0.1 * 0.9 / n), (dropped, n)

    # host: the sequence gaps are exactly the frames the lost datagrams carried (or part of).
    # socat sends each read of the pty as one datagram of a few bytes, so a 94-byte report
    # spans ~10 datagrams and 10 % datagram loss costs about 1 - 0.9^10 = 65 % of the reports.
    intact, damaged = intact_frames(proxy.to_host)
    stats = link.decoder.stats
    assert len(damaged) >= proxy.to_host.dropped // 2
    assert stats.frames_ok == len(intact)
    assert stats.seq_gaps > 0
    assert stats.seq_gaps == expected_seq_gaps(intact) >= len(damaged) - 2
    # firmware: every datagram that arrived was one whole frame, and was accepted
    intact_mcu, damaged_mcu = intact_frames(proxy.to_mcu)
    assert len(damaged_mcu) == proxy.to_mcu.dropped
    assert firmware.counters.frames_ok == len(intact_mcu)
    assert firmware.counters.bad_crc == 0 and firmware.counters.rx_dropped == 0


@pytest.mark.parametrize("key_hex", [None, KEY_HEX], ids=["plain", "authenticated"])
def test_unplugged_and_replugged_board_reconnects_and_telemetry_resumes(
    tmp_path: Path, key_hex: str | None
) -> None:
    """The board's port is a stable name (like /dev/serial/by-id/...) that vanishes while
    unplugged: a symlink to the emulator's pty, removed when simavr is killed. The rebooted
    MCU starts its sequence numbers and, when authenticated, its replay counter again: its
    frames must be accepted at once, not counted as replays of the old session's."""
    servos = servo_map()
    a, b = pose(servos, 1.0), pose(servos, -1.0)
    port = tmp_path / "ttySNAKE"
    first = Emulator(seconds=EMULATOR_S, key_hex=key_hex)
    second = Emulator(seconds=EMULATOR_S, key_hex=key_hex)
    key = bytes.fromhex(key_hex) if key_hex else None
    try:
        port.symlink_to(first.start().port)
        link = DriverLink(
            SerialTransport(str(port)),
            servos,
            time.monotonic,
            key,
            min_backoff=0.05,
            max_backoff=0.2,
        )
        driver = Driver(link)
        assert driver.reach(a, 8.0)
        driver.run(a, 3.0)  # a session of a few seconds: ~150 frames from this MCU
        assert first.runner is not None
        first.runner.kill()  # unplug: the MCU is gone and so is its port
        first.runner.wait(timeout=5.0)
        port.unlink()
        assert driver.run(b, 3.0, lambda d: any(e.kind == "lost" for e in d.events))
        assert driver.run(b, 2.0, lambda d: any(e.kind == "open_failed" for e in d.events))
        assert not link.connected
        before = len(driver.measurements)
        port.symlink_to(second.start().port)  # replug: a freshly booted MCU (pulses off)
        replugged = time.monotonic()
        # the driver keeps commanding b throughout; the new MCU gets configured, but the lost
        # link is a trip: it stays disarmed until the operator's fresh intent (issue 35; the
        # old link enabled it by itself), here enable(True)
        assert driver.run(b, RESUME_S, lambda d: len(d.measurements) > before), "no telemetry"
        resumed_after_s = time.monotonic() - replugged
        assert driver.run(b, RESUME_S, lambda d: len(d.measurements) > before + 20)
        assert link.tripped and not any(
            m.flags & Flag.ENABLED for m in driver.measurements[before:]
        ), "the new MCU armed with no operator"
        driver.events += link.enable(True)
        assert driver.reach(b, 8.0), "b was not reached after the replug"
        driver.run(None, 0.3)
    finally:
        first.stop()
        second.stop()
        if port.is_symlink():
            os.unlink(port)
    kinds = [e.kind for e in driver.events]
    assert kinds[0] == "connected" and kinds.count("connected") == 2
    assert kinds.index("lost") < kinds.index("open_failed") < len(kinds) - 1
    assert kinds[-1] == "connected"
    assert set(kinds) == {"connected", "lost", "tripped", "open_failed"}
    assert link.stats.connects == 2 and link.stats.disconnects == 1
    # the new MCU's frames are fresh, not replays, and accepted as soon as they arrive
    assert link.decoder.stats.replayed == 0 and link.decoder.stats.bad_auth == 0
    assert resumed_after_s < RESUME_S
    resumed = driver.measurements[before:]
    assert len(resumed) > 10
    last = resumed[-1]
    assert last.flags & Flag.ENABLED and not last.flags & Flag.WATCHDOG_TRIPPED
    # the new firmware got every frame sent since the reconnect, intact
    assert last.counters.bad_crc == last.counters.bad_length == last.counters.rx_dropped == 0
    assert last.counters.frames_ok >= len(servos.config_messages()) + 1


def forwarded(hub: UdpLossProxy, link: DriverLink, timeout: float = 30.0) -> int:
    """Wait until ``link`` has sent every frame it wrote and ``hub`` has forwarded them all
    (its thread may still hold the last datagrams); return how many datagrams it forwarded.
    A frame left in the transport would otherwise lead the next frame's datagram."""
    deadline = time.monotonic() + timeout
    while link.transport.pending or sum(map(len, hub.sent_to_mcu)) < link.stats.bytes_sent:
        assert time.monotonic() < deadline, "the proxy did not forward the driver's frames"
        link.transport.flush()
        time.sleep(0.002)
    return len(hub.sent_to_mcu)


def test_authenticated_mode_rejects_a_wrong_key_and_a_replayed_frame() -> None:
    servos = servo_map()
    a, b = pose(servos, 1.0), pose(servos, -1.0)
    key = bytes.fromhex(KEY_HEX)
    wrong_key = key[:-1] + bytes([key[-1] ^ 0x01])  # one bit off
    with (
        Emulator(bridge="udp", seconds=EMULATOR_S, key_hex=KEY_HEX) as emulator,
        UdpLossProxy(int(emulator.endpoint.port), seed=0, p_drop=0.0) as hub,
    ):
        good = Driver(DriverLink(make_transport("udp", str(hub.port)), servos, time.monotonic, key))
        assert good.reach(a, 8.0), "authenticated link: target a not reached"
        # capture one e-stop datagram on the network; replay it at once (inside the replay
        # window: a counter already seen), then re-arm
        attacker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        # a steady session first: until the clock mapping has its estimate, poll also pings
        assert good.run(a, 10.0, lambda d: d.link.clock.estimate is not None)
        sent = forwarded(hub, good.link)  # the frames before the e-stop are not counted in it
        good.link.estop()
        assert good.run(None, 1.0, lambda d: d.last is not None and bool(d.last.flags & Flag.ESTOP))
        # ESTOP, repeated only until the telemetry confirmed it
        estops = hub.sent_to_mcu[sent:]
        assert 1 <= len(estops) <= ESTOP_CONFIRM_S / ESTOP_REPEAT_S
        assert all(d[2] & 0x7F == MsgType.ESTOP for d in estops)
        estop_frame = estops[0]
        attacker.sendto(estop_frame, ("127.0.0.1", hub.port))
        good.run(None, 0.2)
        good.link.enable(True)
        assert good.reach(a, 2.0)

        # a driver with the wrong key: pings (its handshake fails), tries to command b and
        # to e-stop
        wrong = Driver(
            DriverLink(make_transport("udp", str(hub.port)), servos, time.monotonic, wrong_key)
        )
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            wrong.run(b, 0.05)
            wrong.link.estop()
            good.run(a, 0.05)

        # and again long after (far behind the window): the robot must not stop
        attacker.sendto(estop_frame, ("127.0.0.1", hub.port))
        attacker.close()
        good.run(a, 0.5)
        good.run(None, 0.3)
        wrong.run(None, 0.1)
        # the wrong driver's last frames may still be on their way: wait until the firmware
        # has counted as many as were sent (or more: the equality below checks)
        assert good.run(
            a,
            5.0,
            lambda d: (
                d.last is not None and d.last.counters.bad_auth >= wrong.link.stats.frames_sent
            ),
        )
        hub.paused.set()
        good.run(None, 0.2)
    last = good.last
    assert hub.error is None and last is not None
    assert at(last, a) and last.flags & Flag.ENABLED and not last.flags & Flag.ESTOP
    # the wrong driver never got a PONG it could verify: it sent nothing but PINGs (no
    # configuration, ENABLE, targets or ESTOP); the firmware counted every one of them and
    # both replays, and acted on none
    assert wrong.link.stats.connects == 0 and wrong.link.stats.no_answers >= 1
    assert last.counters.bad_auth == wrong.link.stats.frames_sent > 10
    assert last.counters.replayed == 2
    assert last.counters.bad_crc == 0
    # the host with the wrong key verified nothing of the firmware's telemetry
    assert wrong.measurements == [] and wrong.link.decoder.stats.frames_ok == 0
    assert wrong.link.decoder.stats.bad_auth > 20
    assert good.link.decoder.stats.bad_auth == 0 and good.link.decoder.stats.replayed == 0
    # nothing was lost on this link: every frame the firmware sent was accepted (a sequence
    # gap here is a frame the firmware numbered but never sent: its transmit ring was full)
    intact, damaged = intact_frames(hub.to_host)
    # (those that came while the link's handshake had not yet learnt the boot id are
    # unverifiable, counted apart)
    stats = good.link.decoder.stats
    assert damaged == [] and stats.frames_ok + good.link.stats.unverified == len(intact)
    assert good.link.decoder.stats.seq_gaps == expected_seq_gaps(intact)
