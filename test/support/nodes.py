"""A node of this checkout in a process of its own, and rclpy in the test process: the
environment, the start with ``--ros-args``, Ctrl-C with the output, spinning until a
condition holds. rclpy is imported where it is used: a run without the ros tests blocks it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def ros_env(log_dir: Path = ROOT / "build" / "ros_log") -> dict[str, str]:
    """This process's environment for a node of this checkout: its ROS log in ``log_dir``,
    the checkout on PYTHONPATH and this environment as the only ament prefix."""
    return {
        **os.environ,
        "ROS_LOG_DIR": str(log_dir),
        "PYTHONPATH": str(ROOT),
        "AMENT_PREFIX_PATH": sys.prefix,
    }


def node_process(
    module: str,
    ros_args: Sequence[str],
    *,
    log: Path | None = None,
    log_dir: Path = ROOT / "build" / "ros_log",
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[str]:
    """``module``'s ``main()`` with these ``--ros-args`` (``-p name:=value``, ``-r`` ...), its
    output (stderr too) into the file ``log`` if given, readable while it runs, else a pipe;
    ``env`` on top of :func:`ros_env`."""
    return subprocess.Popen(
        [sys.executable, "-c", f"from {module} import main; main()", "--ros-args", *ros_args],
        env={**ros_env(log_dir), **(env or {})},
        stdout=subprocess.PIPE if log is None else log.open("w"),
        stderr=subprocess.STDOUT,
        text=True,
    )


def parameters(*assignments: str) -> list[str]:
    """``--ros-args`` that set these parameters: ``-p`` before each ``name:=value``."""
    return [arg for a in assignments for arg in ("-p", a)]


def interrupt(proc: subprocess.Popen[str], timeout: float, log: Path | None = None) -> str:
    """Ctrl-C, then its output (the file ``log`` if it wrote there); killed if it is not
    gone after ``timeout`` seconds."""
    proc.send_signal(2)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return log.read_text() if log is not None else out


@pytest.fixture(scope="module")
def domain(ros_domain: int) -> Iterator[int]:
    """rclpy on this module's private domain (conftest's ``ros_domain``)."""
    import rclpy

    rclpy.init()
    yield ros_domain
    rclpy.try_shutdown()


def spin_until(
    node: Any,
    condition: Callable[[], bool],
    timeout: float,
    step: Callable[[], None] | None = None,
    period: float = 0.05,
) -> bool:
    """Spin ``node`` (``period`` [s] at a time, calling ``step`` after each) until
    ``condition`` holds (True) or ``timeout`` [s] passed (False)."""
    import rclpy

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=period)
        if step is not None:
            step()
        if condition():
            return True
    return False


class Observer:
    """A node in an rclpy context of its own, with its own executor, watching the graph of a
    process that runs beside it (``snake hardware``, ``snake sim``); all of it shut down at
    the end of a ``with``."""

    def __init__(self, name: str) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def __enter__(self) -> Observer:
        return self

    def __exit__(self, *exc: object) -> None:
        import rclpy

        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)

    def received(self, msg_type: Any, topic: str) -> list[Any]:
        """The messages of ``topic`` as they arrive (a list the subscription appends to)."""
        out: list[Any] = []
        self.node.create_subscription(msg_type, topic, out.append, 100)
        return out

    def spin_while_up(
        self,
        proc: subprocess.Popen[str],
        done: Callable[[], bool],
        deadline: float,
        what: Callable[[], str],
    ) -> None:
        """Spin until ``done()``; fails with ``what()`` after ``deadline`` (time.monotonic),
        or with the process's output once it exited."""
        while not done():
            assert time.monotonic() < deadline, what()
            assert proc.poll() is None, proc.communicate()[0]
            self.executor.spin_once(timeout_sec=0.05)
