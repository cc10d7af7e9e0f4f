"""DriverLink against the real firmware core (the POSIX host build over a pty): configure,
command, telemetry in joint terms, clock mapping, e-stop, authentication, reconnect, and
behind a TCP bridge whose connection and MCU fail independently: a latched e-stop across a
dropped connection, an MCU that restarts or falls silent while the connection stays up, a
bridge that freezes for 3 s, one that accepts no connection, 90 % of the telemetry
corrupted, the ramp after a reconnect. Devices that are not the robot (a port that echoes,
one that says nothing, one that speaks garbage) get nothing but PINGs and a hint.

References: the firmware binary's own telemetry (flags, pulses, counters), and the host's
monotonic clock for the stamps (a report is stamped before it arrives, by at most the
latency of a pty on this machine)."""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import queue
import select
import shutil
import socket
import subprocess
import threading
import time
import tty
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from support.fault_proxy import FakeDevice, TcpFaultProxy
from support.firmware import build_posix, start_firmware
from support.waits import wait_for

from snake_bringup.emulator import Emulator
from snake_driver.calibration import load_servo_map, to_cdeg
from snake_driver.health import (
    HINT_AUTH,
    HINT_ECHO,
    HINT_GARBAGE,
    HINT_SILENT,
    Level,
    LinkMonitor,
    judge,
)
from snake_driver.keyfile import write_key_file
from snake_driver.link import (
    ESTOP_CONFIRM_S,
    ESTOP_REPEAT_S,
    DriverLink,
    LineBudget,
    LinkEvent,
    Measurement,
)
from snake_driver.protocol import (
    Counters,
    Decoder,
    Direction,
    Enable,
    Encoder,
    Estop,
    Flag,
    Message,
    Ping,
    Pong,
    SetTargets,
    Telemetry,
)
from snake_driver.transport import (
    SerialTransport,
    TcpTransport,
    Transport,
    UdpTransport,
    make_transport,
)

ROOT = Path(__file__).resolve().parents[2]
KEY_HEX = "000102030405060708090a0b0c0d0e0f"
PING_PERIOD_S = 0.2  # the driver node's default ping rate is 5 Hz
STAMP_TOLERANCE_S = 0.05  # the quickest report's arrival after its mapped stamp: pty + mapping


@pytest.fixture(scope="module")
def firmware_binary() -> Path:
    return build_posix()


@pytest.fixture(scope="module")
def key_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """KEY_HEX in a private file: the firmware's host build takes its key from a file only."""
    return write_key_file(tmp_path_factory.mktemp("key") / "key", bytes.fromhex(KEY_HEX))


@pytest.fixture
def firmware(firmware_binary: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    proc, pty = start_firmware(firmware_binary)
    yield proc, pty
    proc.kill()
    proc.wait(timeout=5)


def run_for(
    link: DriverLink,
    seconds: float,
    arrivals: list[float] | None = None,
    events: list[LinkEvent] | None = None,
) -> list[Measurement]:
    """Poll for ``seconds`` [s], pinging like the driver node; collect the measurements (and
    their arrival times on time.monotonic, and the link's events, when asked)."""
    out: list[Measurement] = []
    deadline = time.monotonic() + seconds
    next_ping = time.monotonic()
    while time.monotonic() < deadline:
        if time.monotonic() >= next_ping:
            next_ping += PING_PERIOD_S
            link.ping()
        measurements, new_events = link.poll(0.01)
        arrived = time.monotonic()
        out += measurements
        if arrivals is not None:
            arrivals += [arrived] * len(measurements)
        if events is not None:
            events += new_events
    return out


def assert_stamped_on_the_host_clock(
    measurements: list[Measurement], arrivals: list[float], since: float
) -> None:
    """Every stamped report was made after ``since`` [s] and before it arrived, most are
    stamped (the clock mapping of the session came with its first pong), and the quickest
    delivery shows the mapping right: a report may wait on a busy machine, not all of them
    (another session's mapping would put them seconds early)."""
    stamped = [
        (m.stamp, t) for m, t in zip(measurements, arrivals, strict=True) if m.stamp is not None
    ]
    assert len(stamped) > 0.8 * len(measurements) > 5
    for stamp, arrived in stamped:
        assert since - STAMP_TOLERANCE_S < stamp < arrived + 0.005
    assert min(arrived - stamp for stamp, arrived in stamped) < STAMP_TOLERANCE_S


@pytest.mark.simavr
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


@pytest.mark.simavr
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


@pytest.mark.simavr
def test_targets_after_a_watchdog_trip_arm_the_firmware_again(firmware) -> None:
    """Connected and armed, then no targets for longer than the watchdog timeout (a gait
    started after the driver): the firmware holds and refuses targets until an ENABLE; the
    link sends one with the first targets, and none past an e-stop. (No targets had flowed:
    this is no trip. A watchdog tripped after targets flowed holds the servos until the
    operator's act: test_after_a_watchdog_trip_targets_alone_never_re_arm_...)"""
    _, pty = firmware
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    link = DriverLink(SerialTransport(pty), servos, now=time.monotonic)
    timeout_s = servos.system.watchdog_ms * 1e-3
    last = run_for(link, timeout_s + 0.3)[-1]
    assert last.flags & Flag.WATCHDOG_TRIPPED, "no targets: the watchdog trips"
    target = dict.fromkeys(servos.joint_names, 0.25)
    events: list[LinkEvent] = []
    for _ in range(10):
        events += link.send_targets(target)[1]
        run_for(link, 0.05, events=events)
    last = run_for(link, 0.3)[-1]
    assert last.flags & Flag.ENABLED and not last.flags & Flag.WATCHDOG_TRIPPED
    assert all(p == servos.by_joint()[j].pulse_us(0.25) for j, p in last.pulses_us.items())
    assert [e.kind for e in events].count("rearmed") == link.stats.rearms == 1
    assert not [e for e in events if e.kind == "error_report"][1:], "at most the first refused"

    link.estop()
    run_for(link, 0.3)
    for _ in range(10):
        assert link.send_targets(target) == ([], [])  # latched: nothing sent, nothing re-armed
        run_for(link, 0.05)
    assert link.stats.rearms == 1 and run_for(link, 0.1)[-1].flags & Flag.ESTOP


@pytest.mark.simavr
def test_the_quiet_time_on_the_mcu_clock_covers_the_watchdog_trip(firmware) -> None:
    """mcu_quiet_us, how long the firmware has acted on no frame by its reports' own clock:
    None before a report; once it covers watchdog_ms and three telemetry periods after the
    last targets, the newest report shows the trip (snake identify waits for that before a
    take's intent), and no report shows the trip while it is more than a telemetry period
    short of watchdog_ms (it never exceeds the time since the watchdog was fed). A PING
    acted on starts it again. Reference: the firmware binary's flags."""
    _, pty = firmware
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    system = servos.system
    link = DriverLink(SerialTransport(pty), servos, now=time.monotonic)
    assert link.mcu_quiet_us is None
    wait_for(lambda: run_for(link, 0.2) and link.clock.estimate, 10.0, "the clock mapping")
    target = dict.fromkeys(servos.joint_names, 0.25)
    for _ in range(10):
        link.send_targets(target)
        run_for(link, 0.05)
    assert run_for(link, 0.1)[-1].flags & Flag.ENABLED  # armed: its watchdog runs
    cover_us = (system.watchdog_ms + 3 * system.telemetry_period_ms) * 1000
    short_us = (system.watchdog_ms - system.telemetry_period_ms) * 1000
    link.send_targets(target)  # the last frame the watchdog sees
    read: list[tuple[int, Flag]] = []  # (quiet [us], its flags) at each newest report, no pings

    def covered() -> bool:
        measurements = link.poll(0.01)[0]
        if measurements:
            read.append((link.mcu_quiet_us or 0, measurements[-1].flags))
        return bool(read) and read[-1][0] >= cover_us

    wait_for(covered, 10.0, "reports covering the watchdog's timeout")
    assert read[-1][1] & Flag.WATCHDOG_TRIPPED
    assert [f for q, f in read if q < short_us and f & Flag.WATCHDOG_TRIPPED] == []
    quiet = link.mcu_quiet_us
    link.ping()

    def restarted() -> bool:
        link.poll(0.01)
        return (link.mcu_quiet_us or 0) < (quiet or 0)

    wait_for(restarted, 5.0, "the ping acted on")


@pytest.mark.simavr
def test_authenticated_link_and_a_wrong_key(firmware_binary, key_file: Path) -> None:
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    proc, pty = start_firmware(firmware_binary, "--key-file", str(key_file))
    try:
        good = DriverLink(
            SerialTransport(pty), servos, now=time.monotonic, key=bytes.fromhex(KEY_HEX)
        )
        assert run_for(good, 0.3), "authenticated telemetry"
        good.close()
        wrong = DriverLink(
            SerialTransport(pty), servos, now=time.monotonic, key=bytes(16), link_timeout=0.3
        )
        events: list[LinkEvent] = []
        assert run_for(wrong, 0.8, events=events) == []  # nothing it can verify
        assert wrong.decoder.stats.bad_auth > 0 and wrong.stats.connects == 0
        assert [e.kind for e in events][:1] == ["no_answer"] and HINT_AUTH in events[0].message
    finally:
        proc.kill()
        proc.wait(timeout=5)


@pytest.mark.simavr
def test_reconnects_after_the_firmware_restarts(firmware_binary) -> None:
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    proc, pty = start_firmware(firmware_binary)
    link = DriverLink(
        SerialTransport(pty), servos, now=time.monotonic, min_backoff=0.05, max_backoff=0.2
    )
    assert run_for(link, 1.0)  # a first session of 1 s: its clock mapping is 1 s off later
    proc.kill()
    proc.wait(timeout=5)
    events = []
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and not any(e.kind == "lost" for e in events):
        events += link.poll(0.01)[1]
    assert any(e.kind == "lost" for e in events) and not link.connected
    # a new firmware process on a new pty: point the transport at it, the link reconnects
    started = time.monotonic()
    proc2, pty2 = start_firmware(firmware_binary)
    try:
        link.transport = SerialTransport(pty2)
        arrivals: list[float] = []
        measurements = run_for(link, 1.0, arrivals)
        assert measurements, "telemetry after reconnecting"
        assert link.stats.connects == 2 and link.stats.disconnects == 1
    finally:
        proc2.kill()
        proc2.wait(timeout=5)
    # the new MCU's clock started again: its stamps come from a new mapping, not the old
    # session's (which would put them about a session's length in the past)
    assert_stamped_on_the_host_clock(measurements, arrivals, since=started)


@pytest.mark.simavr
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


@pytest.mark.simavr
def test_replay_counter_exhausted_is_reported_and_the_link_keeps_serving(
    firmware_binary, key_file: Path
) -> None:
    """Encoding fails once the replay counter would wrap: an event saying what to do, never
    an exception, and the telemetry (which needs no sending) still comes in."""
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    proc, pty = start_firmware(firmware_binary, "--key-file", str(key_file))
    try:
        link = DriverLink(
            SerialTransport(pty), servos, now=time.monotonic, key=bytes.fromhex(KEY_HEX)
        )
        link.encoder.counter = 0xFFFF_FFFF - 2  # three frames left: the configuration fails
        events: list[LinkEvent] = []
        measurements = run_for(link, 0.3, events=events)
        events += link.send_targets(dict.fromkeys(servos.joint_names, 0.0))[1]
        events += link.estop() + link.enable(True)
        measurements += run_for(link, 0.2, events=events)
    finally:
        proc.kill()
        proc.wait(timeout=5)
    failed = [e for e in events if e.kind == "send_failed"]
    assert failed and all("replay counter exhausted" in e.message for e in failed)
    assert "auth_key_file" in failed[0].message
    assert link.connected and link.stats.frames_sent == 3
    assert measurements and not measurements[-1].flags & Flag.ENABLED  # never armed


class PtyBridge:
    """A TCP server in front of a firmware's pty, like the robot's Wi-Fi-to-serial bridge:
    the TCP connection and the MCU behind it fail independently. ``attach`` puts another
    firmware (or none) behind the bridge without touching the connection; ``drop`` closes
    the connection and leaves the firmware running."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.server.getsockname()[1])
        self.received = bytearray()  # everything the client sent
        self.frozen = threading.Event()  # while set: nothing forwarded, nothing accepted
        self._requests: queue.Queue[tuple[str | None, threading.Event]] = queue.Queue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def attach(self, pty: str | None) -> None:
        """Forward to ``pty`` from now on (None: to nothing, as if the MCU were off)."""
        self._request(pty)

    def drop(self) -> None:
        """Close the client's connection (the firmware behind stays as it is)."""
        self._request("drop")

    def _request(self, what: str | None) -> None:
        done = threading.Event()
        self._requests.put((what, done))
        assert done.wait(5.0), "bridge thread stuck"

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)
        self.server.close()

    def _run(self) -> None:
        client: socket.socket | None = None
        fd: int | None = None
        while not self._stop.is_set():
            while not self._requests.empty():
                what, done = self._requests.get()
                if what == "drop":
                    if client is not None:
                        client.close()
                    client = None
                else:
                    if fd is not None:
                        os.close(fd)
                    fd = None
                    if what is not None:
                        fd = os.open(what, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
                        tty.setraw(fd)
                done.set()
            watched: list[socket.socket | int] = [self.server]
            watched += [client] if client is not None else []
            watched += [fd] if fd is not None else []
            ready, _, _ = select.select([] if self.frozen.is_set() else watched, [], [], 0.01)
            if client is not None and client in ready:
                try:
                    data = client.recv(4096)
                except ConnectionResetError:
                    data = b""
                self.received += data
                if not data:
                    client.close()
                    client = None
                elif fd is not None:
                    try:
                        os.write(fd, data)
                    except OSError:  # EIO: the firmware is gone (its pty closed)
                        os.close(fd)
                        fd = None
            if self.server in ready:
                if client is not None:
                    client.close()
                client, _ = self.server.accept()
            if fd is not None and fd in ready:
                try:
                    data = os.read(fd, 4096)
                except OSError:  # EIO: the firmware is gone
                    data = b""
                if not data:
                    os.close(fd)
                    fd = None
                elif client is not None:
                    with contextlib.suppress(OSError):  # client gone: the next select says so
                        client.sendall(data)
        for sock in (client, self.server):
            if sock is not None:
                sock.close()
        if fd is not None:
            os.close(fd)


@pytest.fixture
def bridge() -> Iterator[PtyBridge]:
    b = PtyBridge()
    yield b
    b.close()


@pytest.mark.simavr
def test_estop_stays_latched_across_a_dropped_connection(firmware, bridge) -> None:
    """A Wi-Fi drop after an e-stop: the MCU stays e-stopped (no ENABLE on reconnect) and
    the link sends no targets until enable(True)."""
    _, pty = firmware
    bridge.attach(pty)
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    link = DriverLink(TcpTransport("127.0.0.1", bridge.port), servos, now=time.monotonic)
    target = dict.fromkeys(servos.joint_names, 0.2)
    assert run_for(link, 0.3)[-1].flags & Flag.ENABLED
    link.estop()
    last = run_for(link, ESTOP_CONFIRM_S)[-1]
    assert link.estop_confirmed and last.flags & Flag.ESTOP
    bridge.drop()
    events: list[LinkEvent] = []
    run_for(link, 1.0, events=events)
    assert [e.kind for e in events][:2] == ["lost", "connected"] and link.connected
    sent = link.stats.frames_sent
    assert link.send_targets(target) == ([], [])
    assert link.stats.frames_sent == sent
    last = run_for(link, 0.3)[-1]
    assert last.flags & Flag.ESTOP and not last.flags & Flag.ENABLED
    assert all(p == 0 for p in last.pulses_us.values())
    assert link.stats.error_reports == 0  # no target refused as NOT_ARMED: none was sent
    link.enable(True)
    link.send_targets(target)
    last = run_for(link, 0.3)[-1]
    assert last.flags & Flag.ENABLED and not last.flags & Flag.ESTOP
    assert last.pulses_us["joint_1"] == servos.by_joint()["joint_1"].pulse_us(0.2)


def test_an_unconfirmed_estop_is_repeated_for_a_bounded_time() -> None:
    """An MCU that answers pings but never reports (a device that only pongs): ESTOP goes
    out every ESTOP_REPEAT_S for ESTOP_CONFIRM_S, then stops; it is never taken as
    confirmed."""
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    with FakeDevice("pong") as device:
        link = DriverLink(
            TcpTransport("127.0.0.1", device.port), servos, now=time.monotonic, link_timeout=5.0
        )
        wait_for(lambda: link.poll(0.01) and link.connected, 5.0, "the handshake")
        link.estop()
        run_for(link, 2 * ESTOP_CONFIRM_S)  # the device has read it all well before the end
        received = sent_messages(device.received)
    estops = sum(isinstance(msg, Estop) for msg in received)
    assert 2 <= estops <= round(ESTOP_CONFIRM_S / ESTOP_REPEAT_S)
    assert not link.estop_confirmed and link.estopped


@pytest.mark.simavr
@pytest.mark.parametrize("key_hex", [None, KEY_HEX], ids=["plain", "authenticated"])
def test_an_mcu_restart_behind_an_open_bridge_is_configured_again(
    firmware_binary, bridge, key_file: Path, key_hex: str | None
) -> None:
    """The MCU resets while the TCP connection stays up. Plain: its clock jumps back, so the
    link starts a new session at once. Authenticated: its restarted replay counter makes
    every frame a replay of the old session's, so no valid frame arrives, the link times out
    and reconnects. Either way the new MCU is configured, and its reports are stamped on the
    host's clock; the restart (or the lost session) is a trip, so the MCU is armed again only
    once the operator says so (``enable(True)`` here; before issue 35 the link re-armed it by
    itself)."""
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    args = ("--key-file", str(key_file)) if key_hex else ()
    key = bytes.fromhex(key_hex) if key_hex else None
    first, pty = start_firmware(firmware_binary, *args)
    second = None
    try:
        bridge.attach(pty)
        link = DriverLink(
            TcpTransport("127.0.0.1", bridge.port),
            servos,
            now=time.monotonic,
            key=key,
            link_timeout=0.5,
        )
        target = dict.fromkeys(servos.joint_names, -0.3)
        before: list[Measurement] = []
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:  # ~100 reports from this MCU, at the target
            link.send_targets(target)
            before += run_for(link, 0.02)
        assert link.stats.telemetry > 50 and not link.ramp.active
        first.kill()
        first.wait(timeout=5)
        started = time.monotonic()
        second, pty2 = start_firmware(firmware_binary, *args)  # boots disabled
        mark = len(bridge.received)
        bridge.attach(pty2)
        events: list[LinkEvent] = []
        arrivals: list[float] = []
        measurements = []
        deadline = time.monotonic() + 4.0
        while time.monotonic() < deadline:
            if link.tripped:
                link.enable(True)  # the operator's act after the trip
            link.send_targets(target)
            measurements += run_for(link, 0.02, arrivals, events)
        # every report of the new MCU (the old one's last ones arrived at once)
        new = next(i for i, t in enumerate(arrivals) if t > started + 0.2)
        assert_stamped_on_the_host_clock(measurements[new:], arrivals[new:], started)
    finally:
        for proc in (first, second):
            if proc is not None:
                proc.kill()
                proc.wait(timeout=5)
    # stamps never go back across the restart and the new session's clock fit (issue 11)
    stamps = [m.stamp for m in before + measurements if m.stamp is not None]
    assert all(a < b for a, b in itertools.pairwise(stamps)), "a stamp went back"
    last = measurements[-1]
    assert last.flags & Flag.ENABLED
    assert last.pulses_us["joint_1"] == servos.by_joint()["joint_1"].pulse_us(-0.3)
    # the restarted MCU's angle estimate is not where the servos are: the ramp starts from
    # the last targets sent (the same pose), so every target after the restart is that pose
    sent = sent_messages(bytes(bridge.received[mark:]), key, link.boot_id)
    targets = [m for m in sent if isinstance(m, SetTargets)]
    assert targets and {m.targets_cdeg for m in targets} == {(to_cdeg(-0.3),) * 8}
    kinds = [e.kind for e in events]
    assert link.stats.trips == 1
    if key is None:
        assert kinds == ["mcu_reset", "tripped"] and link.stats.mcu_resets == 1
        assert link.stats.connects == 1 and link.stats.timeouts == 0
    else:
        assert kinds == ["lost", "tripped", "connected"] and link.stats.timeouts == 1
        assert "no valid frame from the MCU" in events[0].message
        assert link.stats.connects == 2 and link.stats.mcu_resets == 0
        assert link.decoder.stats.replayed > 0


@pytest.mark.simavr
def test_a_silent_mcu_behind_an_open_bridge_times_out_and_reconnects(
    firmware_binary, bridge
) -> None:
    """The MCU goes off while the bridge stays up: the link is lost after link_timeout, its
    reason kept for diagnostics, and it comes back when an MCU answers again."""
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    first, pty = start_firmware(firmware_binary)
    second = None
    try:
        bridge.attach(pty)
        link = DriverLink(
            TcpTransport("127.0.0.1", bridge.port), servos, now=time.monotonic, link_timeout=0.3
        )
        assert run_for(link, 0.5)
        first.kill()
        first.wait(timeout=5)
        events: list[LinkEvent] = []
        run_for(link, 1.0, events=events)
        assert events[0].kind == "lost" and link.stats.timeouts >= 1
        assert "no valid frame from the MCU" in events[0].message
        # reconnecting meanwhile: the bridge opens, nothing answers the pings
        assert {e.kind for e in events[1:]} == {"no_answer"}
        assert HINT_SILENT in link.lost_reason
        second, pty2 = start_firmware(firmware_binary)
        bridge.attach(pty2)
        measurements = run_for(link, 2.0)
    finally:
        for proc in (first, second):
            if proc is not None:
                proc.kill()
                proc.wait(timeout=5)
    assert link.connected and measurements[-1].flags & Flag.ENABLED


def sent_messages(stream: bytes, key: bytes | None = None, boot_id: int = 0) -> list[Message]:
    """The host's messages in a byte stream it sent (with ``key``: those MACed for
    ``boot_id``, and PINGs)."""
    return [msg for _, msg in Decoder(key, Direction.TO_MCU, boot_id).feed_messages(stream)]


def drive(link: DriverLink, attempts: int, timeout: float = 10.0) -> list[LinkEvent]:
    """Poll until ``attempts`` connection attempts were given up; the events."""
    events: list[LinkEvent] = []

    def given_up() -> bool:
        events.extend(link.poll(0.01)[1])
        return sum(e.kind in ("no_answer", "open_failed") for e in events) >= attempts

    wait_for(given_up, timeout, f"{attempts} connection attempts given up")
    return events


@pytest.mark.parametrize(
    ("mode", "hint"), [("echo", HINT_ECHO), ("silent", HINT_SILENT), ("garbage", HINT_GARBAGE)]
)
def test_a_device_that_is_not_the_robot_gets_nothing_but_pings_and_a_hint(
    mode: str, hint: str
) -> None:
    """No configuration, ENABLE or target ever reaches a device that has not answered a PING
    with a PONG; the link never says "connected"; each attempt is given up with the hint."""
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    with FakeDevice(mode) as device:
        link = DriverLink(
            TcpTransport("127.0.0.1", device.port),
            servos,
            now=time.monotonic,
            link_timeout=0.3,
            min_backoff=0.05,
            max_backoff=0.1,
        )
        link.send_targets(dict.fromkeys(servos.joint_names, 0.1))
        link.estop()
        events = drive(link, attempts=2)
        received = sent_messages(bytes(device.received))
    assert received and all(isinstance(m, Ping) for m in received)
    assert link.stats.connects == 0 and "connected" not in [e.kind for e in events]
    given_up = [e for e in events if e.kind == "no_answer"]
    assert given_up and all(hint in e.message for e in given_up)
    if mode == "echo":
        assert link.decoder.stats.echoed >= len(received) > 0


def test_a_pong_with_another_boot_id_starts_a_new_session() -> None:
    """Protocol v2: the boot id a PONG carries changes while the connection stays up (the MCU
    restarted): the link reports it, takes the new id for its frames and configures the MCU
    again; the connection is not counted again."""
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    with FakeDevice("pong") as device:
        link = DriverLink(TcpTransport("127.0.0.1", device.port), servos, now=time.monotonic)
        wait_for(lambda: link.poll(0.01) and link.connected, 5.0, "the handshake")
        assert link.boot_id == link.encoder.boot_id == link.decoder.boot_id == 7
        device.boot_id = 8
        events: list[LinkEvent] = []

        def restarted() -> bool:
            link.ping()
            events.extend(link.poll(0.01)[1])
            return link.boot_id == 8

        wait_for(restarted, 5.0, "the new boot id")
        wait_for(lambda: not link.poll(0.05)[1] and link.transport.pending == 0, 5.0, "quiet")
        # the device reads in a thread of its own: until it has every byte the link wrote
        wait_for(lambda: len(device.received) == link.stats.bytes_sent, 5.0, "the device")
        received = sent_messages(bytes(device.received))
    assert [e.kind for e in events] == ["mcu_reset"] and "boot id changed" in events[0].message
    assert link.encoder.boot_id == link.decoder.boot_id == 8
    assert link.stats.connects == 1 and link.stats.mcu_resets == 1
    system = [m for m in received if m == servos.system]
    assert len(system) == 2  # once per session (no targets: no configuration refresh)


def test_a_dead_udp_bridge_is_never_reported_connected() -> None:
    """UDP "opens" whatever is there: connected means the handshake completed."""
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as dead:
        dead.bind(("127.0.0.1", 0))
        link = DriverLink(
            UdpTransport("127.0.0.1", dead.getsockname()[1]),
            servos,
            now=time.monotonic,
            link_timeout=0.2,
            min_backoff=0.05,
            max_backoff=0.1,
        )
        events = drive(link, attempts=3)
    assert link.stats.opens >= 3 and link.stats.connects == 0
    assert "connected" not in [e.kind for e in events]


def test_a_bridge_that_accepts_no_connection_never_blocks_the_poll_loop() -> None:
    """A listener whose accept queue is full drops the SYN: the connect hangs for the
    transport's connect_timeout (2 s). Meanwhile every poll returns at once (the connect runs
    on a worker thread); the attempt ends as open_failed."""
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    for _ in range(3):  # fill the accept queue (backlog 0 holds one)
        filler = socket.socket()
        filler.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            filler.connect(("127.0.0.1", port))
        fillers.append(filler)
    try:
        link = DriverLink(TcpTransport("127.0.0.1", port), servos, now=time.monotonic)
        events: list[LinkEvent] = []
        polls_while_pending = 0

        def ended() -> bool:
            nonlocal polls_while_pending
            events.extend(link.poll(0.0)[1])
            polls_while_pending += not events
            return bool(events)

        wait_for(ended, 10.0, "the connect attempt to end")
    finally:
        for sock in (*fillers, server):
            sock.close()
    assert events[0].kind == "open_failed" and "timed out" in events[0].message
    assert polls_while_pending >= 10  # ~200 polls of 10 ms fit in the 2 s connect timeout


@pytest.mark.simavr
def test_measured_stamps_stay_monotonic_through_a_bridge_freeze(firmware, bridge) -> None:
    """The bridge forwards nothing for 3 s (Wi-Fi gone), then everything it held: the link is
    lost, reconnects, pings that waited in the bridge come back with round trips of seconds.
    Every stamp is later than the one before and no later than its report's arrival."""
    _, pty = firmware
    bridge.attach(pty)
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    link = DriverLink(
        TcpTransport("127.0.0.1", bridge.port),
        servos,
        now=time.monotonic,
        min_backoff=0.05,
        max_backoff=0.2,
    )
    arrivals: list[float] = []
    events: list[LinkEvent] = []
    measurements = run_for(link, 1.0, arrivals, events)
    bridge.frozen.set()
    measurements += run_for(link, 3.0, arrivals, events)
    bridge.frozen.clear()
    before = len(measurements)
    wait_for(
        lambda: (
            measurements.extend(run_for(link, 0.1, arrivals, events))
            or sum(m.stamp is not None for m in measurements[before:]) > 50
        ),
        15.0,
        "stamped telemetry after the freeze",
    )
    assert "lost" in [e.kind for e in events] and link.stats.connects >= 2
    stamped = [(m.stamp, t) for m, t in zip(measurements, arrivals, strict=True) if m.stamp]
    assert all(stamp <= arrived for stamp, arrived in stamped)
    assert all(a[0] < b[0] for a, b in itertools.pairwise(stamped))


@pytest.mark.simavr
def test_after_a_reconnect_the_targets_ramp_from_where_the_robot_is(firmware, bridge) -> None:
    """Connected and holding pose a; the connection drops while the commands jump to pose b.
    After the reconnect the targets start at a (the armed firmware's telemetry) and move at
    most the servo speed times the command period per frame until they reach b. (The drop
    trips the link: the operator's ``enable(True)`` arms it again, as soon as it trips.)"""
    _, pty = firmware
    bridge.attach(pty)
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    period = 0.05
    link = DriverLink(
        TcpTransport("127.0.0.1", bridge.port), servos, now=time.monotonic, command_period=period
    )
    a = {n: math.radians(10.0 * (k + 1)) for k, n in enumerate(servos.joint_names)}
    b = {n: -x for n, x in a.items()}

    def reach(target: dict[str, float]) -> Callable[[], bool]:
        def check() -> bool:
            if link.tripped:
                link.enable(True)
            link.send_targets(target)
            last = run_for(link, period)
            return bool(last) and all(
                abs(last[-1].positions[j] - x) < 1e-3 for j, x in target.items()
            )

        return check

    wait_for(reach(a), 10.0, "pose a")
    mark = len(bridge.received)
    bridge.drop()
    wait_for(reach(b), 10.0, "pose b after the reconnect")
    targets = [
        m.targets_cdeg
        for m in sent_messages(bytes(bridge.received[mark:]))
        if isinstance(m, SetTargets)
    ]
    channel = [c.channel for c in servos.channels]
    step_cdeg = to_cdeg(link.ramp.max_step) + 1  # + rounding to whole centidegrees
    poses = [tuple(to_cdeg(a[j]) for j in servos.joint_names)]
    poses += [tuple(t[c] for c in channel) for t in targets]
    assert poses[-1] == tuple(to_cdeg(b[j]) for j in servos.joint_names)
    steps = [
        max(abs(x - y) for x, y in zip(p, q, strict=True)) for p, q in itertools.pairwise(poses)
    ]
    assert max(steps) <= step_cdeg
    assert link.stats.ramped_targets >= 5  # 160 deg at 600 deg/s and 20 Hz: 6 frames


@pytest.mark.simavr
def test_heavy_corruption_is_diagnosed(firmware, bridge) -> None:
    """About 90 % of the telemetry corrupted (a bit flip in most forwarded chunks, and
    garbage): the monitor says so, never OK."""
    _, pty = firmware
    bridge.attach(pty)
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    with TcpFaultProxy(bridge.port, seed=9, p_flip=0.025, p_garbage=0.005) as proxy:
        link = DriverLink(
            TcpTransport("127.0.0.1", proxy.port), servos, now=time.monotonic, link_timeout=5.0
        )
        monitor = LinkMonitor(window=2.0)
        wait_for(lambda: run_for(link, 0.1) and link.connected, 10.0, "a clean session")
        monitor.restart(link.counts())
        run_for(link, 1.0)
        clean = monitor.delta(link.counts())
        monitor.restart(link.counts())
        proxy.faults.set()
        run_for(link, 2.5)
        faulty = monitor.delta(link.counts())
    assert judge(clean, 50.0)[0] == Level.OK
    level, message = judge(faulty, 50.0)
    assert level >= Level.WARN and "frames bad" in message, message


# ---------------------------------------------------------------------- the line's budget
class FakeClock:
    """A monotonic clock that moves only when told [s]."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_the_line_budget_fills_at_its_rate_up_to_its_burst_and_overdraws_are_paid_back() -> None:
    clock = FakeClock()
    line = LineBudget.for_line(115200, clock)
    assert line.bytes_per_s == pytest.approx(0.9 * 11520)  # LINE_SHARE of 8N1
    assert line.burst == pytest.approx(0.02 * 0.9 * 11520)  # LINE_BURST_S of it
    assert LineBudget.for_line(1200, clock).burst == 110  # two of the longest frames
    budget = LineBudget(1000.0, 200.0, clock)  # [B/s], [B]
    assert budget.fits(200) and not budget.fits(201)  # full: the burst
    budget.spend(200)
    assert not budget.fits(1)
    clock.t += 0.0625  # 62.5 B
    assert budget.fits(62) and not budget.fits(63)
    budget.spend(62)
    budget.spend(500)  # a frame that must go overdraws
    assert budget.available == -499.5
    clock.t += 0.5  # paid back
    assert budget.available == 0.5 and not budget.fits(1)
    clock.t += 3600.0  # a pause fills it up to the burst only
    assert budget.available == pytest.approx(200.0)


class MemoryTransport(Transport):
    """The MCU's side in memory: records every frame written, answers each PING with a PONG
    (boot id 5); ``stuck`` makes it take no byte (they wait in ``pending``)."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self.stuck = False
        self._replies = b""
        self._decoder = Decoder(None, Direction.TO_MCU)
        self._encoder = Encoder(None, Direction.TO_HOST)

    @property
    def description(self) -> str:
        return "memory"

    def open(self) -> None:
        pass

    def close(self) -> None:
        self._forget_pending()

    def _send_some(self, data: bytes) -> int:
        if self.stuck:
            return 0
        self.frames.append(data)
        for _, msg in self._decoder.feed_messages(data):
            if isinstance(msg, Ping):
                self._replies += self._encoder.encode(Pong(msg.host_time_us, 1000, 5))
        return len(data)

    def read(self, timeout: float) -> bytes:
        self.flush()
        replies, self._replies = self._replies, b""
        return replies

    def messages(self) -> list[Message]:
        return sent_messages(b"".join(self.frames), boot_id=5)


def test_on_a_busy_line_only_frames_that_a_newer_one_supersedes_are_skipped() -> None:
    """On the link's own (fake) clock: targets, pings in a session and configuration refresh
    frames wait for the line budget, skipped and counted while it is short or the transport
    holds unsent bytes; handshake PINGs, the session's configuration, ENABLE and ESTOP
    always go; a ping goes at least every link_timeout / 4."""
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    servos = replace(servos, system=replace(servos.system, telemetry_period_ms=0))
    clock, transport = FakeClock(), MemoryTransport()
    link = DriverLink(transport, servos, now=time.monotonic, monotonic=clock)
    wait_for(lambda: link.poll(0.0) and link.connected, 5.0, "the handshake")
    session = transport.messages()
    config = servos.config_messages()
    assert session == [Ping(session[0].host_time_us), *config, Enable(True)]  # type: ignore[attr-defined]
    assert link.budget.available < 0  # the configuration overdrew the burst
    targets = dict.fromkeys(servos.joint_names, 0.1)
    events: list[LinkEvent] = []
    for _ in range(20):  # the clock stands still: nothing droppable fits
        events += link.ping() + link.send_targets(targets)[1]
    events += link.estop() + link.enable(True)
    assert transport.messages()[len(session) :] == [Estop(), Enable(True)]
    assert link.stats.frames_skipped_line_busy == 40
    assert events == []  # the budget pays back frames that must go: no overload

    clock.t += 1.0  # the budget is full again (burst 207 B): targets and pings flow
    sent = len(transport.messages())
    for _ in range(10):
        events += link.send_targets(targets)[1] + link.ping()
    new = transport.messages()[sent:]
    # 207.36 B for 26-byte targets and 15-byte pings, a ping only with room for targets
    # after it: 17.36 B are left after the fifth targets, enough for a ping alone
    assert [type(m).__name__ for m in new] == ["SetTargets", "Ping"] * 4 + ["SetTargets"]
    assert link.stats.frames_skipped_line_busy == 40 + 11
    assert [e.kind for e in events] == ["line_busy"]  # a sustained overload, once per LINE_WARN_S
    assert events[0].message.startswith("50 frame(s) skipped")  # the tenth overload skip
    assert link.stats.bytes_sent == sum(map(len, transport.frames))

    transport.stuck = True  # unsent bytes wait in the transport: only what must go
    clock.t += 1.0
    link.enable(True)
    assert transport.pending > 0
    skipped = link.stats.frames_skipped_line_busy
    link.send_targets(targets)
    assert link.stats.frames_skipped_line_busy == skipped + 1
    clock.t += link.link_timeout / 4  # overdue: a ping goes anyway
    pending = transport.pending
    link.ping()
    assert transport.pending > pending
    transport.stuck = False
    transport.flush()
    tail = transport.messages()[len(session) + 2 + len(new) :]
    assert tail == [Enable(True), Ping(tail[1].host_time_us)]  # type: ignore[attr-defined]

    clock.t += 1.0  # 207.36 B: 8 ENABLEs (64 B) and 5 targets (130 B) leave 13.36 B, short
    sent = len(transport.messages())  # of the 21-byte refresh due after the tenth targets
    for _ in range(8):
        link.enable(True)
    for _ in range(5):
        link.send_targets(targets)
    assert link.stats.frames_skipped_line_busy == skipped + 2  # the stuck targets, the refresh
    clock.t += 1.0  # the refresh goes beside the next targets
    link.send_targets(targets)
    refresh = transport.messages()[sent:]
    assert [type(m).__name__ for m in refresh] == ["Enable"] * 8 + ["SetTargets"] * 6 + [
        "ConfigChannel"
    ]
    assert refresh[-1] == config[1]  # the rotation's next frame


@pytest.mark.simavr
@pytest.mark.skipif(
    not all(shutil.which(t) for t in ("avr-gcc", "socat")), reason="needs gcc-avr and socat"
)
@pytest.mark.parametrize("bridge", [None, "tcp"])
def test_a_host_faster_than_the_line_keeps_its_session(bridge: str | None) -> None:
    """The real firmware in simavr, its UART at 115200 baud (11 520 bytes/s), behind its pty
    or a TCP bridge (whose socket buffers hold megabytes): the host pings and sends fifty
    targets frames at every poll, more than the line carries however fast the loop runs.
    The link sends no more than the line carries, over a window on the MCU's clock; the
    session holds (PONGs answer pings of its own) and the surplus is skipped and counted."""
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    targets = dict.fromkeys(servos.joint_names, 0.1)
    with Emulator(bridge=bridge, seconds=15) as emulator:
        endpoint = emulator.endpoint
        link = DriverLink(make_transport(endpoint.transport, endpoint.port), servos, time.monotonic)
        events: list[LinkEvent] = []
        sent_at: list[tuple[int, int]] = []  # (MCU time [us], bytes sent) at each telemetry
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline or not link.connected:
            events += link.ping()
            for _ in range(50):  # 1300 B a pass: over the line however slowly this loop runs
                events += link.send_targets(targets)[1]
            measurements, new_events = link.poll(0.02)
            events += new_events
            sent_at += [(m.mcu_time_us, link.stats.bytes_sent) for m in measurements]
            if time.monotonic() > deadline + 5.0:
                break
        link.close()
    kinds = {e.kind for e in events}
    assert not kinds & {"lost", "no_answer", "mcu_reset"}, events
    assert link.stats.connects == 1 and link.stats.stray_pongs == 0
    assert link.stats.pongs >= 3 * 4  # a ping at least every link_timeout / 4
    assert link.stats.frames_skipped_line_busy > 0 and "line_busy" in kinds
    (t0, b0), (t1, b1) = sent_at[0], sent_at[-1]
    window_s = (t1 - t0) * 1e-6
    assert window_s > 2.0
    assert (b1 - b0) / window_s <= 11520.0  # 115200 baud, 8N1


# ---------------------------------------------------------------------- arming after a trip
class ReportingMcu(MemoryTransport):
    """The MCU's side in memory, on the link's fake clock: every PING answered (boot id 5),
    and a telemetry report with the flags asked for by :meth:`report`; its MCU time follows
    the fake clock, so a new session after a loss is the same MCU, not a restart. While
    ``down`` (an outage) nothing crosses either way."""

    def __init__(self, clock: FakeClock, channels: int) -> None:
        super().__init__()
        self.clock = clock
        self.channels = channels
        self.down = False

    def _mcu_us(self) -> int:
        return 1000 + int(self.clock.t * 1e6)

    def _send_some(self, data: bytes) -> int:
        if self.down:
            return len(data)
        self.frames.append(data)
        for _, msg in self._decoder.feed_messages(data):
            if isinstance(msg, Ping):
                self._replies += self._encoder.encode(Pong(msg.host_time_us, self._mcu_us(), 5))
        return len(data)

    def report(self, flags: Flag) -> None:
        """Queue one report showing ``flags``."""
        n = self.channels
        report = Telemetry(self._mcu_us(), flags, 0, Counters(), (0,) * n, (1500,) * n)
        self._replies += self._encoder.encode(report)


def connected_link(
    clock: FakeClock,
) -> tuple[DriverLink, ReportingMcu, dict[str, float], list[LinkEvent]]:
    """A link to a :class:`ReportingMcu` on a fake clock, in a session whose first report
    (disarmed, as a booted MCU) has been answered with ENABLE; targets have flowed to the
    armed firmware. Returns the link, the MCU, the targets and the events so far."""
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    mcu = ReportingMcu(clock, len(servos.channels))
    link = DriverLink(mcu, servos, now=time.monotonic, monotonic=clock)
    events: list[LinkEvent] = []

    def handshake() -> bool:
        events.extend(link.poll(0.0)[1])
        return link.connected

    wait_for(handshake, 5.0, "the handshake")
    mcu.report(Flag(0))  # the session's first report: a booted MCU, disarmed
    events += link.poll(0.0)[1]
    assert mcu.messages()[-1] == Enable(True)
    targets = dict.fromkeys(servos.joint_names, 0.1)
    clock.t += 0.1
    mcu.report(Flag.ENABLED)
    events += link.poll(0.0)[1]
    for _ in range(5):
        clock.t += 0.02
        events += link.send_targets(targets)[1]
    assert isinstance(mcu.messages()[-1], SetTargets)
    return link, mcu, targets, events


def arming(messages: list[Message]) -> list[Message]:
    """The ENABLEs, ESTOPs and targets among ``messages``."""
    return [m for m in messages if isinstance(m, Enable | Estop | SetTargets)]


def test_after_a_watchdog_trip_targets_alone_never_re_arm_the_firmware() -> None:
    """The commands stopped (a station's link down) and the firmware's watchdog tripped:
    targets flowing again send no ENABLE and no targets (the old link re-armed with the first
    of them); the operator's deliberate go (resume(), as snake identify's take), or ~/enable
    true, re-arms: the next targets go with an ENABLE."""
    clock = FakeClock()
    link, mcu, targets, _ = connected_link(clock)
    clock.t += 0.6  # no targets for longer than the watchdog's 500 ms
    mcu.report(Flag.WATCHDOG_TRIPPED)
    events = link.poll(0.0)[1]
    sent = len(mcu.messages())
    for _ in range(50):  # a second of targets, the firmware still reporting its trip
        clock.t += 0.02
        mcu.report(Flag.WATCHDOG_TRIPPED)
        events += link.poll(0.0)[1] + link.send_targets(targets)[1]
    assert arming(mcu.messages()[sent:]) == [], "targets alone re-armed the firmware"
    assert [e.kind for e in events] == ["tripped"] and "watchdog" in link.tripped
    assert link.stats.rearms == 0 and link.stats.trips == 1

    link.resume()  # the operator's go
    assert not link.tripped
    link.send_targets(targets)
    assert [type(m) for m in arming(mcu.messages()[sent:])] == [Enable, SetTargets]
    assert arming(mcu.messages()[sent:])[0] == Enable(True) and link.stats.rearms == 1

    clock.t += 0.6  # a second trip; this time ~/enable true re-arms
    mcu.report(Flag.ENABLED)
    mcu.report(Flag.WATCHDOG_TRIPPED)
    assert [e.kind for e in link.poll(0.0)[1]] == ["tripped"]
    sent = len(mcu.messages())
    link.send_targets(targets)
    assert arming(mcu.messages()[sent:]) == []
    link.enable(True)
    link.send_targets(targets)
    assert [type(m) for m in arming(mcu.messages()[sent:])] == [Enable, SetTargets]


def test_after_a_trip_the_stop_state_s_heartbeat_never_re_arms_only_a_release_does() -> None:
    """The firmware's watchdog tripped (the station's link down); the link returns and the
    operator's heartbeat, the stop state false, is heard again and again: the current state,
    not an act of the operator, so no ENABLE and no targets (the old link re-armed on the
    first false heard after the trip). A release of the stop state (true, then false, heard
    after the trip) re-arms with the next targets, as ~/enable true does
    (test_after_a_watchdog_trip_targets_alone_never_re_arm_the_firmware)."""
    clock = FakeClock()
    link, mcu, targets, _ = connected_link(clock)
    assert link.operator_stop(False) == []  # the heartbeat before the outage
    clock.t += 0.6
    mcu.report(Flag.WATCHDOG_TRIPPED)
    (tripped,) = link.poll(0.0)[1]
    assert tripped.kind == "tripped"
    assert "~/enable true or `snake estop --release`" in tripped.message
    sent = len(mcu.messages())
    for _ in range(20):  # 2 s of heartbeats (10 Hz) and targets after the link returned
        clock.t += 0.1
        mcu.report(Flag.WATCHDOG_TRIPPED)
        assert link.operator_stop(False) == [] and link.poll(0.0)[1] == []
        link.send_targets(targets)
    assert arming(mcu.messages()[sent:]) == [], "the heartbeat re-armed the firmware"
    assert link.tripped and link.stats.rearms == 0

    assert [e.kind for e in link.operator_stop(True)] == ["stop_state"]  # the press ...
    assert [e.kind for e in link.operator_stop(False)] == ["stop_state"]  # ... the release
    assert not link.tripped and not link.estopped
    link.send_targets(targets)
    assert [type(m) for m in arming(mcu.messages()[sent:])] == [Estop, Enable, SetTargets]


def test_a_release_ends_a_trip_only_if_heard_after_it_and_never_an_estop() -> None:
    """A stop pressed, then ~/enable true at the driver (the stop state still true): after a
    trip, the stop state's release that arrived before the trip (handed over late) ends
    nothing; one that arrived after it ends the trip, but not an e-stop of ~/estop latched
    meanwhile, and neither does resume(): only ~/enable true."""
    clock = FakeClock()
    link, mcu, targets, _ = connected_link(clock)
    link.operator_stop(True)
    link.enable(True)
    clock.t += 0.6
    mcu.report(Flag.WATCHDOG_TRIPPED)
    assert [e.kind for e in link.poll(0.0)[1]] == ["tripped"]
    clock.t += 0.05
    assert link.operator_stop(False, age=0.1) == []  # it arrived 0.1 s ago: before the trip
    assert link.tripped
    sent = len(mcu.messages())
    link.send_targets(targets)
    assert arming(mcu.messages()[sent:]) == []

    link.estop()
    assert link.operator_stop(True) == []  # latches nothing: ~/estop's e-stop is kept
    assert [e.kind for e in link.operator_stop(False)] == ["stop_state"]  # the trip ends
    assert not link.tripped and link.estopped and link.estop_source == "service"
    link.resume()
    link.send_targets(targets)
    assert link.estopped and not any(isinstance(m, Enable) for m in mcu.messages()[sent:])
    link.enable(True)
    link.send_targets(targets)
    assert [type(m) for m in arming(mcu.messages()[sent:])][-2:] == [Enable, SetTargets]


def test_after_a_lost_link_the_new_session_starts_disarmed() -> None:
    """No valid frame for link_timeout (a Wi-Fi outage between the driver and the MCU's
    bridge): the session is lost and made again, but the new one sends no ENABLE (the old
    link armed every session) and no targets; it disarms an MCU it finds still armed; the
    operator's ~/enable true then re-arms with the next targets."""
    clock = FakeClock()
    link, mcu, targets, _ = connected_link(clock)
    mcu.down = True
    events: list[LinkEvent] = []
    for _ in range(60):  # 1.2 s of targets and polls into the outage
        clock.t += 0.02
        events += link.send_targets(targets)[1] + link.poll(0.0)[1]
    mcu.down = False
    lost = [e.kind for e in events]
    clock.t += link.min_backoff + 0.01
    sent = len(mcu.messages())
    events = []

    def handshake() -> bool:
        events.extend(link.poll(0.0)[1])
        return link.connected

    wait_for(handshake, 5.0, "the new session")
    assert [e.kind for e in events] == ["connected"]
    mcu.report(Flag.ENABLED)  # the new session's first report: the MCU still armed
    events += link.poll(0.0)[1]
    for _ in range(20):
        clock.t += 0.02
        events += link.send_targets(targets)[1]
    assert arming(mcu.messages()[sent:]) == [Enable(False)], "the new session armed the MCU"
    assert lost == ["lost", "tripped"] and link.stats.connects == 2 and link.tripped

    link.operator_stop(False)  # the heartbeat, heard again: the current state, no act
    assert link.tripped
    link.enable(True)
    mcu.report(Flag(0))  # disarmed, as the ENABLE(0) left it
    link.poll(0.0)
    clock.t += 0.02
    link.send_targets(targets)
    assert [type(m) for m in arming(mcu.messages()[sent:])] == [Enable, Enable, SetTargets]


def test_the_stop_state_latches_and_releases_only_what_it_latched() -> None:
    """The operator's stop state true latches the e-stop (ESTOP at once, no targets); false
    releases it (ENABLE). An e-stop of ~/estop is not released by a stop state false (a
    heartbeat cannot undo a stop it did not set), only by ~/enable true."""
    clock = FakeClock()
    link, mcu, targets, _ = connected_link(clock)
    sent = len(mcu.messages())
    events = link.operator_stop(True)
    assert [e.kind for e in events] == ["stop_state"]
    assert link.estopped and link.estop_source == "topic"
    assert link.operator_stop(True) == []  # the heartbeat again: already latched
    link.send_targets(targets)
    assert arming(mcu.messages()[sent:]) == [Estop()]
    assert [e.kind for e in link.operator_stop(False)] == ["stop_state"]
    assert not link.estopped and link.estop_source == ""
    assert arming(mcu.messages()[sent:]) == [Estop(), Enable(True)]

    link.estop()
    assert link.estop_source == "service"
    assert link.operator_stop(False) == [] and link.estopped
    assert link.operator_stop(True) == [] and link.estop_source == "service"
    link.send_targets(targets)
    assert arming(mcu.messages()[sent:])[-1] == Estop()
    link.enable(True)
    assert not link.estopped and link.estop_source == ""


def test_a_lost_enable_is_sent_again_and_a_trip_before_the_first_targets_is_none() -> None:
    """The intent unchanged, no trip: a firmware that reports itself disarmed (its ENABLE
    lost) or tripped before any targets were sent (a gait that starts after the driver) is
    armed with the next targets."""
    clock = FakeClock()
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    mcu = ReportingMcu(clock, len(servos.channels))
    link = DriverLink(mcu, servos, now=time.monotonic, monotonic=clock)
    wait_for(lambda: link.poll(0.0) and link.connected, 5.0, "the handshake")
    mcu.report(Flag(0))
    link.poll(0.0)
    mcu.report(Flag.ENABLED)
    clock.t += 0.6
    mcu.report(Flag.WATCHDOG_TRIPPED)  # no targets yet: the gait has not started
    assert link.poll(0.0)[1] == [] and not link.tripped
    targets = dict.fromkeys(servos.joint_names, 0.1)
    sent = len(mcu.messages())
    link.send_targets(targets)
    assert [type(m) for m in arming(mcu.messages()[sent:])] == [Enable, SetTargets]
    clock.t += 0.6
    mcu.report(Flag(0))  # disarmed, no watchdog trip: as if an ENABLE had been lost
    link.poll(0.0)
    sent = len(mcu.messages())
    link.send_targets(targets)
    assert [type(m) for m in arming(mcu.messages()[sent:])] == [Enable, SetTargets]
    assert link.stats.rearms == 2 and link.stats.trips == 0


def test_the_quiet_time_follows_the_newest_report_and_the_count_of_frames_acted_on() -> None:
    """mcu_quiet_us counts on the reports' MCU time [us] from the first report showing the
    latest frames_ok; a report that arrives out of order (UDP) changes nothing, so the quiet
    time never runs ahead of the firmware's; a new count starts it again."""
    clock = FakeClock()
    link, mcu, _, _ = connected_link(clock)

    start_us = mcu._mcu_us()

    def report(at_us: int, frames_ok: int) -> int | None:
        """The link's quiet time after a report made ``at_us`` after ``start_us``."""
        counters = Counters(frames_ok=frames_ok)
        n = mcu.channels
        telemetry = Telemetry(start_us + at_us, Flag.ENABLED, 0, counters, (0,) * n, (1500,) * n)
        mcu._replies += mcu._encoder.encode(telemetry)
        link.poll(0.0)
        return link.mcu_quiet_us

    assert report(0, 7) == 0
    assert report(100_000, 7) == 100_000
    assert report(50_000, 6) == 100_000, "a report out of order"
    assert report(120_000, 7) == 120_000
    assert report(140_000, 8) == 0
    assert report(150_000, 8) == 10_000
