"""The robot's part of the identification: the driver's link to the robot
(:class:`snake_driver.link.DriverLink`, the core of driver_node), to the emulated robot
started here or to the real one, and each phase played on it
(:class:`snake_dynamics.sim.identification.Excitation`: steps and a chirp on every joint
within its limits; then a validation gait) at the driver's command rate, every report kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from snake_driver.calibration import ServoMap
from snake_driver.link import DriverLink, Measurement
from snake_driver.protocol import parse_key
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
#: How long a take first reads what the robot reported in the pause before it [s]: longer
#: than the firmware's default watchdog (``watchdog_ms`` 500) and a few telemetry periods, so
#: that a trip of a short pause is reported before the take's intent, not after it (with
#: 0.1 s a validation take under load once played to a robot the trip held disarmed).
DRAIN_S = 0.7
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


def play(link: DriverLink, trajectory: Gait, duration: float, say: Say, label: str) -> Take:
    """Send the trajectory's angles at :data:`COMMAND_RATE` for ``duration`` seconds, then
    rest for :data:`REST_S`, keeping every report.

    Raises:
        IdentifyError: the link was lost on the way.
    """
    names = link.servos.joint_names
    period = 1.0 / COMMAND_RATE
    # snake identify is the operator here, and each take it plays is its fresh intent: the
    # firmware's watchdog trips in the pause before it (writing the last take's bag), which
    # holds the servos disarmed until the operator's intent is fresh (docs/safety.md). The
    # reports of the pause are read first, so that the trip they show comes before the
    # intent, not after it; never past an e-stop
    drained = time.monotonic() + DRAIN_S
    while time.monotonic() < drained:
        for event in link.poll(0.01)[1]:
            say(f"link: {event.message}")
    for event in link.operator_stop(False):
        say(f"link: {event.message}")
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
    return take


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
) -> Iterator[Session]:
    """The driver's link to the robot, connected (:func:`connect`), and its endpoint;
    disabled and closed when the block ends.

    Args:
        servos: the robot's servo calibration.
        endpoint: where the real robot listens; None: start the emulated robot (the
            firmware ELF in simavr with ``plant``) and stop it at the end.
        key_hex: 32 hex digits for authenticated mode, or "".
        robot: the robot config (the emulated robot's body and channels).
        plant: the emulated robot's plant file.
        say: progress lines.
        plant_report: given the emulated robot's report once it stopped (its ``PLANT end``
            line: how far behind real time it fell), if it was started here.

    Raises:
        snake_driver.protocol.AuthKeyError: ``key_hex`` is not a key.
        IdentifyError: no session with the robot.
    """
    key = parse_key(key_hex)
    emulator = None
    if endpoint is None:
        emulator = Emulator(plant=plant, robot=str(robot), key_hex=key_hex or None)
        endpoint = emulator.start()
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
