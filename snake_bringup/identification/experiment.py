"""The robot's part of the identification: the driver's link to the robot
(:class:`snake_driver.link.DriverLink`, the core of driver_node), to the emulated robot
started here or to the real one, and each phase played on it
(:class:`snake_dynamics.sim.identification.Excitation`: steps and a chirp on every joint
within its limits; then a validation gait) at the driver's command rate, every report kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from snake_driver.calibration import ServoMap
from snake_driver.link import DriverLink, Measurement
from snake_driver.protocol import Flag, parse_key
from snake_driver.transport import make_transport
from snake_dynamics.gaits import Gait
from snake_dynamics.sim import PoseReading

from ..emulator import Emulator, Endpoint
from ..errors import BringupError

#: The command rate [Hz] (driver_node's default send rate).
COMMAND_RATE = 50.0
#: A clock-sync ping every this many commands (5 Hz, driver_node's ping_rate).
PING_EVERY = 10
#: Rest after each phase [s]: the robot settles, and the next phase starts from rest.
REST_S = 1.0
#: Telemetry periods past the firmware's watchdog timeout that a take's reading of the
#: pause before it covers, on the MCU's clock: the watchdog checks its timeout every 5 ms,
#: and the report after that shows the trip.
TRIP_REPORTS = 3
#: How long a take waits for the robot's reports to cover the pause before it [s of host
#: time], beyond the watchdog timeout itself.
DRAIN_TIMEOUT_S = 10.0
#: A take whose commands moved less than this on every joint [rad] is no test of whether the
#: robot played it.
MOVED_RAD = 0.01
#: How long to wait for the link's first telemetry [s].
CONNECT_TIMEOUT_S = 15.0

#: Where progress goes: one line at a time (``[identify] ...`` on stderr, or nowhere).
Say = Callable[[str], None]


class IdentifyError(BringupError, RuntimeError):
    """Identification cannot run or go on; the message says why and what to do."""


@dataclass
class Take:
    """One phase played on the robot.

    Attributes:
        commands: (host time [s], targets [rad]) as sent.
        measurements: the telemetry received meanwhile.
        poses: the pose sensor's readings received meanwhile (a crawl on the floor), in
            arrival order, each with its sample time on the sensor's clock (:mod:`.poses`).
    """

    commands: list[tuple[float, dict[str, float]]]
    measurements: list[Measurement]
    poses: list[PoseReading] = field(default_factory=list)


class Session(NamedTuple):
    """The driver's link to the robot, and where the robot is (with the emulated pose
    sensor's port, if it has one)."""

    link: DriverLink
    endpoint: Endpoint


def connect(link: DriverLink, say: Say) -> None:
    """Poll until the link's session has its first stamped telemetry.

    Raises:
        IdentifyError: none within :data:`CONNECT_TIMEOUT_S`.
    """
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while time.monotonic() < deadline:
        measurements, events = link.poll(0.02)
        for event in events:
            say(f"link: {event.message}")
        if link.connected and any(m.stamp is not None for m in measurements):
            return
        link.ping()
    reason = link.lost_reason or "no stamped telemetry"
    raise IdentifyError(
        f"no session with the robot within {CONNECT_TIMEOUT_S:g} s ({reason}): check "
        "--transport/--port/--key-file and that the robot is powered"
    )


def read_pause(link: DriverLink, say: Say, label: str) -> None:
    """Read the robot's reports of the pause before a take until they cover its watchdog's
    timeout (``watchdog_ms``) and :data:`TRIP_REPORTS` telemetry periods since the firmware
    last acted on a frame, on the MCU's clock (:attr:`DriverLink.mcu_quiet_us`): a trip of
    the pause is then read before the take's intent, however far the robot's clock or its
    reports lag the host's (an emulator under load).

    Raises:
        IdentifyError: the link was lost, or the reports did not get there within the
            watchdog timeout plus :data:`DRAIN_TIMEOUT_S` of host time.
    """
    system = link.servos.system
    quiet_us = (system.watchdog_ms + TRIP_REPORTS * system.telemetry_period_ms) * 1000
    timeout = DRAIN_TIMEOUT_S + system.watchdog_ms * 1e-3
    deadline = time.monotonic() + timeout
    while (link.mcu_quiet_us or 0) < quiet_us:
        if time.monotonic() > deadline:
            raise IdentifyError(
                f"before the {label}, the robot's reports did not cover {quiet_us * 1e-3:g} ms "
                f"of its clock within {timeout:g} s (watchdog_ms plus {TRIP_REPORTS} "
                "telemetry periods): check servos.driver.telemetry_period_ms (0: none) and "
                "the link"
            )
        for event in link.poll(0.01)[1]:
            say(f"link: {event.message}")
        if not link.connected:
            raise IdentifyError(f"lost the robot before the {label}: {link.lost_reason}")


def check_played(link: DriverLink, take: Take, label: str) -> None:
    """Refuse a take whose commands moved (by more than :data:`MOVED_RAD` on a joint) while
    the robot's reports never did: no commanded pulse changed on any joint, or every report
    shows it disarmed.

    Raises:
        IdentifyError: the robot did not play the take, with what its reports said.
    """
    commanded = np.array([list(targets.values()) for _, targets in take.commands])
    if commanded.size == 0 or np.ptp(commanded, axis=0).max() <= MOVED_RAD:
        return
    flags = [m.flags for m in take.measurements]
    pulses = np.array([list(m.pulses_us.values()) for m in take.measurements])
    disarmed = all(not f & Flag.ENABLED for f in flags)
    if pulses.size and np.ptp(pulses, axis=0).max() > 0 and not disarmed:
        return
    if link.estopped:
        said = "the e-stop is latched"
    elif not flags:
        said = "it sent no reports"
    elif all(f & Flag.ESTOP for f in flags):
        said = "it reported its e-stop throughout"
    elif all(f & Flag.WATCHDOG_TRIPPED for f in flags):
        said = "it reported its watchdog tripped throughout"
    elif disarmed:
        said = "it reported disarmed throughout"
    else:
        said = "its commanded pulses never changed"
    raise IdentifyError(
        f"the robot did not play the {label}: {said}; check the e-stop and the watchdog"
    )


def play(
    link: DriverLink,
    trajectory: Gait,
    duration: float,
    say: Say,
    label: str,
    snapshot: tuple[float, Callable[[Take], None]] | None = None,
) -> Take:
    """Send the trajectory's angles at :data:`COMMAND_RATE` for ``duration`` seconds, then
    rest for :data:`REST_S`, keeping every report; with ``snapshot`` (seconds, call), once
    that many seconds have played, call(a copy of the take so far), from this thread: it
    must return at once (e.g. hand the copy to another thread).

    Raises:
        IdentifyError: the link was lost on the way, the reports of the pause before the take
            did not come (:func:`read_pause`), or the robot did not play it
            (:func:`check_played`).
    """
    names = link.servos.joint_names
    period = 1.0 / COMMAND_RATE
    # snake identify is the operator here, and each take it plays is its deliberate go: the
    # firmware's watchdog trips in the pause before it (writing the last take's bag), which
    # holds the servos disarmed until the operator re-arms them (docs/safety.md). The
    # reports of the pause are read first, so that the trip they show comes before the go,
    # not after it; resume() never releases an e-stop
    read_pause(link, say, label)
    link.resume()
    take = Take([], [])
    start = time.monotonic()
    total = duration + REST_S
    next_note = 0.0
    k = 0
    while (elapsed := time.monotonic() - start) < total:
        t = min(elapsed, duration)
        q = trajectory.evaluate(t).q if elapsed < duration else np.zeros(len(names))
        targets = dict(zip(names, (float(x) for x in q), strict=True))
        link.send_targets(targets, int(period * 1000))
        take.commands.append((link.now(), targets))
        if k % PING_EVERY == 0:
            for event in link.ping():  # the clock mapping's pings, as driver_node's
                say(f"link: {event.message}")
        k += 1
        while True:
            wait = start + k * period - time.monotonic()
            measurements, events = link.poll(max(0.0, min(wait, period)))
            take.measurements += measurements
            for event in events:
                say(f"link: {event.message}")
            if not link.connected:
                raise IdentifyError(f"lost the robot during the {label}: {link.lost_reason}")
            if wait <= 0.0:
                break
        if elapsed >= next_note:
            say(f"{label}: {min(elapsed, total):4.1f} / {total:.1f} s")
            next_note += 2.0
        if snapshot is not None and elapsed >= snapshot[0]:
            snapshot[1](Take(list(take.commands), list(take.measurements)))
            snapshot = None
    check_played(link, take, label)
    return take


def start_emulator(plant: Path, robot: Path, key_hex: str) -> Emulator:
    """The emulated robot (the firmware ELF in simavr with ``plant``, the body and channels
    of the robot config ``robot``), started: :func:`robot_link` takes it, and stops it.

    Raises:
        snake_bringup.emulator.EmulatorError: it did not start.
    """
    emulator = Emulator(plant=plant, robot=str(robot), key_hex=key_hex or None)
    emulator.start()
    return emulator


@contextmanager
def robot_link(
    servos: ServoMap,
    *,
    endpoint: Endpoint | None,
    key_hex: str,
    robot: Path,
    plant: Path,
    say: Say,
    plant_report: Callable[[str], None] | None = None,
    started: Future[Emulator] | None = None,
) -> Iterator[Session]:
    """The driver's link to the robot, connected (:func:`connect`), and its endpoint;
    disabled and closed when the block ends.

    Args:
        servos: the robot's servo calibration.
        endpoint: where the real robot listens; None: start the emulated robot (the
            firmware ELF in simavr with ``plant``; :func:`start_emulator`), or take the one
            ``started`` (the same plant and robot, started while the robot's previous
            session played), and stop it at the end.
        key_hex: 32 hex digits for authenticated mode, or "".
        robot: the robot config (the emulated robot's body and channels).
        plant: the emulated robot's plant file.
        say: progress lines.
        plant_report: given the emulated robot's report once it stopped (its ``PLANT end``
            line: how far behind real time it fell), if it was started here.
        started: the emulated robot being started, where ``endpoint`` is None.

    Raises:
        snake_driver.protocol.AuthKeyError: ``key_hex`` is not a key.
        IdentifyError: no session with the robot.
    """
    key = parse_key(key_hex)
    emulator = None
    if endpoint is None:
        emulator = start_emulator(plant, robot, key_hex) if started is None else started.result()
        endpoint = emulator.endpoint
        say(f"emulated robot (firmware ELF in simavr, plant {plant}) on {endpoint}")
    try:
        link = DriverLink(
            make_transport(endpoint.transport, endpoint.port, endpoint.host),
            servos,
            now=time.time,
            key=key,
        )
        try:
            connect(link, say)
            yield Session(link, endpoint)
        finally:
            link.enable(False)
            link.close()
    finally:
        if emulator is not None:
            emulator.stop()
            if plant_report is not None:
                plant_report(emulator.plant_report or "no report (it did not end normally)")
