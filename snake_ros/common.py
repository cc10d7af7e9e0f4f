"""What every node shares: parameters declared with descriptors and ranges, a ROS session
with clean signal handling, the spin loop, flushing publishers at shutdown, and the account
of the input a node rejects (:class:`InputMonitor`, on ``/diagnostics``)."""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NoReturn

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.duration import Duration
from rclpy.exceptions import ParameterException
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.experimental.events_executor import EventsExecutor
from rclpy.node import Node
from rclpy.publisher import Publisher
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from rclpy.subscription import Subscription

from snake_dynamics.errors import SnakeError

from . import READY_TEXT

#: Period of the throttled warnings about bad input [s].
THROTTLE_S = 2.0
#: Longest wait of the executor before Python handles a pending Ctrl-C [s].
WAKE_S = 0.1
#: Longest wait, when a node stops, for subscribers to acknowledge its last messages [s].
ACK_TIMEOUT_S = 0.5
#: Period of each node's input status on /diagnostics [s].
DIAGNOSTICS_PERIOD_S = 1.0

# QoS for a lossy link (docs/ros.md, "QoS"). Publishers offer reliable keep-last, so every
# subscriber matches (a reliable one, e.g. `ros2 topic echo` or a recorder, is repaired within
# the publisher's last 10 messages; keep-last never blocks the publisher). A subscriber that
# wants the newest sample, not every one, asks for best effort: DDS then sends it each sample
# once, with no repair and no head-of-line blocking behind a lost one.

#: Every publisher of the graph: reliable, volatile, keep last 10.
PUBLISHER_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=10,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.VOLATILE,
)


#: The operator's latched stop state (std_msgs/Bool, true: stop), published by operator_node
#: and read by driver_node (docs/safety.md, "The e-stop and arming").
STOP_TOPIC = "/estop"
#: The stop state's QoS: reliable, transient local, keep last 1: a late joiner or a repaired
#: link gets the latest state first, and never an older one after it. The station publishes
#: it again every period (a heartbeat), so a link that comes back carries the current state
#: at once, without waiting for the middleware's repair of what was lost.
STOP_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=1,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)


def stream_qos(depth: int = 10) -> QoSProfile:
    """A subscription to a stream whose newest sample supersedes the rest (joint commands and
    states, poses, /clock): best effort, volatile, keep last ``depth``; it matches reliable and
    best-effort publishers alike."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        reliability=ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.VOLATILE,
    )


def flush_publishers(publishers: Iterable[Publisher[Any]]) -> None:
    """Wait (at most ``ACK_TIMEOUT_S`` in all) until the reliable subscribers of
    ``publishers`` have acknowledged every message sent: a node that stops right after a
    publish loses nothing (the middleware may send it after ``publish`` returns)."""
    deadline = time.monotonic() + ACK_TIMEOUT_S
    for pub in publishers:
        left = deadline - time.monotonic()
        if left <= 0.0:
            return
        pub.wait_for_all_acked(Duration(nanoseconds=int(left * 1e9)))


def declare_float(
    node: Node,
    name: str,
    default: float,
    low: float,
    high: float,
    description: str,
    *,
    read_only: bool = True,
) -> float:
    """Declare a double parameter with its range; returns its (possibly overridden) value.

    Read-only unless ``read_only=False``: a node that reads a parameter once at start must
    refuse a later ``set`` (``ros2 param set`` then fails) instead of answering "successful"
    and changing nothing; only a node that reacts to the change passes False."""
    descriptor = ParameterDescriptor(
        description=description,
        floating_point_range=[FloatingPointRange(from_value=low, to_value=high, step=0.0)],
        read_only=read_only,
    )
    return float(node.declare_parameter(name, float(default), descriptor).value)


def declare_string(
    node: Node,
    name: str,
    default: str,
    description: str,
    *,
    choices: tuple[str, ...] = (),
    read_only: bool = True,
) -> str:
    """Declare a string parameter (optionally one of ``choices``); returns its value.
    Read-only unless ``read_only=False``, as :func:`declare_float`."""
    descriptor = ParameterDescriptor(
        description=description,
        additional_constraints=f"one of: {', '.join(choices)}" if choices else "",
        read_only=read_only,
    )
    value = str(node.declare_parameter(name, default, descriptor).value)
    if choices and value not in choices:
        raise ParameterValueError(
            f"parameter {name} must be one of {', '.join(choices)}, got {value!r}"
        )
    return value


def declare_robot_config(node: Node) -> str:
    """Declare the read-only ``robot_config`` every node takes; returns its value."""
    return declare_string(
        node,
        "robot_config",
        "robot",
        "robot YAML file, or a name in the package's config/ folder",
        read_only=True,
    )


def declare_int(node: Node, name: str, default: int, low: int, high: int, description: str) -> int:
    """Declare an integer parameter with its range; returns its value."""
    descriptor = ParameterDescriptor(
        description=description,
        integer_range=[IntegerRange(from_value=low, to_value=high, step=1)],
        read_only=True,
    )
    return int(node.declare_parameter(name, int(default), descriptor).value)


def declare_bool(node: Node, name: str, default: bool, description: str) -> bool:
    """Declare a read-only boolean parameter; returns its value."""
    descriptor = ParameterDescriptor(description=description, read_only=True)
    return bool(node.declare_parameter(name, default, descriptor).value)


class InputMonitor:
    """The account of what a node did with its input, published on ``/diagnostics``.

    Every message a node cannot use is rejected through :meth:`reject` (a warning, throttled
    to one per ``THROTTLE_S`` per topic, and a count); one it uses after changing it (a joint
    command clamped to the joint limits) through :meth:`clamp`; other events (a simulation
    restarted) through :meth:`event`. Every ``DIAGNOSTICS_PERIOD_S`` the node publishes one
    ``DiagnosticStatus`` named ``<node>: input`` on ``/diagnostics`` (absolute, where
    diagnostics tools look): level WARN while the counts grow (since the previous status),
    else OK; message the latest problem; values every count, as ``<topic> rejected`` etc.

    Args:
        node: the node whose input this is.
    """

    def __init__(self, node: Node) -> None:
        self._node = node
        self.counts: dict[str, int] = {}  # "<topic> accepted|rejected|clamped", "<event>"
        self._reported: dict[str, int] = {}
        self._warned: dict[str, float] = {}  # key -> monotonic time of its last warning [s]
        self._latest = ""
        self._pub = node.create_publisher(DiagnosticArray, "/diagnostics", 10)
        node.create_timer(DIAGNOSTICS_PERIOD_S, self.publish)

    @property
    def rejected(self) -> int:
        """Messages rejected so far, on every topic."""
        return sum(n for key, n in self.counts.items() if key.endswith(" rejected"))

    def accept(self, topic: str) -> None:
        """Count a message of ``topic`` used as it came."""
        self._count(f"{topic} accepted")

    def reject(self, topic: str, reason: str) -> None:
        """Count a message of ``topic`` the node did not use, and warn (throttled)."""
        self._problem(f"{topic} rejected", f"rejected a message on {topic}: {reason}")

    def clamp(self, topic: str, reason: str) -> None:
        """Count a message of ``topic`` used after a change (clamped), and warn (throttled)."""
        self._problem(f"{topic} clamped", f"clamped a message on {topic}: {reason}")

    def event(self, name: str, message: str) -> None:
        """Count an event ``name`` (e.g. ``simulation restarts``) and log it (throttled)."""
        self._problem(name, message)

    def _count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1

    def _problem(self, key: str, message: str) -> None:
        self._count(key)
        self._latest = message
        now = time.monotonic()
        if now - self._warned.get(key, -math.inf) >= THROTTLE_S:
            self._warned[key] = now
            self._node.get_logger().warning(f"{message} ({self.counts[key]} so far)")

    def status(self) -> DiagnosticStatus:
        """The status now (and the counts it shows become the reference for the next)."""
        grown = any(
            n > self._reported.get(key, 0)
            for key, n in self.counts.items()
            if not key.endswith(" accepted")
        )
        self._reported = dict(self.counts)
        return DiagnosticStatus(
            level=DiagnosticStatus.WARN if grown else DiagnosticStatus.OK,
            name=f"{self._node.get_fully_qualified_name()}: input",
            message=self._latest if grown else "all input used",
            values=[KeyValue(key=k, value=str(n)) for k, n in sorted(self.counts.items())],
        )

    def publish(self) -> None:
        """Publish :meth:`status` on ``/diagnostics``."""
        array = DiagnosticArray(status=[self.status()])
        array.header.stamp = self._node.get_clock().now().to_msg()
        self._pub.publish(array)


def stamp_problem(stamp_ns: int, now_ns: int | None, ahead_s: float, behind_s: float) -> str | None:
    """Why a header stamp is unusable at the node's clock time ``now_ns`` [ns], or None.

    Args:
        stamp_ns: the stamp [ns] (0: none).
        now_ns: the node's clock [ns], or None before /clock (then only stamps <= 0 are
            a problem).
        ahead_s: stamps further ahead of the clock than this are from the future [s].
        behind_s: stamps further behind than this are stale [s].
    """
    if stamp_ns <= 0:
        return "no header stamp" if stamp_ns == 0 else "a negative header stamp"
    if now_ns is None:
        return None
    offset = (stamp_ns - now_ns) * 1e-9
    if offset > ahead_s:
        return (
            f"stamped {offset:.3f} s ahead of the clock (more than {ahead_s:g} s): check the "
            "publisher's clock and use_sim_time"
        )
    if -offset > behind_s:
        return (
            f"stamped {-offset:.3f} s behind the clock (stale: more than {behind_s:g} s): "
            "check the publisher's clock and use_sim_time"
        )
    return None


class ParameterValueError(SnakeError, ValueError):
    """A node parameter whose value the node cannot work with."""


def clock_ns(node: Node) -> int | None:
    """The node's clock [ns], or None while a simulated clock has not started (/clock)."""
    now = node.get_clock().now().nanoseconds
    return now if now > 0 else None


@contextlib.contextmanager
def session(args: list[str] | None = None) -> Iterator[threading.Event]:
    """rclpy initialised for one process's nodes; SIGINT and SIGTERM set the event it yields.

    rclpy's own signal handlers shut the context down under a running callback, whose next
    publish then raises; an exception raised from a handler can land inside rclpy's C++
    calls (taking a message) and come out as a RuntimeError. So the signals only set a flag
    that the loops poll between callbacks. On exit rclpy is shut down and the previous
    handlers are back.

    Args:
        args: command-line arguments for rclpy (None: ``sys.argv``, with ``--ros-args``).
    """
    stop = threading.Event()
    previous = {
        s: signal.signal(s, lambda _n, _f: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)
    }
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    try:
        yield stop
    finally:
        rclpy.try_shutdown()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def executor_for(node: Node) -> Executor:
    """The cheapest executor that runs every callback of ``node``.

    rclpy's ``EventsExecutor`` (in C++) costs about half the CPU per callback of the
    ``SingleThreadedExecutor``, which rebuilds its wait set in Python for every wait
    (bench/notes/2026-12-07-graph-clock.md). It supports no guard conditions and fails on a
    subscription whose callback takes ``MessageInfo`` (driver_node ages the stop state by it):
    such a node gets the ``SingleThreadedExecutor``, which also runs its ready timers before
    its subscriptions. So does a node on the robot's clock (``use_sim_time``): there the
    EventsExecutor re-checks its timers on every /clock message and, when two messages come
    before a due timer has run, runs it twice at the same time (a busy machine: duplicate
    stamps, bench/notes/2026-12-07-graph-clock.md); the SingleThreadedExecutor runs it once.

    Args:
        node: the node, with every entity it will wait on already created.

    Returns:
        A new executor, not yet holding ``node``.
    """
    with_info = Subscription.CallbackType.WithMessageInfo
    guarded = any(True for _ in node.guards)  # a generator, always truthy itself
    sim_time = bool(node.get_parameter("use_sim_time").value)
    if sim_time or guarded or any(s._callback_type == with_info for s in node.subscriptions):
        return SingleThreadedExecutor(context=node.context)
    return EventsExecutor(context=node.context)


def spin(node: Node, stop: threading.Event, until: Callable[[], bool] | None = None) -> None:
    """Run ``node``'s callbacks on :func:`executor_for`'s executor until ``stop`` is set,
    rclpy shuts down or ``until()`` is true; the executor waits at most ``WAKE_S`` at a time
    (a node on a silent /clock would otherwise never see a signal)."""
    executor = executor_for(node)
    executor.add_node(node)
    try:
        while rclpy.ok() and not stop.is_set() and (until is None or not until()):
            executor.spin_once(timeout_sec=WAKE_S)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        executor.shutdown()


#: What a node's boundary reports in one line: the project's errors (:class:`SnakeError`,
#: the one base), a parameter override rclpy refuses, and the operating system's refusals (a
#: file or device that cannot be opened).
NODE_ERRORS: tuple[type[Exception], ...] = (SnakeError, ParameterException, OSError)


def run(factory: Callable[[], Node], name: str) -> NoReturn:
    """The node's process: :func:`run_node`, then :func:`end_process` with its status."""
    end_process(run_node(factory, name))


def end_process(status: int) -> NoReturn:
    """End this node's process now, with ``status``, once :func:`run_node` has cleaned up
    (the node destroyed, its last messages acknowledged, its files closed, rclpy and its
    logging shut down): stdout and stderr flushed, then ``os._exit``. The interpreter's own
    teardown (modules, the middleware's and the JIT's destructors: 0.3-0.7 s a node, nothing
    of the node's left to do) would otherwise stretch every Ctrl-C of a graph."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


def run_node(factory: Callable[[], Node], name: str) -> int:
    """Create the node and spin it until Ctrl-C (or SIGTERM), then shut down cleanly: its
    last messages flushed (:func:`flush_publishers`), the node destroyed, rclpy shut down.
    A signal during start-up takes effect once the node is built.

    Args:
        factory: builds the node.
        name: logger name for a start-up failure.

    Returns:
        The process exit status: 0, or 1 when the node could not start or one of its
        callbacks raised one of :data:`NODE_ERRORS` (logged in one line; a node is meant to
        handle every input itself, so the second is a defect to report).
    """
    with session() as stop:
        try:
            node = factory()
        except NODE_ERRORS as exc:
            rclpy.logging.get_logger(name).fatal(f"cannot start: {exc}")
            return 1
        try:
            node.get_logger().info(READY_TEXT)
            spin(node, stop)
        except NODE_ERRORS as exc:
            node.get_logger().fatal(f"stopped by an error while running: {exc}")
            return 1
        finally:
            flush_publishers(node.publishers)
            node.destroy_node()
    return 0
