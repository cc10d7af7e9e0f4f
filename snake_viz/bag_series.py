"""The two JointState series of a recorded bag, for the comparison, and the poses of the
predicted base (its odometry) and of the measured one (no ROS)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from operator import attrgetter
from pathlib import Path
from typing import Any

import numpy as np

from .compare import (
    MEASURED_TOPIC,
    SIM_TOPIC,
    CompareError,
    JointSeries,
    SampleBuffer,
)
from .path_compare import PoseSample


def read_bag(
    bag_path: Path,
    names: Sequence[str] | None = None,
    topics: tuple[str, str] = (SIM_TOPIC, MEASURED_TOPIC),
) -> tuple[JointSeries, JointSeries]:
    """The two JointState series of a rosbag2 bag, by header stamp.

    The bag is read through :func:`snake_viz.bag.open_reader`, as ``snake replay`` reads
    it: an interrupted recording is recovered first.

    Args:
        bag_path: the bag folder (MCAP or sqlite3) or a single ``.mcap``/``.db3`` file.
        names: joint names (None: those of the first simulated message).
        topics: (simulated, measured) topic names.

    Raises:
        CompareError: no such bag, unreadable bag, missing topic or wrong message type.
    """
    from .bag import open_reader, typestore

    path = Path(bag_path)
    samples: dict[str, list[tuple[float, list[str], list[float]]]] = {t: [] for t in topics}
    with _bag_errors(path), open_reader(path) as reader:
        present = {c.topic: c.msgtype for c in reader.connections}
        for topic in topics:
            if topic not in present:
                raise CompareError(
                    f"{path}: no topic {topic} (it has {', '.join(sorted(present)) or 'none'})"
                )
            if present[topic] != "sensor_msgs/msg/JointState":
                raise CompareError(
                    f"{path}: {topic} is {present[topic]}, expected sensor_msgs/msg/JointState"
                )
        wanted = [c for c in reader.connections if c.topic in topics]
        for conn, _time, raw in reader.messages(connections=wanted):
            msg: Any = typestore().deserialize_cdr(raw, conn.msgtype)
            stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            samples[conn.topic].append((stamp, list(msg.name), list(msg.position)))
    if names is None:
        first = samples[topics[0]]
        if not first:
            raise CompareError(f"{path}: no messages on {topics[0]}")
        names = first[0][1]
    out = []
    for topic in topics:
        buf = SampleBuffer(names)
        for stamp, msg_names, positions in samples[topic]:
            buf.append(stamp, msg_names, positions)
        if len(buf) == 0:
            raise CompareError(f"{path}: no messages on {topic} name the joints {list(names)}")
        out.append(buf.series())
    return out[0], out[1]


#: The pose message types a bag's pose topics may hold, and where the pose is in each.
POSE_TYPES = {"nav_msgs/msg/Odometry": "pose.pose", "geometry_msgs/msg/PoseStamped": "pose"}


def read_poses(bag_path: Path, topic: str, msgtype: str) -> list[PoseSample] | None:
    """The poses on ``topic`` in a bag, in the bag's (arrival) order; None without the topic.

    Args:
        bag_path: the bag folder or file (see :func:`read_bag`).
        topic: the topic.
        msgtype: its expected type, a key of :data:`POSE_TYPES`.

    Raises:
        CompareError: unreadable bag, or the topic of another type.
    """
    from .bag import open_reader, typestore

    path = Path(bag_path)
    samples: list[PoseSample] = []
    with _bag_errors(path), open_reader(path) as reader:
        wanted = [c for c in reader.connections if c.topic == topic]
        if not wanted:
            return None
        if wanted[0].msgtype != msgtype:
            raise CompareError(f"{path}: {topic} is {wanted[0].msgtype}, expected {msgtype}")
        for conn, record_ns, raw in reader.messages(connections=wanted):
            msg: Any = typestore().deserialize_cdr(raw, conn.msgtype)
            pose = attrgetter(POSE_TYPES[msgtype])(msg)
            p, o = pose.position, pose.orientation
            samples.append(
                PoseSample(
                    msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9,
                    msg.header.frame_id,
                    (p.x, p.y, p.z),
                    (o.x, o.y, o.z, o.w),
                    record_ns * 1e-9,  # its arrival on the recorder's clock
                )
            )
    return samples


def read_stamps(bag_path: Path, topic: str) -> list[float] | None:
    """The header stamps [s] of the messages on ``topic`` in a bag, in arrival order; None
    without the topic (see :func:`read_bag` for the bag).

    Raises:
        CompareError: unreadable bag.
    """
    from .bag import open_reader, typestore

    path = Path(bag_path)
    with _bag_errors(path), open_reader(path) as reader:
        wanted = [c for c in reader.connections if c.topic == topic]
        if not wanted:
            return None
        stamps = []
        for conn, _time, raw in reader.messages(connections=wanted):
            msg: Any = typestore().deserialize_cdr(raw, conn.msgtype)
            stamps.append(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)
    return stamps


def read_deflections(
    bag_path: Path, topic: str
) -> tuple[tuple[str, ...], np.ndarray, np.ndarray] | None:
    """The elastic coordinates on ``topic`` (sensor_msgs/JointState, dynamics_node's
    ``link_deflections``) in a bag: their names, the stamps [s], (N,), and their values [rad
    or m], (N, n_e), of the messages that name what the first one names; None without the
    topic or a message on it (see :func:`read_bag` for the bag).

    Raises:
        CompareError: unreadable bag, or the topic of another type.
    """
    from .bag import open_reader, typestore

    path = Path(bag_path)
    names: tuple[str, ...] = ()
    stamps: list[float] = []
    rows: list[list[float]] = []
    with _bag_errors(path), open_reader(path) as reader:
        wanted = [c for c in reader.connections if c.topic == topic]
        if not wanted:
            return None
        kind = "sensor_msgs/msg/JointState"
        if wanted[0].msgtype != kind:
            raise CompareError(f"{path}: {topic} is {wanted[0].msgtype}, expected {kind}")
        for conn, _time, raw in reader.messages(connections=wanted):
            msg: Any = typestore().deserialize_cdr(raw, conn.msgtype)
            names = names or tuple(msg.name)
            if tuple(msg.name) == names and len(msg.position) == len(names):
                stamps.append(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)
                rows.append(list(msg.position))
    if not rows:
        return None
    return names, np.array(stamps), np.array(rows, dtype=float)


@contextmanager
def _bag_errors(path: Path) -> Iterator[None]:
    """A bag that cannot be read, as one CompareError naming it."""
    from rosbags.rosbag2.errors import ReaderError
    from rosbags.serde import SerdeError

    from .bag import BagError

    try:
        yield
    except CompareError:
        raise
    except BagError as exc:
        raise CompareError(str(exc)) from None
    except (ReaderError, SerdeError, KeyError, ValueError) as exc:
        raise CompareError(f"{path}: cannot read the bag: {exc}") from None
