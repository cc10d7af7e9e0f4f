"""The emulated robot's physical plant as a process: serves simavr_runner's lock-step records
(firmware/tools/plant_link.h) over an inherited socket with
:class:`snake_dynamics.sim.plant.Plant`, each answered at once and the next period computed
while the MCU runs it (:func:`serve`).

Started by :class:`snake_bringup.emulator.Emulator` (``--plant FILE``) before the runner;
prints ``PLANT ready ...`` once its kernels are compiled, then answers every exchange (one
per 4 ms of emulated time, PLANT_PERIOD_US) until the runner closes the socket. SIGUSR1 says
the graph is up (:meth:`snake_bringup.emulator.Emulator.graph_ready`): the end line then
tells the lag the running graph added apart from the lag its start left
(``running_behind_ms``)::

    python -m snake_bringup.plant_bridge --fd 3 --robot config/robot.yaml \\
        --plant config/plant.yaml [--log angles.csv] [--pose-port PORT]

With ``--log`` it writes, per tick, the time [s] and every joint's angle and target [rad].
With ``--pose-port`` and a plant file with a ``pose_sensor:``, it sends each reading the
sensor delivers (:func:`snake_dynamics.sim.pose_sensor.encode`) as a UDP datagram to
127.0.0.1:PORT, at its delivery time in emulated time (``pose_sensor_node`` listens there),
and its ready line says ``pose_port=PORT``. A reading's time goes out on the MCU's clock,
as the telemetry's do (:data:`MCU_CLOCK_START_S`).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from snake_driver.calibration import ChannelCalibration, servos_of
from snake_dynamics.errors import SnakeError
from snake_dynamics.robot import Robot
from snake_dynamics.sim import Plant, PulseMap, encode, load_plant, make_plant

from .errors import BringupError
from .process import priority, raise_robot_priority

#: runner -> plant: tick, period [us], clock [Hz], width[16] and age[16] [cycles].
REQUEST = struct.Struct("=QII16I16I")
#: plant -> runner: millivolts[16].
REPLY = struct.Struct("=16H")
#: A pulse age meaning "none" [cycles].
NO_PULSE = 0xFFFFFFFF
#: The emulated time at which the firmware starts its microsecond clock, timer 1, after its
#: start-up [s]: a pose reading's emulated time less this is its time on the MCU's clock,
#: the telemetry reports' (test_firmware.py checks it against the ELF's pulses in simavr).
MCU_CLOCK_START_S = 1.2175e-3


class PlantFileError(BringupError, ValueError):
    """A robot config or plant file the plant cannot use; the message is one line."""


def pulse_map(channel: ChannelCalibration) -> PulseMap:
    """The plant's view of one joint's calibration (radians, microseconds)."""
    return PulseMap(
        channel=channel.channel,
        direction=channel.direction,
        zero_offset=channel.zero_offset,
        pulse_min_us=channel.pulse_min_us,
        pulse_max_us=channel.pulse_max_us,
        travel=channel.travel,
    )


def build_plant(robot: Robot, plant_file: Path) -> Plant:
    """The plant of a robot (body, channels; read once by :func:`main`) and a plant file
    (servos, pots, mass; its ``engine``).

    Raises:
        PlantFileError: the robot's servo map, or the plant file, is unreadable or invalid
            (one line naming it).
    """
    try:
        model, servos = robot.model, servos_of(robot)
        params = load_plant(plant_file, model.joint_names)
        pulses = servos.by_joint()
        return make_plant(model, [pulse_map(pulses[name]) for name in model.joint_names], params)
    except (SnakeError, OSError) as exc:
        raise PlantFileError(str(exc)) from None


@dataclass
class ServeStats:
    """How a plant kept up with the emulated MCU.

    Attributes:
        ticks: records answered.
        emulated_s: emulated time from the first record to the last [s].
        wall_s: wall-clock time over the same records [s].
        behind_s: the most the emulated clock lagged the wall clock since the first record
            [s] (the runner runs paced: near 0 while it keeps real time).
        busy_s: wall time spent stepping the plant [s].
        ignored_pulses: pulses outside the servos' decoder range
            (:data:`snake_dynamics.sim.plant.DECODER_US`), which the servos did not follow.
        missed_compares: simavr's pulses that missed their compare match (no OCR
            double-buffering), taken as the pulse a silicon MCU sends
            (:data:`snake_dynamics.sim.plant.PWM_PERIOD_US`).
        poses_sent: pose sensor readings sent (none without a pose sensor or a port).
        behind_at_ready_s: how far behind the emulated clock was when the graph reported
            ready (None: it never did; :func:`main` takes the report as SIGUSR1) [s].
        behind_running_s: the most the emulated clock fell behind after that, beyond
            ``behind_at_ready_s`` [s]: what the running graph cost it, apart from the
            lag its nodes' start left, which the runner then catches up.
        priority: the plant process's CPU priority (:func:`process.priority`; raised by
            :func:`process.robot_process` where the user may).
    """

    ticks: int = 0
    emulated_s: float = 0.0
    wall_s: float = 0.0
    behind_s: float = 0.0
    busy_s: float = 0.0
    ignored_pulses: int = 0
    missed_compares: int = 0
    poses_sent: int = 0
    behind_at_ready_s: float | None = None
    behind_running_s: float = 0.0
    priority: str = ""

    def __str__(self) -> str:
        rate = self.emulated_s / self.wall_s if self.wall_s > 0 else 0.0
        running = (
            "n/a"
            if self.behind_at_ready_s is None
            else f"{self.behind_running_s * 1e3:.1f} (at ready {self.behind_at_ready_s * 1e3:.1f})"
        )
        return (
            f"ticks={self.ticks} emulated_s={self.emulated_s:.3f} wall_s={self.wall_s:.3f} "
            f"rate={rate:.3f} max_behind_ms={self.behind_s * 1e3:.1f} "
            f"running_behind_ms={running} "
            f"plant_busy={self.busy_s / self.wall_s if self.wall_s > 0 else 0.0:.1%} "
            f"ignored_pulses={self.ignored_pulses} missed_compares={self.missed_compares} "
            f"poses_sent={self.poses_sent} "
            f"priority={self.priority}"
        )


def serve(
    plant: Plant,
    sock: socket.socket,
    log: IO[str] | None = None,
    send_pose: Callable[[bytes], object] | None = None,
    graph_ready: threading.Event | None = None,
) -> ServeStats:
    """Answer the runner's records until it closes the socket; hand each pose sensor
    reading's datagram to ``send_pose`` when it is delivered (None: drop them). Once
    ``graph_ready`` is set, the stats also count the lag the running graph adds.

    Each record is answered at once from the state its period was computed to ahead of it;
    then the plant takes the record's pulses and computes the next period while the MCU
    runs it, so the two share the cores instead of taking turns. That is exact whenever
    every servo's dead time is at least a period (a pulse that ended by t acts after
    t + period, outside the period computed ahead); a joint's power (pulses, or limp)
    follows one period later than its pulses. With a shorter dead time each record's pulses
    are taken before its period is computed, and the runner waits for it.
    """
    request = bytearray(REQUEST.size)
    view = memoryview(request)
    stats = ServeStats(priority=priority())
    n = plant.model.n_joints
    shortest_dead_time = float(min(plant.params.servo.dead_times, default=0.0))
    t_first = wall_first = 0.0
    while True:
        got = 0
        while got < REQUEST.size:
            chunk = sock.recv_into(view[got:], REQUEST.size - got)
            if chunk == 0:
                return stats
            got += chunk
        wall = time.monotonic()
        fields = REQUEST.unpack(request)
        tick, period_us, freq = fields[0], fields[1], float(fields[2])
        widths = [w / freq * 1e6 for w in fields[3:19]]
        ages = [math.inf if a == NO_PULSE else a / freq for a in fields[19:35]]
        t, period = tick * period_us * 1e-6, period_us * 1e-6
        ahead = period <= shortest_dead_time  # this record's targets act after t + period
        if not ahead:
            plant.take_pulses(t, widths, ages)
        plant.advance(t)  # done already when the last record's pass went ahead
        sock.sendall(REPLY.pack(*(int(v) for v in plant.millivolts(len(widths)))))
        for reading in plant.pose_readings():
            if send_pose is not None:
                send_pose(encode(reading._replace(time=reading.time - MCU_CLOCK_START_S)))
                stats.poses_sent += 1
        if ahead:
            plant.take_pulses(t, widths, ages)
        if log is not None:
            row = [*plant.q, *(plant.targets.latest(j) for j in range(n))]
            log.write(f"{t:.3f}," + ",".join(f"{x:.6f}" for x in row) + "\n")
        if ahead:  # the next period, while the MCU runs it
            plant.advance(t + period)
        if stats.ticks == 0:
            t_first, wall_first = t, wall
        stats.ticks += 1
        stats.emulated_s, stats.wall_s = t - t_first, wall - wall_first
        behind = stats.wall_s - stats.emulated_s
        stats.behind_s = max(stats.behind_s, behind)
        if graph_ready is not None and graph_ready.is_set():
            if stats.behind_at_ready_s is None:
                stats.behind_at_ready_s = behind
            stats.behind_running_s = max(stats.behind_running_s, behind - stats.behind_at_ready_s)
        stats.busy_s += time.monotonic() - wall
        stats.ignored_pulses = plant.ignored_pulses
        stats.missed_compares = plant.missed_compares


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point (see the module's docstring)."""
    parser = argparse.ArgumentParser(prog="plant_bridge", description=__doc__.splitlines()[0])
    parser.add_argument("--fd", type=int, required=True, help="the socket to the runner")
    parser.add_argument("--robot", type=Path, required=True, help="robot config (YAML)")
    parser.add_argument("--plant", type=Path, required=True, help="plant file (YAML)")
    parser.add_argument("--log", type=Path, help="write time, angles and targets here (CSV)")
    parser.add_argument("--pose-port", type=int, help="send pose readings to this UDP port")
    args = parser.parse_args(argv)
    try:
        plant = build_plant(Robot.load(args.robot), args.plant)
    except SnakeError as exc:
        print(exc, file=sys.stderr)
        return 1
    plant.warm_up()
    raise_robot_priority()  # now: compiling at a real-time priority would hold a core
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))  # the log ends whole
    graph_ready = threading.Event()  # the Emulator's word that the graph is up
    signal.signal(signal.SIGUSR1, lambda signum, frame: graph_ready.set())
    sock = socket.socket(fileno=args.fd)
    pose_port = args.pose_port if plant.pose_sensor is not None else None
    ready = "" if pose_port is None else f"pose_port={pose_port} "
    print(f"PLANT ready {ready}{plant.params.servo.describe()}", flush=True)
    log = args.log.open("w") if args.log else None
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def send_pose(datagram: bytes) -> None:
        with contextlib.suppress(OSError):  # nobody listening (yet): lost, as on a network
            udp.sendto(datagram, ("127.0.0.1", pose_port))

    try:
        if log is not None:
            names = plant.model.joint_names
            log.write(",".join(["t", *names, *(f"{j}_target" for j in names)]) + "\n")
        stats = serve(plant, sock, log, None if pose_port is None else send_pose, graph_ready)
    finally:
        udp.close()
        if log is not None:
            log.close()
    print(f"PLANT end {stats}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
