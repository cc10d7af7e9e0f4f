"""Each node spins on the cheapest executor that runs all of its callbacks
(snake_ros.common.executor_for): rclpy's EventsExecutor, unless the node has a guard condition
or a subscription that takes MessageInfo, which the EventsExecutor does not support, or follows
the robot's clock, where it may run a timer twice at one time.

References: the executor's class, and message counts and order on a node spun by
snake_ros.common.spin (every published message heard, each timer tick counted); waits are
conditions with deadlines.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

rclpy = pytest.importorskip("rclpy")
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.signals import SignalHandlerOptions  # noqa: E402
from rclpy.subscription import MessageInfo  # noqa: E402
from std_msgs.msg import Int32  # noqa: E402

from snake_ros.common import PUBLISHER_QOS, executor_for, spin  # noqa: E402

pytestmark = pytest.mark.ros

DEADLINE_S = 30.0


@pytest.fixture
def node() -> Iterator[Node]:
    """A node on rclpy's default context (``spin`` runs while ``rclpy.ok()``)."""
    rclpy.init(args=[], signal_handler_options=SignalHandlerOptions.NO)
    made = rclpy.create_node("executor_test")
    try:
        yield made
    finally:
        made.destroy_node()
        rclpy.try_shutdown()


def test_executor_for_takes_the_events_executor_unless_it_cannot(node: Node) -> None:
    node.create_timer(0.1, lambda: None)
    node.create_subscription(Int32, "plain", lambda _m: None, PUBLISHER_QOS)
    assert not isinstance(executor_for(node), SingleThreadedExecutor)  # the EventsExecutor

    def with_info(_msg: Int32, _info: MessageInfo) -> None:
        pass

    sub = node.create_subscription(Int32, "with_info", with_info, PUBLISHER_QOS)
    assert isinstance(executor_for(node), SingleThreadedExecutor)
    node.destroy_subscription(sub)
    assert not isinstance(executor_for(node), SingleThreadedExecutor)
    node.create_guard_condition(lambda: None)
    assert isinstance(executor_for(node), SingleThreadedExecutor)


def test_a_node_on_the_robot_s_clock_keeps_the_single_threaded_executor(node: Node) -> None:
    """On sim time rclpy's EventsExecutor may run a timer twice at one /clock time (two clock
    messages before the due timer ran: 1-3 duplicates in 1500 ticks with both cores busy,
    bench/notes/2026-12-07-graph-clock.md); the SingleThreadedExecutor runs it once."""
    node.create_timer(0.1, lambda: None)
    assert not isinstance(executor_for(node), SingleThreadedExecutor)
    node.set_parameters([Parameter("use_sim_time", value=True)])
    assert isinstance(executor_for(node), SingleThreadedExecutor)


def test_spin_on_the_events_executor_runs_timers_and_subscriptions(node: Node) -> None:
    heard: list[int] = []
    sent = [0]
    pub = node.create_publisher(Int32, "counts", PUBLISHER_QOS)
    node.create_subscription(Int32, "counts", lambda m: heard.append(m.data), PUBLISHER_QOS)

    def tick() -> None:  # wait for the subscription's match, then publish 1, 2, ...
        if pub.get_subscription_count() and sent[0] < 50:
            sent[0] += 1
            pub.publish(Int32(data=sent[0]))

    node.create_timer(0.005, tick)
    assert not isinstance(executor_for(node), SingleThreadedExecutor)
    deadline = time.monotonic() + DEADLINE_S
    spin(node, threading.Event(), until=lambda: len(heard) >= 50 or time.monotonic() > deadline)
    assert heard == list(range(1, 51))  # reliable, keep last 10, in order: nothing lost


def test_spin_returns_when_stopped_on_the_events_executor(node: Node) -> None:
    stop = threading.Event()
    node.create_subscription(Int32, "silent", lambda _m: None, PUBLISHER_QOS)  # never ready
    timer = threading.Timer(0.2, stop.set)
    timer.start()
    thread = threading.Thread(target=spin, args=(node, stop), daemon=True)
    thread.start()
    thread.join(DEADLINE_S)
    assert not thread.is_alive(), "spin did not return after stop was set"
    timer.join()
