"""Nodes that no input can kill: dynamics_node (both modes) and compare_node, each an
installed executable on a /clock this test steps, get every kind of bad message (the
largest finite double, 1e9 rad, NaN and inf, wrong sizes, unknown, missing and repeated
joints, rates no servo has, stamps from the future, from 1970 and an hour old) between
valid ones. Each node keeps running, counts exactly what it rejected and clamped in its
``<node>: input`` status on /diagnostics, and publishes only physical states.

References: the counts of what this test sent, the joint limits of config/robot.yaml, the
servo limits the URDF declares. Every wait is on a condition with a deadline; the clock is
this test's, so nothing depends on the machine's speed.
"""

from __future__ import annotations

import itertools
import math
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

rclpy = pytest.importorskip("rclpy")
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from rclpy.signals import SignalHandlerOptions  # noqa: E402
from rclpy.time import Time  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from snake_dynamics import SnakeModel  # noqa: E402
from snake_dynamics.urdf import JOINT_EFFORT_LIMIT  # noqa: E402
from snake_ros.dynamics_node import LIMIT_SLACK  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.parallel]

ROOT = Path(__file__).resolve().parents[2]
MODEL = SnakeModel.from_yaml(ROOT / "config" / "robot.yaml")
NAMES = list(MODEL.joint_names)
N = len(NAMES)
LOWER, UPPER = MODEL.joint_limits.T
#: Simulated time at which this test's /clock starts [s].
CLOCK_START_S = 10_000.0
#: Simulated time per step of the clock [ns] (one message per step).
STEP_NS = 10**7
#: Deep enough that no message a test publishes is replaced before the node has it.
RELIABLE = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
HUGE = 1.7976931348623157e308  # the largest finite double


@dataclass
class Bad:
    """A message to send and what the node must count it as (accepted, rejected, clamped)."""

    outcome: str
    names: list[str]
    values: list[float]  # positions, or efforts in torque mode
    velocity: list[float] = field(default_factory=list)
    offset_s: float = 0.0  # stamp relative to the clock [s]
    stamp: tuple[int, int] | None = None  # or this absolute stamp (sec, nanosec)


#: Valid values, unusable stamps (dynamics_node's command timeout is 0.5 s; compare_node
#: takes 5 s ahead, 60 s behind).
BAD_STAMPS = [
    Bad("rejected", NAMES, [0.1] * N, offset_s=1e6),  # 11.6 days ahead
    Bad("rejected", NAMES, [0.1] * N, offset_s=3600.0),
    Bad("rejected", NAMES, [0.1] * N, offset_s=-3600.0),  # an hour old
    Bad("rejected", NAMES, [0.1] * N, stamp=(1, 0)),  # 1970
    Bad("rejected", NAMES, [0.1] * N, stamp=(-5, 0)),
]


@dataclass
class Graph:
    """This test's node, clock and what it heard."""

    node: Node
    executor: SingleThreadedExecutor
    tmp: Path
    clock: Any
    t_ns: int = round(CLOCK_START_S * 1e9)
    states: list[JointState] = field(default_factory=list)
    status: dict[str, DiagnosticStatus] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    def step(self) -> Any:
        """Advance the clock one step and spin once; the new stamp."""
        self.t_ns += STEP_NS
        stamp = Time(nanoseconds=self.t_ns).to_msg()
        self.clock.publish(Clock(clock=stamp))
        self.executor.spin_once(timeout_sec=0.01)
        return stamp

    def until(self, done: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
        """Step the clock until ``done()``; fail after ``timeout`` [s] or if the node exits."""
        deadline = time.monotonic() + timeout
        while not done():
            assert self.process is not None and self.log is not None
            assert self.process.poll() is None, f"the node exited: {self.log.read_text()}"
            assert time.monotonic() < deadline, f"timed out waiting for {what}: {self.status}"
            self.step()

    def start(self, executable: str, args: list[str]) -> None:
        self.log = self.tmp / f"{executable}.log"
        with self.log.open("w") as sink:
            self.process = subprocess.Popen(
                [str(Path(sys.executable).parent / executable), "--ros-args", *args],
                stdout=sink,
                stderr=subprocess.STDOUT,
            )

    def counts(self, name: str) -> dict[str, int]:
        status = self.status.get(name)
        return {} if status is None else {kv.key: int(kv.value) for kv in status.values}


@pytest.fixture
def graph(tmp_path: Path, ros_domain: int, monkeypatch: pytest.MonkeyPatch) -> Iterator[Graph]:
    ament = [sys.prefix, *filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep))]
    monkeypatch.setenv("ROS_LOG_DIR", str(tmp_path / "ros_log"))
    monkeypatch.setenv("AMENT_PREFIX_PATH", os.pathsep.join(ament))
    context = Context()
    rclpy.init(
        context=context, domain_id=ros_domain, signal_handler_options=SignalHandlerOptions.NO
    )
    node = Node("test_node_inputs", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    g = Graph(node, executor, tmp_path, node.create_publisher(Clock, "/clock", 10))

    def on_diagnostics(msg: DiagnosticArray) -> None:
        for status in msg.status:
            g.status[status.name] = status

    node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 100)
    try:
        yield g
    finally:
        if g.process is not None and g.process.poll() is None:
            g.process.send_signal(signal.SIGINT)
            try:
                g.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                g.process.kill()
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)


def _message(bad: Bad, clock_stamp: Any, field_name: str) -> JointState:
    msg = JointState(name=bad.names, velocity=bad.velocity)
    setattr(msg, field_name, bad.values)
    if bad.stamp is not None:
        msg.header.stamp.sec, msg.header.stamp.nanosec = bad.stamp
    else:
        t = Time.from_msg(clock_stamp).nanoseconds + round(bad.offset_s * 1e9)
        msg.header.stamp = Time(nanoseconds=t).to_msg()
    return msg


def _feed(g: Graph, topics: list[str], battery: list[Bad], field_name: str) -> dict[str, int]:
    """Publish ``battery`` on each of ``topics``, one message (on each) per clock step; the
    counts to expect."""
    pubs = [g.node.create_publisher(JointState, topic, RELIABLE) for topic in topics]
    g.until(lambda: all(p.get_subscription_count() > 0 for p in pubs), f"subscribers of {topics}")
    for bad in battery:
        stamp = g.step()
        for pub in pubs:
            pub.publish(_message(bad, stamp, field_name))
    expected = {
        f"{topic} {outcome}": sum(b.outcome == outcome for b in battery)
        for topic in topics
        for outcome in ("accepted", "rejected", "clamped")
    }
    return {k: v for k, v in expected.items() if v}


@pytest.mark.parametrize("mode", ["prescribed", "torque"])
def test_dynamics_node_survives_every_bad_command(graph: Graph, mode: str) -> None:
    """The repro of issue 11 among them: 20 commands at 1.797e308 rad (the old node exited
    after 14) and 1e9 rad (published as is): clamped to the joint limits, as the driver
    clamps them, and the prediction goes there and no further."""
    ns = f"/inputs_{mode}"
    args = ["-r", f"__ns:={ns}", "-p", "use_sim_time:=true", "-p", f"mode:={mode}"]
    graph.start("dynamics_node", [*args, "-p", f"robot_config:={ROOT / 'config' / 'robot.yaml'}"])
    graph.node.create_subscription(JointState, f"{ns}/joint_states", graph.states.append, RELIABLE)
    name = f"{ns}/dynamics_node: input"
    graph.until(lambda: bool(graph.states) and name in graph.status, "the first states")
    field_name = "position" if mode == "prescribed" else "effort"
    battery = [
        *[Bad("clamped", NAMES, [HUGE] * N) for _ in range(20)],  # the repro
        Bad("clamped", NAMES, [1e9] * N),
        Bad("clamped", NAMES, [-HUGE] * N),
        Bad("rejected", NAMES, [math.nan] * N),
        Bad("rejected", NAMES, [math.inf] + [0.0] * (N - 1)),
        Bad("rejected", NAMES, [0.0] * (N - 1)),  # one value short
        Bad("rejected", NAMES, [0.0] * (N + 1)),
        Bad("rejected", [*NAMES[:-1], "joint_99"], [0.0] * N),  # unknown name
        Bad("rejected", [NAMES[0], *NAMES[:-1]], [0.0] * N),  # repeated, one missing
        Bad("rejected", NAMES[:-2], [0.0] * (N - 2)),  # missing
        Bad("rejected", [], []),
        *BAD_STAMPS,
        *[Bad("clamped", NAMES, [HUGE] * N) for _ in range(20)],  # and it holds there
    ]
    if mode == "prescribed":
        battery += [
            Bad("rejected", NAMES, [0.1] * N, velocity=[math.inf] * N),
            Bad("rejected", NAMES, [0.1] * N, velocity=[1e300] * N),  # no servo turns so fast
            Bad("rejected", NAMES, [0.1] * N, velocity=[0.0] * (N - 1)),
        ]
    topic = f"{ns}/joint_{'commands' if mode == 'prescribed' else 'efforts'}"
    expected = _feed(graph, [topic], battery, field_name)
    graph.until(
        lambda: all(graph.counts(name).get(k, 0) >= v for k, v in expected.items()),
        f"the input status to count {expected}",
    )
    n0 = len(graph.states)
    graph.until(lambda: len(graph.states) > n0 + 100, "100 more states: the node still runs")
    counts = graph.counts(name)
    assert {k: counts.get(k, 0) for k in expected} == expected, counts
    q = np.array([s.position for s in graph.states])
    assert np.all(np.isfinite(q)) and np.all(np.isfinite([s.effort for s in graph.states]))
    if mode == "prescribed":  # within the joint limits; the clamped command reached: the upper
        assert np.all(q >= LOWER - LIMIT_SLACK) and np.all(q <= UPPER + LIMIT_SLACK), q
        closest = min(float(np.max(np.abs(np.array(s.position) - UPPER))) for s in graph.states)
        assert closest < 0.05, closest
    else:  # the clamped torques were applied: the servo's limit
        efforts = np.array([s.effort for s in graph.states])
        assert np.max(np.abs(efforts)) == pytest.approx(JOINT_EFFORT_LIMIT)
    assert graph.process is not None and graph.log is not None
    graph.process.send_signal(signal.SIGINT)
    assert graph.process.wait(timeout=30) == 0, graph.log.read_text()
    assert "Traceback" not in graph.log.read_text()


def test_compare_node_counts_what_it_cannot_compare(graph: Graph) -> None:
    """compare_node keeps what it can compare, rejects the rest, and its report says so."""
    args = ["-r", "__ns:=/cmp", "-p", "use_sim_time:=true", "-p", f"report_dir:={graph.tmp}"]
    graph.start("compare_node", [*args, "-p", "report_name:=report"])
    name = "/cmp/compare_node: input"
    graph.until(lambda: name in graph.status, "compare_node's first input status")
    good = [Bad("accepted", NAMES, [0.01 * k for k in range(N)]) for _ in range(150)]
    battery = [
        *good[:50],
        Bad("rejected", NAMES, [math.nan] * N),
        Bad("rejected", NAMES, [HUGE] * N),
        Bad("rejected", NAMES, [1e9] * N),
        Bad("rejected", NAMES, [0.0] * (N - 1)),
        Bad("rejected", ["joint_99"], [0.0]),  # no known joint
        *good[50:100],
        *BAD_STAMPS,
        *good[100:],
    ]
    topics = ["/cmp/sim/joint_states", "/cmp/measured/joint_states"]
    expected = _feed(graph, topics, battery, "position")
    graph.until(
        lambda: all(graph.counts(name).get(k, 0) >= v for k, v in expected.items()),
        f"the input status to count {expected}",
    )
    counts = graph.counts(name)
    assert {k: counts.get(k, 0) for k in expected} == expected, counts
    assert graph.process is not None and graph.log is not None
    graph.process.send_signal(signal.SIGINT)
    assert graph.process.wait(timeout=60) == 0, graph.log.read_text()
    config = yaml.safe_load((graph.tmp / "report" / "config.yaml").read_text())
    assert config["rejected_messages"] == 2 * sum(b.outcome == "rejected" for b in battery)


def test_pose_sensor_node_outlives_a_datagram_from_the_future(graph: Graph) -> None:
    """The campaign's datagram: one reading with a sample time 3 s ahead among 300 genuine
    ones. Before, it set the stamp offset for the rest of the run (782 poses stamped in the
    past downstream) while the node said "all input used"; now it alone is refused and
    counted, and every genuine reading is published with stamps that go forward on this
    test's clock. References: the datagrams sent, the poses received, the counts."""
    from geometry_msgs.msg import PoseStamped

    from snake_dynamics.sim import PoseReading, encode

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    graph.start("pose_sensor_node", ["-p", "use_sim_time:=true", "-p", f"port:={port}"])
    poses: list[PoseStamped] = []
    graph.node.create_subscription(PoseStamped, "/measured/pose", poses.append, RELIABLE)
    name = "/pose_sensor_node: input"
    graph.until(lambda: name in graph.status, "pose_sensor_node's first input status")
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    t0 = graph.t_ns * 1e-9 - 5.0  # the sensor's clock: 5 s behind this test's

    def reading(frame: int, time_s: float) -> bytes:
        return encode(PoseReading(frame, time_s, np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0])))

    with sender:
        for k in range(300):
            stamp = graph.step()  # 10 ms of this test's clock a reading: a 100 Hz sensor
            sample = t0 + (Time.from_msg(stamp).nanoseconds * 1e-9 - CLOCK_START_S) - 0.02
            sender.sendto(reading(k, sample), ("127.0.0.1", port))
            if k == 100:
                sender.sendto(reading(k, sample + 3.0), ("127.0.0.1", port))
        ahead = "pose datagrams (ahead of the clock) rejected"
        graph.until(
            lambda: (
                len(poses) >= 300
                and graph.counts(name).get(ahead, 0) >= 1
                and graph.counts(name).get("measured/pose accepted", 0) >= 300
            ),
            "300 poses and the counts",
        )
    counts = graph.counts(name)
    assert counts.get(ahead) == 1 and "pose datagrams (not newer) rejected" not in counts
    assert len(poses) == 300 and counts["measured/pose accepted"] == 300
    stamps = [Time.from_msg(p.header.stamp).nanoseconds for p in poses]
    assert all(b > a for a, b in itertools.pairwise(stamps))
    assert stamps[-1] <= graph.t_ns  # never ahead of the clock they are stamped on
