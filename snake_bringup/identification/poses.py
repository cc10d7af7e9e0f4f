"""The pose sensor's readings during the crawls on the floor: received from the emulated
robot, put on the robot's clock, checked, and read back from the bags.

**Where they come from.** The emulated robot's plant process sends each reading its pose
sensor delivers as a UDP datagram to :attr:`snake_bringup.emulator.Endpoint.pose_port`
(:func:`snake_dynamics.sim.pose_sensor.encode`); :class:`PoseListener` receives them while
a crawl plays. A real robot's motion capture is not read yet (it would come as
geometry_msgs/PoseStamped on ``/measured/pose``, stamped on arrival): ``snake identify``
refuses the floor stage without the emulated sensor.

**One time base.** A datagram carries the time its sample was taken on the MCU's
microsecond clock, which the telemetry reports carry too: the plant's emulated time less
the firmware's start-up before it starts timer 1
(:data:`snake_bringup.plant_bridge.MCU_CLOCK_START_S`, 1.2175 ms: channel 0's pulses rise
that long past each 20 ms of emulated time, at the MCU's whole 20 ms). The reports go on
the robot's clock as robot time = origin + MCU time
(:class:`snake_driver.clock.RobotClock`); :func:`.recording.robot_offset` finds that
origin, and each pose is stamped origin + its sample time. No host clock enters: an
emulator falling behind real time stretches nothing.

**What is refused.** A datagram that is not one, or carries values that are not finite, is
counted here and dropped (:func:`snake_dynamics.sim.pose_sensor.decode`); the others go into
the crawl's bag as sent, and :func:`crawl_recording` checks them in arrival order with the
comparison's rules (:class:`snake_viz.path_compare.PoseValidator`: not finite, not a unit
quaternion, another frame than ``world``, not newer than the last accepted: rejected and
counted by reason, never fitted).
"""

from __future__ import annotations

import math
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import numpy as np

from snake_dynamics.sim import PoseDatagramError, PoseReading, decode
from snake_dynamics.sim.floor_identification import PathRecording
from snake_viz.bag_series import read_poses
from snake_viz.path_compare import DEFAULT_FRAME, POSE_TOPIC, PoseValidator

from .experiment import IdentifyError
from .recording import POSE_TYPE, read_recording

#: The least pose rate a crawl needs, per second of its reference [Hz].
MIN_POSE_RATE = 5.0
#: The receiving thread checks for the end this often [s].
_POLL_S = 0.1


class PoseListener:
    """Receives the emulated pose sensor's datagrams on UDP 127.0.0.1:``port`` in a thread
    while the block runs; :meth:`take` hands over those received since the last call.

    Attributes:
        unreadable: datagrams dropped: not a pose datagram, or values not finite.
    """

    def __init__(self, port: int) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind(("127.0.0.1", port))
        self._sock.settimeout(_POLL_S)
        self._readings: list[PoseReading] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._receive, daemon=True)
        self.unreadable = 0

    def __enter__(self) -> PoseListener:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        self._sock.close()

    def _receive(self) -> None:
        while not self._stop.is_set():
            try:
                data = self._sock.recv(4096)
            except TimeoutError:
                continue
            try:
                reading = decode(data)
            except PoseDatagramError:
                self.unreadable += 1
                continue
            with self._lock:
                self._readings.append(reading)

    def take(self) -> list[PoseReading]:
        """The readings received since the last call, in arrival order."""
        with self._lock:
            out, self._readings = self._readings, []
        return out


def heading(quaternion: Sequence[float]) -> float:
    """The rotation about the world's z of an orientation (x, y, z, w) [rad]: the angle of
    its body x axis in the ground plane (eq. 243's ψ)."""
    x, y, z, w = quaternion
    return math.atan2(2.0 * (x * y + z * w), 1.0 - 2.0 * (y * y + z * z))


@dataclass(frozen=True)
class Crawl:
    """A crawl read back from its bag.

    Attributes:
        recording: the reference and the accepted poses within its span.
        rejected: the poses rejected, by reason (:data:`snake_viz.path_compare.REASONS`).
        outside: accepted poses outside the reference's span (before its first report or
            after its last), not used.
    """

    recording: PathRecording
    rejected: dict[str, int]
    outside: int


def crawl_recording(path: Path, names: Sequence[str]) -> Crawl:
    """A crawl's bag as the floor fit's take: the servo reference and the poses on
    :data:`POSE_TOPIC` that pass :class:`snake_viz.path_compare.PoseValidator` in arrival
    order and lie within the reference's span.

    Raises:
        IdentifyError: an unreadable bag, one without the reference or the poses, or fewer
            than :data:`MIN_POSE_RATE` poses per second of the reference.
    """
    servo = read_recording(path, names)
    samples = read_poses(path, POSE_TOPIC, POSE_TYPE) or []
    check = PoseValidator(DEFAULT_FRAME)
    kept = [s for s in samples if check.check(*s) is None]
    t0, t1 = float(servo.t[0]), float(servo.t[-1])
    inside = [s for s in kept if t0 <= s.stamp <= t1]
    span = t1 - t0
    if len(inside) < max(2.0, MIN_POSE_RATE * span):
        bad = sum(check.rejected.values())
        raise IdentifyError(
            f"{path}: {len(inside)} usable poses on {POSE_TOPIC} over the crawl's {span:.1f} s "
            f"({bad} rejected, {len(kept) - len(inside)} outside it); it needs "
            f"{MIN_POSE_RATE:g} per second: is the marker tracked?"
        )
    recording = PathRecording(
        servo.t,
        servo.reference,
        np.array([s.stamp for s in inside]),
        np.array([s.position[:2] for s in inside]),
        np.array([heading(s.orientation) for s in inside]),
        np.array(inside[0].orientation),  # a crawl may leave the robot rolled
        servo.measured,  # the pots: the servos' load tells the friction's level
    )
    return Crawl(recording, dict(check.rejected), len(kept) - len(inside))
