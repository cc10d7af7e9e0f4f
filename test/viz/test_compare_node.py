"""compare_node (a real process, real rclpy) fed by a test publisher.

Reference: injected per-joint offsets on a ramp (linear interpolation is exact on a ramp, so
the node's error must equal the offsets to rounding), the markers' frames and point counts,
the report folder's files, and a clean exit with the report written on SIGINT. On the floor:
a measured tail beside a predicted one on a straight line (the path error is the offset to
rounding) and bad poses counted by reason on /diagnostics.
"""

from __future__ import annotations

import json
import math
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.parallel  # each test marked ros
rclpy = pytest.importorskip("rclpy")
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.time import Time  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402
from support.nodes import domain, node_process, parameters, spin_until  # noqa: E402
from support.waits import wait_for  # noqa: E402
from visualization_msgs.msg import Marker, MarkerArray  # noqa: E402

from snake_viz.compare_report import PLOTS_DONE  # noqa: E402

JOINTS = [f"joint_{k}" for k in range(1, 9)]
OFFSETS = np.array([0.01, -0.02, 0.03, 0.0, 0.05, -0.01, 0.002, 0.1])  # measured - sim [rad]
SLOPE = np.linspace(-0.05, 0.05, 8)  # [rad/s]
__all__ = ["domain"]  # the fixture of support.nodes: rclpy on this module's domain


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("compare_reports")


@pytest.fixture(scope="module")
def node_proc(domain: int, report_dir: Path) -> Iterator[subprocess.Popen[str]]:
    yield from compare_node(report_dir, "marker_rate:=10.0")


def compare_node(report_dir: Path, *assignments: str) -> Iterator[subprocess.Popen[str]]:
    """compare_node in a process of its own (window 1 s), killed after the test if still up."""
    proc = node_process(
        "snake_viz.compare_node",
        parameters(f"report_dir:={report_dir}", "window:=1.0", *assignments),
    )
    yield proc
    if proc.poll() is None:
        proc.kill()
        proc.communicate(timeout=10)


class Feeding:
    """What both feeders share: spinning their node 10 ms at a time, publishing on the way."""

    node: Any

    def step(self) -> None:
        """Publish what is due now."""
        raise NotImplementedError

    def spin_until(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Spin and feed until ``condition`` holds (True) or ``timeout`` [s] passed (False)."""
        return spin_until(self.node, condition, timeout, self.step, period=0.01)


class Feeder(Feeding):
    """Publishes the prediction at 100 Hz and the measurement (sim + OFFSETS) at 50 Hz,
    both stamped with the publisher's clock; a ramp so interpolation is exact."""

    def __init__(self, node) -> None:  # type: ignore[no-untyped-def]
        self.node = node
        self.sim = node.create_publisher(JointState, "/sim/joint_states", 10)
        self.measured = node.create_publisher(JointState, "/measured/joint_states", 10)
        self.t0 = node.get_clock().now().nanoseconds
        self.next_sim = self.next_measured = time.monotonic()
        self.spike = 0.0  # added to joint_8 of the next measurement only [rad]

    def message(self, stamp_ns: int, q: np.ndarray) -> JointState:
        msg = JointState()
        msg.header.stamp = Time(nanoseconds=stamp_ns).to_msg()
        msg.name = JOINTS
        msg.position = [float(x) for x in q]
        return msg

    def step(self) -> None:
        now = time.monotonic()
        stamp = self.node.get_clock().now().nanoseconds
        q = SLOPE * (stamp - self.t0) * 1e-9
        if now >= self.next_sim:
            self.sim.publish(self.message(stamp, q))
            self.next_sim = now + 0.01
        if now >= self.next_measured:
            spike = np.zeros(8)
            spike[7], self.spike = self.spike, 0.0
            self.measured.publish(self.message(stamp, q + OFFSETS + spike))
            self.next_measured = now + 0.02


@pytest.mark.ros
def test_error_markers_report_and_shutdown(
    node_proc: subprocess.Popen[str], report_dir: Path
) -> None:
    node = rclpy.create_node("compare_test")
    feeder = Feeder(node)
    errors: list[JointState] = []
    markers: list[MarkerArray] = []
    path_errors: list[Float64] = []
    node.create_subscription(JointState, "/compare/error", errors.append, 10)
    node.create_subscription(MarkerArray, "/compare/markers", markers.append, 10)
    node.create_subscription(Float64, "/compare/path_error", path_errors.append, 10)

    def settled() -> bool:
        # the window (1 s) holds only samples fed after the node started
        return len(errors) > 25 and len(markers) > 3

    assert feeder.spin_until(settled, 25.0), (
        f"{len(errors)} /compare/error, {len(markers)} /compare/markers"
    )
    last = errors[-1]
    assert list(last.name) == JOINTS
    np.testing.assert_allclose(last.position, OFFSETS, atol=1e-6)
    np.testing.assert_allclose(last.velocity, np.abs(OFFSETS), atol=1e-6)  # window RMS
    np.testing.assert_allclose(last.effort, np.abs(OFFSETS), atol=1e-6)  # window max

    # one measured sample of joint_8 off by 0.5 rad: inside the window, max > RMS > offset,
    # while the error now is back to the offset (tells the three fields apart)
    feeder.spike = 0.5
    count = len(errors)
    assert feeder.spin_until(lambda: len(errors) > count + 8, 5.0)
    last = errors[-1]
    assert last.effort[7] > last.velocity[7] + 0.05 and last.velocity[7] > OFFSETS[7] + 0.005
    assert last.effort[7] < OFFSETS[7] + 0.5 + 1e-6
    np.testing.assert_allclose(last.position, OFFSETS, atol=1e-6)
    np.testing.assert_allclose(last.effort[:7], np.abs(OFFSETS[:7]), atol=1e-6)

    array = markers[-1]
    by_ns = {m.ns: m for m in array.markers}
    assert set(by_ns) == {"sim/head", "sim/com", "measured/head", "measured/com"}
    assert by_ns["sim/head"].header.frame_id == "sim/base_link"
    assert by_ns["measured/com"].header.frame_id == "measured/base_link"
    for m in array.markers:
        assert m.type == Marker.LINE_STRIP and len(m.points) >= 2
        assert len(m.colors) == len(m.points)
    assert path_errors == []  # a fixed base: no poses, no path error
    head = by_ns["sim/head"].points[-1]
    assert 0.3 < float(np.hypot(head.x, head.y)) < 1.0  # the 8-joint snake's head, ~0.63 m

    client = node.create_client(Trigger, "/compare_node/report")
    assert client.wait_for_service(timeout_sec=10.0)
    future = client.call_async(Trigger.Request())
    assert feeder.spin_until(future.done, 20.0)
    response = future.result()
    assert response is not None and response.success, response
    folders = list(report_dir.glob("compare-*"))
    assert len(folders) == 1, folders
    folder = folders[0]
    assert str(folder) in response.message
    for name in ("aligned.csv", "summary.md", "summary.json", "config.yaml"):
        assert (folder / name).is_file(), name
    timing = json.loads((folder / "summary.json").read_text())
    # no gait_node here: no command stamps; the fed stamps are the node's wall clock
    assert timing["command_jump_s"] is None and timing["max_clock_jump_s"] == 0.05
    assert timing["trusted"] == (timing["clock_jump_s"] <= 0.05), timing
    # the plots come from a process of their own, plots.log last
    wait_for(lambda: (folder / "plots.log").is_file(), 60.0, "the plotter's plots.log")
    assert PLOTS_DONE in (folder / "plots.log").read_text()
    for name in ("joint_angles.png", "joint_errors.png", "traces.png"):
        assert (folder / name).read_bytes()[:4] == b"\x89PNG", name
    node.destroy_node()

    for name in ("summary.md", "plots.log", "joint_angles.png"):
        (folder / name).unlink()
    node_proc.send_signal(signal.SIGINT)
    out, _ = node_proc.communicate(timeout=20)
    assert node_proc.returncode == 0, out
    assert "Traceback" not in out, out
    assert "report on shutdown: wrote" in out, out
    assert (folder / "summary.md").is_file()
    # the node has exited; its plotter goes on and finishes
    wait_for(lambda: (folder / "plots.log").is_file(), 60.0, "the plots after shutdown")
    assert (folder / "joint_angles.png").read_bytes()[:4] == b"\x89PNG"


PATH_SPEED, PATH_OFFSET = 0.1, 0.01  # predicted along x [m/s]; measured beside it [m]


class PoseFeeder(Feeding):
    """The predicted tail on /sim/odom at 100 Hz and the measured one on /measured/pose at 30 Hz
    (PATH_OFFSET to the side), both on a straight line along x, stamped with the clock; on
    :meth:`step`, the poses of ``bad`` first (each with the stamp of the last good pose sent,
    a fresh one, or one a float of seconds ahead of now)."""

    def __init__(self, node) -> None:  # type: ignore[no-untyped-def]
        self.node = node
        self.odom = node.create_publisher(Odometry, "/sim/odom", 10)
        self.pose = node.create_publisher(PoseStamped, "/measured/pose", 10)
        self.t0 = node.get_clock().now().nanoseconds
        self.next_odom = self.next_pose = time.monotonic()
        self.last_stamp = 0
        # frame, position, repeat the stamp (True), fresh (False) or that far ahead [s]
        self.bad: list[tuple[str, list[float], bool | float]] = []

    def pose_at(self, stamp_ns: int, frame: str, position: list[float]) -> PoseStamped:
        msg = PoseStamped()
        msg.header.stamp = Time(nanoseconds=stamp_ns).to_msg()
        msg.header.frame_id = frame
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = position
        msg.pose.orientation.w = 1.0
        return msg

    def step(self) -> None:
        now = time.monotonic()
        stamp = self.node.get_clock().now().nanoseconds
        x = PATH_SPEED * (stamp - self.t0) * 1e-9
        for frame, position, when in self.bad:
            if isinstance(when, float):
                bad_stamp = stamp + round(when * 1e9)
            else:
                bad_stamp = self.last_stamp if when else stamp
            self.pose.publish(self.pose_at(bad_stamp, frame, position))
        self.bad = []
        if now >= self.next_odom:
            predicted = self.pose_at(stamp, "world", [x, 0.0, 0.03])
            odom = Odometry(header=predicted.header, child_frame_id="sim/base_link")
            odom.pose.pose = predicted.pose
            self.odom.publish(odom)
            self.next_odom = now + 0.01
        if now >= self.next_pose:
            self.pose.publish(self.pose_at(stamp, "world", [x, PATH_OFFSET, 0.03]))
            self.last_stamp = stamp
            self.next_pose = now + 1 / 30


@pytest.mark.ros
def test_path_error_on_the_floor_and_bad_poses_counted_by_reason(
    domain: int, tmp_path: Path
) -> None:
    procs = compare_node(tmp_path, "report_on_shutdown:=false")
    proc = next(procs)
    node = rclpy.create_node("compare_floor_test")
    feeder = PoseFeeder(node)
    path_errors: list[Float64] = []
    counts: dict[str, int] = {}

    def on_diagnostics(msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name == "/compare_node: input":
                counts.update({v.key: int(v.value) for v in status.values})

    node.create_subscription(Float64, "/compare/path_error", path_errors.append, 10)
    node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)
    try:
        assert feeder.spin_until(lambda: len(path_errors) > 10, 25.0), (
            f"{len(path_errors)} /compare/path_error"
        )
        np.testing.assert_allclose([m.data for m in path_errors[-5:]], PATH_OFFSET, atol=1e-6)
        feeder.bad = [
            ("world", [math.nan, 0.0, 0.0], False),
            ("world", [0.0, math.inf, 0.0], False),
            ("map", [0.0, 0.0, 0.0], False),
            ("world", [5.0, 0.0, 0.0], True),  # the stamp of the last accepted pose again
            ("world", [5.0, 0.0, 0.0], 3.0),  # the campaign's: 3 s ahead, a spoof or a bad clock
            ("world", [5.0, 0.0, 0.0], 0.5),
        ]
        expected = {
            "/measured/pose (not finite) rejected": 2,
            "/measured/pose (wrong frame) rejected": 1,
            "/measured/pose (ahead of the clock) rejected": 2,
            "/measured/pose (not newer) rejected": 1,  # the genuine poses after them accepted
        }
        done = lambda: all(counts.get(k) == n for k, n in expected.items())  # noqa: E731
        assert feeder.spin_until(done, 25.0), counts
        assert counts["/sim/odom accepted"] > 0 and counts["/measured/pose accepted"] > 0
        assert not any("/sim/odom (" in key for key in counts), counts
        count = len(path_errors)
        assert feeder.spin_until(lambda: len(path_errors) > count + 5, 10.0)
        np.testing.assert_allclose([m.data for m in path_errors[-5:]], PATH_OFFSET, atol=1e-6)
    finally:
        node.destroy_node()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0 and "Traceback" not in out, out


@pytest.mark.ros
@pytest.mark.parametrize(
    ("argument", "expected"),
    [("report_name:=a/b", "report_name must be a plain folder name"), ("window:=0.0", "window")],
)
def test_bad_parameters_stop_with_one_line(domain: int, argument: str, expected: str) -> None:
    proc = node_process("snake_viz.compare_node", parameters(argument))
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 1, out
    assert "cannot start" in out and expected in out and "Traceback" not in out, out


@pytest.mark.ros
def test_reports_go_to_ros_home_not_the_working_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without report_dir, reports go where ROS 2 keeps its logs, not under the folder
    ``ros2 launch`` ran in."""
    from snake_viz.compare_node import default_report_dir

    monkeypatch.setenv("ROS_HOME", str(tmp_path / "ros_home"))
    assert default_report_dir() == tmp_path / "ros_home" / "mfm_snake"
    monkeypatch.delenv("ROS_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_report_dir() == tmp_path / ".ros" / "mfm_snake"
