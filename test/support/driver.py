"""driver_node of this checkout in a process of its own, on the firmware's host build or a
fake device, and a test's node on its topics."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from subprocess import Popen
from typing import Any

from support.firmware import start_firmware
from support.nodes import interrupt, node_process, spin_until

JOINTS = [f"joint_{k}" for k in range(1, 9)]
#: A module's driver_node writes its output here (tests read it while it runs).
DRIVER_LOG = "driver_node.log"


def start_driver(ros_args: list[str], log: Path | None = None) -> Popen[str]:
    """driver_node with these ``--ros-args`` (its output into ``log`` if given, readable
    while it runs; else a pipe)."""
    return node_process("snake_driver.driver_node", ros_args, log=log)


def stop_driver(proc: Popen[str], log: Path | None = None) -> str:
    """Ctrl-C, then its output (which must hold no traceback)."""
    out = interrupt(proc, 10.0, log)
    assert "Traceback" not in out, out
    return out


def serial_args(pty: str) -> list[str]:
    """The ``--ros-args`` of a driver on the robot config over the serial port ``pty``."""
    return ["-p", "transport:=serial", "-p", f"port:={pty}", "-p", "robot_config:=robot"]


@dataclasses.dataclass
class OwnDriver:
    """A test's own firmware and driver_node: the firmware's pty, and once the block ended,
    the driver's output."""

    pty: str
    out: str = ""


@contextlib.contextmanager
def own_driver(binary: Path, ros_args: list[str], log: Path | None = None) -> Iterator[OwnDriver]:
    """The firmware's host build and a driver_node of its own on its pty (serial, the robot
    config, and ``ros_args``: a namespace or remappings beside the module's driver), both
    stopped when the block ends (the driver by Ctrl-C: no traceback)."""
    firmware, pty = start_firmware(binary)
    own = OwnDriver(pty)
    try:
        proc = start_driver([*serial_args(pty), *ros_args], log)
        try:
            yield own
        finally:
            own.out = stop_driver(proc, log)
    finally:
        firmware.kill()
        firmware.wait(timeout=5)


def command(positions: list[float], names: list[str] = JOINTS) -> Any:
    """A JointState of these joint targets [rad], unstamped."""
    from sensor_msgs.msg import JointState

    msg = JointState()
    msg.name = names
    msg.position = positions
    return msg


class DriverClient:
    """A test's node on a driver's /measured/joint_states, /diagnostics and /joint_commands:
    what it received, and a publisher of commands. Destroyed at the end of a ``with``."""

    def __init__(self, name: str) -> None:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from sensor_msgs.msg import JointState

        self.node = rclpy.create_node(name)
        self.measured: list[Any] = []
        self.diagnostics: list[Any] = []
        self.node.create_subscription(
            JointState, "/measured/joint_states", self.measured.append, 50
        )
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self.diagnostics.append, 10)
        self.pub = self.node.create_publisher(JointState, "/joint_commands", 10)

    def __enter__(self) -> DriverClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.node.destroy_node()

    def values(self) -> dict[str, str]:
        """The key/values of the latest diagnostics' first status ({} before any)."""
        if not self.diagnostics:
            return {}
        return {kv.key: kv.value for kv in self.diagnostics[-1].status[0].values}

    def spin_until(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Spin until ``condition`` holds (True) or ``timeout`` [s] passed (False)."""
        return spin_until(self.node, condition, timeout)

    def following(self, positions: list[float]) -> Callable[[], bool]:
        """A condition that commands ``positions`` [rad] and holds once the latest measured
        state is within 1e-3 rad of them."""

        def check() -> bool:
            self.pub.publish(command(positions))
            return bool(self.measured) and all(
                abs(a - b) < 1e-3
                for a, b in zip(self.measured[-1].position, positions, strict=True)
            )

        return check
