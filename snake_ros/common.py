"""What both nodes share: parameter declaration with descriptors, the clock, ``main``."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterable
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


def run(factory: Callable[[], Node], name: str, errors: tuple[type[Exception], ...] = ()) -> int:
    """Create the node and spin it until Ctrl-C (or SIGTERM), then shut down cleanly.

    rclpy's own signal handlers shut the context down under a running callback, whose next
    publish then raises; an exception raised from a handler can land inside rclpy's C++
    calls (taking a message) and come out as a RuntimeError. So SIGINT and SIGTERM only set
    a flag, the executor waits at most ``WAKE_S`` at a time (a node on a silent /clock would
    otherwise never wake up), and the loop stops between two callbacks; the node is then
    destroyed in order. A signal during start-up takes effect once the node is built.

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
    stop: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: stop.append(signum))
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = None
    executor = SingleThreadedExecutor()
    try:
        node = factory()
        executor.add_node(node)
        node.get_logger().info(READY_TEXT)
        while rclpy.ok() and not stop:
            executor.spin_once(timeout_sec=WAKE_S)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except startup_errors as exc:
        rclpy.logging.get_logger(name).fatal(f"cannot start: {exc}")
        return 1
    finally:
        executor.shutdown()
        if node is not None:
            flush_publishers(node.publishers)
            node.destroy_node()
        rclpy.try_shutdown()
    return 0
