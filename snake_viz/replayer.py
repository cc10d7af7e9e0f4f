"""replay_node: publishes a recorded bag's topics with their original timing, and /clock.

Reads any rosbag2 folder ``rosbags`` reads (MCAP or sqlite3 storage; this package's
recorder or ``ros2 bag record``; an interrupted MCAP bag is recovered first, see
:func:`snake_viz.bag.recover`). Each message goes out at its recorded receive time, with
gaps divided by ``rate``, as the serialised bytes from the bag (no deserialisation). One
publisher per topic, with the reliability and durability its recording publishers offered.

``/clock`` (rosgraph_msgs/Clock) carries the bag's time: before every message (so a node on
``use_sim_time`` never sees a message from its future), and ``clock_rate`` times a second
of wall time in between. With ``loop`` the bag starts over at its end and /clock jumps back
to the bag's start, as with ``ros2 bag play --loop``.

Before the first message the node waits until every publisher has matched
``wait_for_subscribers`` subscriptions (at most 30 s), then ``delay`` seconds (discovery of
subscribers it does not wait for); it exits when the bag is done (unless ``loop``), once
reliable subscribers have acknowledged everything (at most 0.5 s).

Parameters:
    bag (string): the bag folder (required).
    rate (double): playback speed factor (2.0: twice as fast), within
        :data:`snake_viz.defaults.REPLAY_RATES`.
    loop (bool): play again from the start at the end.
    delay (double): wait before the first message [s].
    clock_rate (double): /clock messages per wall-clock second between messages [Hz]; 0
        for /clock only with the messages.
    topics (string[]): topics to play (default: all in the bag).
    wait_for_subscribers (int): subscriptions every topic waits for before playing.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import rclpy
from rcl_interfaces.msg import ParameterDescriptor, ParameterType
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosbags.interfaces import Connection, QosDurability, QosReliability
from rosgraph_msgs.msg import Clock

from snake_ros import READY_TEXT
from snake_ros.common import (
    NODE_ERRORS,
    ParameterValueError,
    declare_bool,
    declare_float,
    declare_int,
    declare_string,
    flush_publishers,
    session,
)

from .bag import BagError, message_class, open_reader, playback_schedule
from .defaults import REPLAY_RATES

#: Queue depth of the replay publishers.
QUEUE_DEPTH = 100
#: Longest wait for ``wait_for_subscribers`` [s].
SUBSCRIBER_TIMEOUT_S = 30.0


def publisher_qos(connection: Connection) -> QoSProfile:
    """Reliable unless the recording's publishers were all best-effort; transient-local if
    they all were (a latched topic stays latched)."""
    offered = list(getattr(connection.ext, "offered_qos_profiles", []))
    best_effort = bool(offered) and all(
        q.reliability == QosReliability.BEST_EFFORT for q in offered
    )
    latched = bool(offered) and all(q.durability == QosDurability.TRANSIENT_LOCAL for q in offered)
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=QUEUE_DEPTH,
        reliability=ReliabilityPolicy.BEST_EFFORT if best_effort else ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
    )


class ReplayNode(Node):
    """Publishes a bag; see the module docstring for parameters and timing.

    Raises:
        BagError: the bag cannot be read.
        ParameterValueError: no bag given.
    """

    def __init__(self) -> None:
        super().__init__("replay_node")
        bag = declare_string(self, "bag", "", "bag folder to play", read_only=True)
        self.rate = declare_float(self, "rate", 1.0, *REPLAY_RATES, "playback speed factor")
        self.loop = declare_bool(self, "loop", False, "start over at the end")
        self.delay = declare_float(self, "delay", 1.0, 0.0, 60.0, "wait before playing [s]")
        self.clock_rate = declare_float(self, "clock_rate", 100.0, 0.0, 1000.0, "/clock [Hz]")
        self.wait_for = declare_int(
            self, "wait_for_subscribers", 0, 0, 1000, "subscribers each topic waits for"
        )
        only: list[str] | None = self.declare_parameter(
            "topics",
            Parameter.Type.STRING_ARRAY,
            ParameterDescriptor(
                type=ParameterType.PARAMETER_STRING_ARRAY,
                description="topics to play (default: all)",
                read_only=True,
            ),
        ).value
        if not bag:
            raise ParameterValueError("parameter bag is required: the bag folder to play")
        self.bag = Path(bag)
        self.counts: dict[str, int] = {}
        self._pubs: dict[str, Any] = {}
        with open_reader(self.bag) as reader:
            for conn in reader.connections:
                if (only and conn.topic not in only) or conn.topic in self._pubs:
                    continue
                try:
                    cls = message_class(conn.msgtype)
                except BagError as exc:
                    self.get_logger().warning(f"skipping {conn.topic}: {exc}")
                    continue
                self._pubs[conn.topic] = self.create_publisher(cls, conn.topic, publisher_qos(conn))
                self.counts[conn.topic] = 0
            duration = reader.duration * 1e-9
        self._clock_pub = self.create_publisher(Clock, "/clock", 10)
        self._last_clock = -1
        self.get_logger().info(
            f"replaying {self.bag} ({duration:.1f} s, {len(self._pubs)} topics) at rate "
            f"{self.rate:g}{' in a loop' if self.loop else ''}"
        )

    def _publish_clock(self, stamp_ns: int) -> None:
        if stamp_ns != self._last_clock:
            msg = Clock()
            msg.clock.sec, msg.clock.nanosec = divmod(stamp_ns, 10**9)
            self._clock_pub.publish(msg)
            self._last_clock = stamp_ns

    def play(self, stop: threading.Event) -> bool:
        """Play the bag once (or until ``stop``) on :func:`snake_viz.bag.playback_schedule`;
        True if it played to the end. Never early: each message waits until it is due."""
        with open_reader(self.bag) as reader:
            conns = [c for c in reader.connections if c.topic in self._pubs]
            messages = ((stamp, (c.topic, data)) for c, stamp, data in reader.messages(conns))
            wall0 = time.monotonic()
            for due, clock, item in playback_schedule(
                messages, reader.start_time, self.rate, self.clock_rate
            ):
                if stop.wait(max(0.0, wall0 + due - time.monotonic())):
                    return False
                self._publish_clock(clock)
                if item is not None:
                    topic, data = item
                    self._pubs[topic].publish(bytes(data))
                    self.counts[topic] += 1
        return True

    def _wait_for_subscribers(self, stop: threading.Event) -> None:
        """Wait (at most ``SUBSCRIBER_TIMEOUT_S``) until every publisher, /clock included,
        has matched ``wait_for_subscribers`` subscriptions."""
        pubs = [*self._pubs.values(), self._clock_pub]
        deadline = time.monotonic() + SUBSCRIBER_TIMEOUT_S
        while any(p.get_subscription_count() < self.wait_for for p in pubs):
            if time.monotonic() > deadline:
                self.get_logger().warning(
                    f"not every topic has {self.wait_for} subscribers after "
                    f"{SUBSCRIBER_TIMEOUT_S:g} s; playing anyway"
                )
                return
            if stop.wait(0.01):
                return

    def run(self, stop: threading.Event) -> None:
        """Wait for subscribers and ``delay``, then play (again and again with ``loop``)
        until ``stop``; then wait (bounded) until reliable subscribers have every message."""
        waited = time.monotonic()
        self._wait_for_subscribers(stop)
        if stop.wait(self.delay):
            return
        began = time.monotonic()
        self.get_logger().info(f"playing (after {began - waited:.2f} s of waiting)")
        while self.play(stop) and self.loop and not stop.is_set():
            self._last_clock = -1
        played = time.monotonic() - began
        flush_publishers([*self._pubs.values(), self._clock_pub])
        counts = ", ".join(f"{t}: {n}" for t, n in self.counts.items()) or "no messages"
        self.get_logger().info(f"published {counts} in {played:.3f} s")


def replay() -> int:
    """Run a :class:`ReplayNode` until the bag is done or Ctrl-C / SIGTERM.

    Returns:
        The exit status: 0 (played to the end), 130 (stopped by Ctrl-C or SIGTERM), or 1
        (the node could not start; logged in one line).
    """
    with session() as stop:
        node = None
        try:
            node = ReplayNode()
            node.get_logger().info(READY_TEXT)
            node.run(stop)
        except NODE_ERRORS as exc:
            rclpy.logging.get_logger("replay_node").fatal(f"cannot start: {exc}")
            return 1
        finally:
            if node is not None:
                node.destroy_node()
        return 130 if stop.is_set() else 0


def main() -> None:
    """Entry point of the ``replay_node`` console script (status 0 after Ctrl-C, as the
    other nodes)."""
    status = replay()
    sys.exit(0 if status == 130 else status)


if __name__ == "__main__":
    main()
