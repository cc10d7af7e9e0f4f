"""driver_node (a real process, real rclpy) against the firmware core's POSIX build on a pty:
commands in, time-stamped measurements out, diagnostics, e-stop, bad commands rejected."""

from __future__ import annotations

import itertools
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy")
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIRMWARE = ROOT / "firmware" / "build" / "host" / "snake_fw_posix"
JOINTS = [f"joint_{k}" for k in range(1, 9)]


def ros_env(domain: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        ROS_DOMAIN_ID=str(domain),
        ROS_LOG_DIR=str(ROOT / "build" / "ros_log"),
        PYTHONPATH=str(ROOT),
        AMENT_PREFIX_PATH=sys.prefix,
    )
    return env


@pytest.fixture(scope="module")
def domain() -> Iterator[int]:
    value = 150 + os.getpid() % 60
    os.environ["ROS_DOMAIN_ID"] = str(value)
    rclpy.init()
    yield value
    rclpy.try_shutdown()


@pytest.fixture(scope="module")
def firmware_pty() -> Iterator[str]:
    subprocess.run(
        ["make", "-C", str(ROOT / "firmware"), "posix"],
        check=True,
        capture_output=True,
        timeout=300,
    )
    proc = subprocess.Popen([str(FIRMWARE), "--seconds", "120"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line.startswith("PTY ")
    yield line.split(" ", 1)[1]
    proc.kill()
    proc.wait(timeout=5)


@pytest.fixture(scope="module")
def driver(domain: int, firmware_pty: str) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from snake_driver.driver_node import main; main()",
            "--ros-args",
            "-p",
            "transport:=serial",
            "-p",
            f"port:={firmware_pty}",
            "-p",
            "robot_config:=robot",
        ],
        env=ros_env(domain),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    yield proc
    proc.send_signal(2)
    try:
        out, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    assert "Traceback" not in out, out


def spin_until(node, condition: Callable[[], bool], timeout: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
        if condition():
            return True
    return False


def command(positions: list[float], names: list[str] = JOINTS) -> JointState:
    msg = JointState()
    msg.name = names
    msg.position = positions
    return msg


def test_measured_joint_states_follow_commands_with_mcu_stamps(driver) -> None:
    node = rclpy.create_node("driver_test")
    measured: list[JointState] = []
    diagnostics: list[DiagnosticArray] = []
    node.create_subscription(JointState, "/measured/joint_states", measured.append, 50)
    node.create_subscription(DiagnosticArray, "/diagnostics", diagnostics.append, 10)
    pub = node.create_publisher(JointState, "/joint_commands", 10)
    target = [0.2 if k % 2 else -0.3 for k in range(8)]
    target[2] = 2.5  # beyond the +-90 deg limit: clamped
    expected = [min(x, math.pi / 2) for x in target]

    def reached() -> bool:
        pub.publish(command(target))
        return bool(measured) and all(
            abs(a - b) < 1e-3 for a, b in zip(measured[-1].position, expected, strict=True)
        )

    assert spin_until(node, reached, 20.0), "measured state never reached the command"
    last = measured[-1]
    assert list(last.name) == JOINTS
    assert last.position[2] == pytest.approx(math.pi / 2, abs=1e-3)
    # stamped from the MCU clock mapped to ROS time: close to now, increasing
    now = node.get_clock().now().nanoseconds * 1e-9
    stamp = last.header.stamp.sec + last.header.stamp.nanosec * 1e-9
    assert abs(now - stamp) < 0.2
    stamps = [m.header.stamp.sec + m.header.stamp.nanosec * 1e-9 for m in measured[-20:]]
    assert all(b > a for a, b in itertools.pairwise(stamps))
    assert spin_until(node, lambda: bool(diagnostics), 5.0)
    values = {kv.key: kv.value for kv in diagnostics[-1].status[0].values}
    assert values["connected"] == "True" and values["bad_crc"] == "0"
    assert int(values["commands_clamped"]) > 0
    node.destroy_node()


def test_bad_commands_are_rejected_and_the_driver_keeps_serving(driver) -> None:
    node = rclpy.create_node("driver_bad_commands")
    measured: list[JointState] = []
    diagnostics: list[DiagnosticArray] = []
    node.create_subscription(JointState, "/measured/joint_states", measured.append, 50)
    node.create_subscription(DiagnosticArray, "/diagnostics", diagnostics.append, 10)
    pub = node.create_publisher(JointState, "/joint_commands", 10)
    good = [0.1] * 8

    def settled() -> bool:
        pub.publish(command(good))
        return bool(measured) and all(abs(a - 0.1) < 1e-3 for a in measured[-1].position)

    assert spin_until(node, settled, 20.0)
    for bad in (command([math.nan] * 8), command([0.5] * 7), command([0.5], ["joint_99"])):
        pub.publish(bad)
    measured.clear()
    assert spin_until(node, lambda: len(measured) > 10, 5.0)
    assert all(abs(m.position[0] - 0.1) < 1e-3 for m in measured)  # bad ones never acted on

    def rejections() -> int:
        values = (
            {kv.key: kv.value for kv in diagnostics[-1].status[0].values} if diagnostics else {}
        )
        return int(values.get("commands_rejected", 0))

    assert spin_until(node, lambda: rejections() >= 3, 5.0)
    node.destroy_node()


def test_estop_service_stops_the_pulses(driver) -> None:
    node = rclpy.create_node("driver_estop")
    diagnostics: list[DiagnosticArray] = []
    node.create_subscription(DiagnosticArray, "/diagnostics", diagnostics.append, 10)
    client = node.create_client(Trigger, "/driver_node/estop")
    assert client.wait_for_service(timeout_sec=10.0)
    future = client.call_async(Trigger.Request())
    assert spin_until(node, future.done, 5.0) and future.result().success

    def estopped() -> bool:
        if not diagnostics:
            return False
        values = {kv.key: kv.value for kv in diagnostics[-1].status[0].values}
        return values.get("estop") == "True"

    assert spin_until(node, estopped, 5.0)
    node.destroy_node()
