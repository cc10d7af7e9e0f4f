"""recorder_node: records topics into a rosbag2 MCAP bag (``rosbags``), as received.

Subscriptions are raw (``raw=True``): the CDR bytes that arrive are stored as they are,
never deserialised and serialised again. Topics whose type the design fixes
(:data:`~snake_viz.bag.DEFAULT_TOPICS`) are subscribed at once, before their publishers
start; the others when the ROS graph first shows them with a type (checked every
``discovery_period``), so the messages they publish before that are not recorded. A topic
enters the bag with its first message, with the QoS profiles its publishers offer then
(``offered_qos_profiles``, as ``ros2 bag record`` stores them). Subscriptions are reliable
unless a publisher is best-effort, and transient-local when every publisher is (latched
topics), with a deep queue, so the recorder keeps up with the demo's rates.

Every ``flush_period`` (default 1 s) the bag is flushed to disk and ended there (see
:mod:`snake_viz.bag`): a recorder killed with SIGKILL leaves a bag any MCAP or rosbag2
reader opens as it is, which lacks at most the messages of the last ``flush_period``
(``snake bag repair`` for the rare kill in the middle of a write). Ctrl-C or SIGTERM
closes the bag properly.

Parameters:
    output (string): bag folder to create (default ``runs/bag-YYYYmmdd-HHMMSS``).
    topics (string[]): topics to record (default: those of DEFAULT_TOPICS).
    flush_period (double): seconds between flushes to disk.
    discovery_period (double): seconds between looks at the ROS graph for new topics.
    queue_depth (int): subscription queue depth per topic.
"""

from __future__ import annotations

import datetime as dt_module
import math
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

from rcl_interfaces.msg import ParameterDescriptor, ParameterType
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosbags.interfaces import (
    Qos,
    QosDurability,
    QosHistory,
    QosLiveliness,
    QosReliability,
    QosTime,
)

from snake_ros.common import (
    declare_float,
    declare_int,
    declare_string,
    run,
    session,
    spin,
)

from .bag import DEFAULT_TOPICS, FLUSH_PERIOD_S, BagError, BagRecorder, message_class

#: Subscription queue depth per topic: about 5 s of the fastest topic at 200 Hz.
QUEUE_DEPTH = 1000


def default_output() -> Path:
    """``runs/bag-<date>-<time>``, the default bag folder."""
    return Path("runs") / f"bag-{dt_module.datetime.now():%Y%m%d-%H%M%S}"


def _time(duration: Any) -> QosTime:
    ns = int(duration.nanoseconds)
    if ns >= 2**63 - 1 or ns < 0:  # rclpy's Infinite: rosbag2 stores its DDS value
        return QosTime(2147483647, 4294967295)
    return QosTime(ns // 10**9, ns % 10**9)


def to_rosbags_qos(profile: QoSProfile) -> Qos:
    """A publisher's rclpy QoS profile as ``rosbags`` stores it in ``offered_qos_profiles``."""
    return Qos(
        QosHistory(int(profile.history)),
        int(profile.depth),
        QosReliability(int(profile.reliability)),
        QosDurability(int(profile.durability)),
        _time(profile.deadline),
        _time(profile.lifespan),
        QosLiveliness(int(profile.liveliness)),
        _time(profile.liveliness_lease_duration),
        bool(profile.avoid_ros_namespace_conventions),
    )


class RecorderNode(Node):
    """Records topics into a bag; see the module docstring for parameters and guarantees.

    Args:
        overrides: parameter values that replace the defaults (``snake record`` uses them).
    """

    def __init__(self, **overrides: Any) -> None:
        super().__init__(
            "recorder_node",
            parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()],
        )
        output = declare_string(self, "output", "", "bag folder to create", read_only=True)
        topics: list[str] = self.declare_parameter(
            "topics",
            list(DEFAULT_TOPICS),
            ParameterDescriptor(
                type=ParameterType.PARAMETER_STRING_ARRAY,
                description="topics to record",
                read_only=True,
            ),
        ).value
        flush = declare_float(
            self, "flush_period", FLUSH_PERIOD_S, 0.05, 60.0, "time between flushes [s]"
        )
        discovery = declare_float(
            self, "discovery_period", 0.1, 0.01, 10.0, "time between graph looks [s]"
        )
        self._depth = declare_int(
            self, "queue_depth", QUEUE_DEPTH, 1, 100000, "subscription queue depth"
        )
        self._wanted = [self.resolve_topic_name(t) for t in (topics or list(DEFAULT_TOPICS))]
        self._subscribed: dict[str, tuple[str, Any]] = {}  # topic -> (type, subscription)
        self.bag = BagRecorder(Path(output) if output else default_output())
        self.bag.open()
        for topic in self._wanted:
            msgtype = DEFAULT_TOPICS.get(topic)
            if msgtype is not None:
                self._subscribe(topic, msgtype)
        self.create_timer(discovery, self._discover)
        self.create_timer(flush, self.bag.flush)
        self._discover()
        self.get_logger().info(
            f"recording {', '.join(self._wanted)} to {self.bag.path} (flushed every {flush:g} s)"
        )

    def _qos(self, topic: str) -> QoSProfile:
        """Reliable unless a publisher is best-effort; transient-local if all publishers are."""
        offered = [p.qos_profile for p in self.get_publishers_info_by_topic(topic)]
        best_effort = any(q.reliability == ReliabilityPolicy.BEST_EFFORT for q in offered)
        latched = bool(offered) and all(
            q.durability == DurabilityPolicy.TRANSIENT_LOCAL for q in offered
        )
        return QoSProfile(
            history=HistoryPolicy.KEEP_LAST,
            depth=self._depth,
            reliability=(
                ReliabilityPolicy.BEST_EFFORT if best_effort else ReliabilityPolicy.RELIABLE
            ),
            durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
        )

    def _subscribe(self, topic: str, msgtype: str) -> None:
        try:
            cls = message_class(msgtype)
        except BagError as exc:
            self.get_logger().error(f"not recording {topic}: {exc}", once=True)
            return
        sub = self.create_subscription(
            cls, topic, partial(self._on_message, topic, msgtype), self._qos(topic), raw=True
        )
        self._subscribed[topic] = (msgtype, sub)

    def _discover(self) -> None:
        """Subscribe to wanted topics that appeared in the graph with their type."""
        for topic, types in self.get_topic_names_and_types():
            if topic not in self._wanted or not types:
                continue
            known = self._subscribed.get(topic)
            if known is None:
                if len(types) > 1:
                    self.get_logger().warning(
                        f"{topic} has several types {types}; recording {types[0]}"
                    )
                self._subscribe(topic, types[0])
            elif known[0] not in types and topic not in self.bag.topics:
                self.get_logger().warning(f"{topic} is {types[0]}, not {known[0]}; resubscribing")
                self.destroy_subscription(known[1])
                self._subscribe(topic, types[0])

    def _on_message(self, topic: str, msgtype: str, data: bytes) -> None:
        stamp = self.get_clock().now().nanoseconds
        try:
            if topic not in self.bag.topics:
                offered = [
                    to_rosbags_qos(p.qos_profile) for p in self.get_publishers_info_by_topic(topic)
                ]
                self.bag.add_topic(topic, msgtype, offered)
            self.bag.write(topic, stamp, data)
        except BagError as exc:
            self.get_logger().error(f"cannot record {topic}: {exc}", throttle_duration_sec=2.0)

    def destroy_node(self) -> None:
        """Close the bag (summary, footer, metadata.yaml), then the node."""
        self.bag.close()
        counts = ", ".join(f"{t}: {n}" for t, n in self.bag.counts.items()) or "no messages"
        self.get_logger().info(f"wrote {self.bag.path} ({counts})")
        super().destroy_node()


def record(duration: float | None = None, **overrides: Any) -> int:
    """Run a :class:`RecorderNode` in this process until ``duration`` [s] (None: forever),
    Ctrl-C or SIGTERM, then close the bag (what ``snake record`` does).

    Args:
        duration: how long to record [s] of wall time.
        overrides: parameter values (output, topics, flush_period, ...).

    Returns:
        0, or 130 when stopped by a signal.

    Raises:
        BagError: the bag cannot be created.
    """
    with session(args=[]) as stop:
        node = RecorderNode(**overrides)
        try:
            deadline = math.inf if duration is None else time.monotonic() + duration
            spin(node, stop, until=lambda: time.monotonic() >= deadline)
        finally:
            node.destroy_node()
        return 130 if stop.is_set() else 0


def main() -> None:
    """Entry point of the ``recorder_node`` console script."""
    sys.exit(run(RecorderNode, "recorder_node"))


if __name__ == "__main__":
    main()
