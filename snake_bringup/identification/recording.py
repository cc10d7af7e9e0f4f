"""The identification bags: each phase played on the robot (:class:`.experiment.Take`)
written as a bag (the commands, and per stamped report the servos' commanded angles from the
pulses the firmware reports and the measured angles), and read back as the
:class:`snake_dynamics.sim.identification.Recording` the fit takes.

A crawl on the floor (:mod:`.poses`) also keeps the pose sensor's readings, as
geometry_msgs/PoseStamped on ``/measured/pose`` in ``world``, on the same clock.

The reports are stamped on the robot's own clock (:func:`robot_stamps`), not on the host's
mapping of it: an emulated robot that falls behind real time under load runs slower, and the
mapping, fitted to ping/pong exchanges, stretches with it, which would stretch the servo's
time constants in the fit. The commands keep the host time they were sent at.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from snake_driver.calibration import ServoMap
from snake_driver.clock import ClockUnwrapper, RobotClock
from snake_driver.link import Measurement
from snake_dynamics.sim import PoseReading
from snake_dynamics.sim.identification import Recording
from snake_viz.bag import BagError, BagRecorder, open_reader, typestore
from snake_viz.path_compare import DEFAULT_FRAME, POSE_TOPIC

from ..plant_bridge import pulse_map
from .experiment import IdentifyError, Take

#: Topics of the identification bags.
COMMANDS = "/joint_commands"
MEASURED = "/measured/joint_states"
SERVO_TARGETS = "/measured/servo_targets"
JOINT_STATE = "sensor_msgs/msg/JointState"
#: The type of :data:`snake_viz.path_compare.POSE_TOPIC`.
POSE_TYPE = "geometry_msgs/msg/PoseStamped"


def _header(stamp: float, frame_id: str) -> Any:
    types = typestore().types
    sec = math.floor(stamp)
    return types["std_msgs/msg/Header"](
        stamp=types["builtin_interfaces/msg/Time"](sec=sec, nanosec=int((stamp - sec) * 1e9)),
        frame_id=frame_id,
    )


def _pose_stamped(stamp: float, reading: PoseReading) -> bytes:
    store = typestore()
    types = store.types
    x, y, z = (float(v) for v in reading.position)
    qx, qy, qz, qw = (float(v) for v in reading.quaternion)
    msg = types[POSE_TYPE](
        header=_header(stamp, DEFAULT_FRAME),
        pose=types["geometry_msgs/msg/Pose"](
            position=types["geometry_msgs/msg/Point"](x=x, y=y, z=z),
            orientation=types["geometry_msgs/msg/Quaternion"](x=qx, y=qy, z=qz, w=qw),
        ),
    )
    return bytes(store.serialize_cdr(msg, POSE_TYPE))


def _joint_state(names: Sequence[str], stamp: float, positions: Sequence[float]) -> bytes:
    store = typestore()
    types = store.types
    header = _header(stamp, "")
    msg = types[JOINT_STATE](
        header=header,
        name=list(names),
        position=np.asarray(positions, dtype=np.float64),
        velocity=np.empty(0),
        effort=np.empty(0),
    )
    return bytes(store.serialize_cdr(msg, JOINT_STATE))


def robot_stamps(measurements: Sequence[Measurement]) -> list[float | None]:
    """Each report's time on the robot's clock [s] (:class:`snake_driver.clock.RobotClock`:
    the MCU's own intervals, placed at the first mapped report's host stamp); None for a
    report before the clock mapping."""
    clock = RobotClock(0.0)
    return [clock.report(m.mcu_time_us, m.stamp, 0.0) for m in measurements]


def robot_offset(measurements: Sequence[Measurement], stamps: Sequence[float | None]) -> float:
    """The robot clock's origin: robot time less the MCU's time [s] (one value for every
    report of a take, :class:`snake_driver.clock.RobotClock`), from its first report with a
    robot time.

    Args:
        measurements: the take's reports, in arrival order.
        stamps: their robot times (:func:`robot_stamps`), None where none.

    Raises:
        IdentifyError: no report has a robot time.
    """
    unwrapper = ClockUnwrapper()
    for m, stamp in zip(measurements, stamps, strict=True):
        mcu_s = unwrapper.unwrap(m.mcu_time_us) * 1e-6
        if stamp is not None:
            return stamp - mcu_s
    raise IdentifyError("no telemetry report of the take has a time on the robot's clock")


def write_bag(path: Path, take: Take, servos: ServoMap) -> int:
    """The take as a bag: the commands (host time), and per stamped report (robot time,
    :func:`robot_stamps`) the servos' commanded angles (their pulses through the
    calibration's inverse) and the measured angles; the take's poses at their sample time
    on the robot's clock (:func:`robot_offset` plus the sensor's time: :mod:`.poses`).
    Returns the reports written."""
    names = servos.joint_names
    maps = {c.joint: pulse_map(c) for c in servos.channels}
    stamps = robot_stamps(take.measurements)
    bag = BagRecorder(path)
    bag.open()
    for topic in (COMMANDS, SERVO_TARGETS, MEASURED):
        bag.add_topic(topic, JOINT_STATE)
    for sent, targets in take.commands:
        bag.write(COMMANDS, int(sent * 1e9), _joint_state(names, sent, list(targets.values())))
    if take.poses:
        origin = robot_offset(take.measurements, stamps)
        bag.add_topic(POSE_TOPIC, POSE_TYPE)
        logged = -math.inf  # logged in arrival order, stamped with the sample's time
        for reading in take.poses:
            sampled = origin + reading.time
            logged = max(logged, sampled)
            bag.write(POSE_TOPIC, int(logged * 1e9), _pose_stamped(sampled, reading))
    reports = 0
    for m, stamp in zip(take.measurements, stamps, strict=True):
        if stamp is None or any(m.pulses_us[n] == 0 for n in names):
            continue  # no clock mapping yet, or a servo not driven yet
        ns = int(stamp * 1e9)
        reference = [maps[n].target(m.pulses_us[n]) for n in names]
        bag.write(SERVO_TARGETS, ns, _joint_state(names, stamp, reference))
        bag.write(MEASURED, ns, _joint_state(names, stamp, [m.positions[n] for n in names]))
        reports += 1
    bag.close()
    return reports


def read_recording(path: Path, names: Sequence[str]) -> Recording:
    """The recording of an identification bag: servo targets and measurements, matched by
    stamp.

    Raises:
        IdentifyError: an unreadable bag, or one without both topics.
    """
    store = typestore()
    series: dict[str, dict[int, list[float]]] = {SERVO_TARGETS: {}, MEASURED: {}}
    try:
        with open_reader(path) as reader:
            connections = [c for c in reader.connections if c.topic in series]
            for connection, _, raw in reader.messages(connections=connections):
                msg: Any = store.deserialize_cdr(raw, connection.msgtype)
                order = [list(msg.name).index(n) for n in names]
                stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
                series[connection.topic][stamp] = [float(msg.position[i]) for i in order]
    except (BagError, ValueError) as exc:
        raise IdentifyError(f"{path}: not an identification bag ({exc})") from None
    stamps = sorted(set(series[SERVO_TARGETS]) & set(series[MEASURED]))
    if len(stamps) < 3:
        raise IdentifyError(
            f"{path}: fewer than 3 reports with both {SERVO_TARGETS} and {MEASURED}"
        )
    return Recording(
        np.array(stamps, dtype=np.float64) * 1e-9,
        np.array([series[SERVO_TARGETS][s] for s in stamps]),
        np.array([series[MEASURED][s] for s in stamps]),
        tuple(names),
    )
