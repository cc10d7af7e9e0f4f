"""What every node shares: parameters declared with descriptors and ranges, a ROS session
with clean signal handling, the spin loop, and flushing publishers at shutdown."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import rclpy
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.duration import Duration
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.publisher import Publisher
from rclpy.signals import SignalHandlerOptions

from snake_dynamics.errors import SnakeDynamicsError

from . import READY_TEXT

#: Period of the throttled warnings about bad input [s].
THROTTLE_S = 2.0
#: Longest wait of the executor before Python handles a pending Ctrl-C [s].
WAKE_S = 0.1
#: Longest wait, when a node stops, for subscribers to acknowledge its last messages [s].
ACK_TIMEOUT_S = 0.5


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
    read_only: bool = False,
) -> float:
    """Declare a double parameter with its range; returns its (possibly overridden) value."""
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
    read_only: bool = False,
) -> str:
    """Declare a string parameter (optionally one of ``choices``); returns its value."""
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


class ParameterValueError(ValueError):
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


def spin(node: Node, stop: threading.Event, until: Callable[[], bool] | None = None) -> None:
    """Run ``node``'s callbacks until ``stop`` is set, rclpy shuts down or ``until()`` is
    true; the executor waits at most ``WAKE_S`` at a time (a node on a silent /clock would
    otherwise never see a signal)."""
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        while rclpy.ok() and not stop.is_set() and (until is None or not until()):
            executor.spin_once(timeout_sec=WAKE_S)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        executor.shutdown()


def run(factory: Callable[[], Node], name: str, errors: tuple[type[Exception], ...] = ()) -> int:
    """Create the node and spin it until Ctrl-C (or SIGTERM), then shut down cleanly: its
    last messages flushed (:func:`flush_publishers`), the node destroyed, rclpy shut down.
    A signal during start-up takes effect once the node is built.

    Args:
        factory: builds the node.
        name: logger name for a start-up failure.
        errors: further exception types that mean "bad configuration" (logged in one line).

    Returns:
        The process exit status: 0, or 1 when the node could not start (logged in one line).
    """
    startup_errors: tuple[type[Exception], ...] = (
        SnakeDynamicsError,
        ParameterException,
        ParameterValueError,
        OSError,
        *errors,
    )
    with session() as stop:
        node = None
        try:
            node = factory()
            node.get_logger().info(READY_TEXT)
            spin(node, stop)
        except startup_errors as exc:
            rclpy.logging.get_logger(name).fatal(f"cannot start: {exc}")
            return 1
        finally:
            if node is not None:
                flush_publishers(node.publishers)
                node.destroy_node()
    return 0
