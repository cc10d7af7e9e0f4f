"""The simulation graph on real rclpy: `snake sim` starts gait_node and dynamics_node in
subprocesses on a private ROS_DOMAIN_ID (loopback only); this process listens and pokes.

References: the offline `snake_dynamics.simulate` for the same gait (the simulated
angles), the gait's analytic form (the commands), message counts and stamps (rates), and
the quintic blend's velocity bound (smooth gait changes). Every wait is bounded.
"""

from __future__ import annotations

import math
import os
import re
import signal
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
from rcl_interfaces.msg import Parameter as ParameterMsg  # noqa: E402
from rcl_interfaces.msg import ParameterType, ParameterValue  # noqa: E402
from rcl_interfaces.srv import SetParameters  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.duration import Duration  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.signals import SignalHandlerOptions  # noqa: E402
from rclpy.time import Time  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from snake_dynamics import Servo, SnakeModel, make_gait, prescribed_torques, simulate  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOMAIN = 100 + os.getpid() % 50  # private to this run; test_driver_node uses 150..209
MODEL = SnakeModel.from_yaml(ROOT / "config" / "robot.yaml")
GAIT_CONFIG = yaml.safe_load((ROOT / "config" / "gaits.yaml").read_text())["/**"]["ros__parameters"]
DYN_CONFIG = yaml.safe_load((ROOT / "config" / "dynamics_node.yaml").read_text())["/**"][
    "ros__parameters"
]
RAMP = GAIT_CONFIG["ramp_time"]
TRANSITION = GAIT_CONFIG["transition_time"]
BAD_COMMANDS = 15  # sent by test_bad_commands..., counted by the node (checked at Ctrl-C)


@dataclass
class Stamped:
    """A received JointState: its stamp [s] and arrays."""

    stamp: float
    q: np.ndarray
    qd: np.ndarray
    effort: np.ndarray


@dataclass
class Graph:
    """`snake sim` running, and a listener node in this process."""

    process: subprocess.Popen[str]
    out: Path
    stdout: Path
    node: Node
    executor: SingleThreadedExecutor
    commands: list[Stamped] = field(default_factory=list)
    states: list[Stamped] = field(default_factory=list)

    def spin(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.02)

    def spin_until(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
            assert self.process.poll() is None, f"snake sim exited: {self.stdout.read_text()}"
            self.executor.spin_once(timeout_sec=0.02)

    def call(self, srv_type: Any, name: str, request: Any, timeout: float = 10.0) -> Any:
        client = self.node.create_client(srv_type, name)
        try:
            self.spin_until(client.service_is_ready, timeout, f"service {name}")
            future = client.call_async(request)
            self.spin_until(future.done, timeout, f"the answer of {name}")
            return future.result()
        finally:
            self.node.destroy_client(client)


def _stamped(msg: JointState) -> Stamped:
    return Stamped(
        msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9,
        np.array(msg.position),
        np.array(msg.velocity),
        np.array(msg.effort),
    )


def _interrupt(process: subprocess.Popen[Any], timeout: float) -> int:
    """Ctrl-C a process; kill it if it has not exited after ``timeout`` [s]. Its status."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
    return process.wait(timeout=10)


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Graph]:
    tmp = tmp_path_factory.mktemp("sim")
    ament = [sys.prefix, *filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep))]
    with pytest.MonkeyPatch.context() as env:  # for this process and the children
        env.setenv("ROS_DOMAIN_ID", str(DOMAIN))
        env.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")  # no traffic off this machine
        env.setenv("ROS_LOG_DIR", str(tmp / "ros_log"))
        env.setenv("AMENT_PREFIX_PATH", os.pathsep.join(ament))
        stdout = tmp / "snake_sim.out"
        cmd = [sys.executable, "-m", "snake_bringup.cli", "sim", "--no-rviz", "--quiet"]
        with stdout.open("w") as sink:
            process = subprocess.Popen(
                [*cmd, "--duration", "150", "-o", str(tmp / "run")],
                cwd=ROOT,
                stdout=sink,
                stderr=subprocess.STDOUT,
                text=True,
            )
        context = Context()
        rclpy.init(
            context=context, domain_id=DOMAIN, signal_handler_options=SignalHandlerOptions.NO
        )
        node = Node("test_listener", context=context)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        g = Graph(process, tmp / "run", stdout, node, executor)
        node.create_subscription(
            JointState, "/joint_commands", lambda m: g.commands.append(_stamped(m)), 100
        )
        node.create_subscription(
            JointState, "/sim/joint_states", lambda m: g.states.append(_stamped(m)), 100
        )
        try:
            # The first start after an install compiles the kernels (numba) for a few seconds.
            g.spin_until(lambda: bool(g.states and g.commands), 90.0, "the first states")
            yield g
        finally:
            _interrupt(process, 30.0)
            executor.shutdown()
            node.destroy_node()
            rclpy.try_shutdown(context=context)


def record(g: Graph, seconds: float) -> tuple[list[Stamped], list[Stamped]]:
    """The commands and states received during the next ``seconds``."""
    c0, s0 = len(g.commands), len(g.states)
    g.spin(seconds)
    return g.commands[c0:], g.states[s0:]


def test_snake_sim_started_the_nodes_and_said_what_it_skipped(graph: Graph) -> None:
    text = graph.stdout.read_text()
    assert "started /sim/gait_node" in text and "started /sim/dynamics_node" in text
    for optional in ("/sim/robot_state_publisher", "/world_to_sim"):  # RViz: --no-rviz
        if f"started {optional}" not in text:  # present on a full ROS install
            assert re.search(f"skipped {optional}: .+", text), text


def _shifted_gait(commands: list[Stamped], t_ref: float) -> Callable[[float], Any]:
    """The configured gait on this recording's time axis (s - t_ref), its phase read from
    the commands: joint_2 (the first yaw joint, phase 0) is A sin(w t) for t since the start.
    """
    assert GAIT_CONFIG["gait"] == "serpenoid" and GAIT_CONFIG["serpenoid"]["offset"] == 0.0
    params = GAIT_CONFIG["serpenoid"]
    gait = make_gait("serpenoid", MODEL, **params)
    amplitude, omega = params["amplitude"], 2 * math.pi * params["frequency"]
    phases = [
        omega * (c.stamp - t_ref) - math.atan2(c.q[1] / amplitude, c.qd[1] / (amplitude * omega))
        for c in commands
    ]
    shift = math.atan2(np.mean(np.sin(phases)), np.mean(np.cos(phases))) / omega
    return lambda t: gait(t - shift)


def test_rates_stamps_and_the_offline_simulation(graph: Graph) -> None:
    # Wait for the ramp into the gait to end (commands then follow the gait exactly).
    first = graph.commands[0].stamp
    graph.spin_until(
        lambda: graph.commands[-1].stamp > first + RAMP + 0.3, RAMP + 10.0, "the end of the ramp"
    )
    commands, states = record(graph, 3.0)
    for stream, rate in (
        (commands, GAIT_CONFIG["publish_rate"]),
        (states, DYN_CONFIG["publish_rate"]),
    ):
        stamps = np.array([m.stamp for m in stream])
        measured = (len(stamps) - 1) / (stamps[-1] - stamps[0])
        assert 0.7 * rate < measured < 1.3 * rate, measured  # generous: 2 shared cores
        assert 0.7 * rate * 3.0 < len(stamps) < 1.3 * rate * 3.0
    for everything in (graph.commands, graph.states):  # since the start, and within 0.5 s of now
        stamps = np.array([m.stamp for m in everything])
        assert np.all(np.diff(stamps) > 0), "stamps must increase"
        assert abs(stamps[-1] - time.time()) < 0.5

    # The commands are the configured gait (to the rounding of the stamps, ~1e-7 s).
    t_ref = states[0].stamp
    gait = _shifted_gait(commands, t_ref)
    for c in commands:
        np.testing.assert_allclose(c.q, gait(c.stamp - t_ref).q, atol=1e-6)

    # The simulated angles follow snake_dynamics.simulate for that gait, started from the
    # first recorded state, with the node's servo gains: the node interpolates 100 Hz
    # commands (off by ~1e-8 rad, test_simulator) and integrates on the same 1 ms grid.
    dt = 1.0 / DYN_CONFIG["sim_rate"]
    start, rest = states[0], states[1:]
    span = round((rest[-1].stamp - start.stamp) / dt) * dt
    offline = simulate(
        MODEL,
        start.q,
        start.qd,
        prescribed_torques(MODEL, gait),
        span,
        dt,
        servo=Servo(DYN_CONFIG["servo_stiffness"], DYN_CONFIG["servo_damping"], gait),
    )
    rows = [round((s.stamp - start.stamp) / dt) for s in rest]
    assert all(
        abs(r * dt - (s.stamp - start.stamp)) < 1e-6 for r, s in zip(rows, rest, strict=True)
    )
    error = max(float(np.max(np.abs(s.q - offline.q[r]))) for r, s in zip(rows, rest, strict=True))
    # Tolerance 1e-4 rad (0.02% of the 0.5 rad amplitude): allows a command arriving later
    # than the node's 20 ms interpolation delay now and then on a loaded machine.
    assert error < 1e-4, error
    torque = max(
        float(np.max(np.abs(s.effort - offline.tau[r]))) for r, s in zip(rows, rest, strict=True)
    )
    assert torque < 1e-3 * float(np.max(np.abs(offline.tau))), torque


def _set(graph: Graph, name: str, value: Any) -> Any:
    if isinstance(value, float):
        pv = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=value)
    else:
        pv = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
    request = SetParameters.Request(parameters=[ParameterMsg(name=name, value=pv)])
    return graph.call(SetParameters, "/sim/gait_node/set_parameters", request).results[0]


def test_gait_change_is_smooth_and_a_bad_value_is_refused(graph: Graph) -> None:
    gait_name = GAIT_CONFIG["gait"]
    old = GAIT_CONFIG[gait_name]["amplitude"]
    new = old + 0.4
    result = _set(graph, f"{gait_name}.amplitude", new)
    assert result.successful, result.reason
    commands, _ = record(graph, TRANSITION + 1.5)
    q = np.array([c.q for c in commands])
    dt = np.diff([c.stamp for c in commands])
    omega = 2 * math.pi * GAIT_CONFIG[gait_name]["frequency"]
    # Quintic blend: |q_dot| <= max(|v_old|, |v_new|) + 1.875 |q_new - q_old| / T, per joint.
    speed = new * omega + 1.875 * (new - old) / TRANSITION
    steps = np.max(np.abs(np.diff(q, axis=0)), axis=1)
    assert np.all(steps <= speed * dt * 1.01 + 1e-9), (steps / dt).max()
    # ... while switching at once would jump by up to (new - old) = 0.4 rad; and it did change:
    last_period = q[-round(1.0 / (GAIT_CONFIG[gait_name]["frequency"] * np.mean(dt))) :]
    assert np.max(np.abs(last_period)) == pytest.approx(new, abs=0.02)

    # Out of range, wrong type and unknown gait: refused with a reason; the node goes on.
    for name, value in (
        (f"{gait_name}.amplitude", 5.0),
        (f"{gait_name}.amplitude", "wide"),
        ("gait", "moonwalk"),
    ):
        result = _set(graph, name, value)
        assert not result.successful and result.reason, (name, value)
    commands, _ = record(graph, 0.5)
    assert len(commands) > 0.5 * 0.5 * GAIT_CONFIG["publish_rate"]
    assert np.max(np.abs([c.q for c in commands])) <= new + 1e-9  # still the accepted gait


def test_bad_commands_are_rejected_and_the_states_stay_finite(graph: Graph) -> None:
    pub = graph.node.create_publisher(JointState, "/joint_commands", 50)
    graph.spin_until(lambda: pub.get_subscription_count() >= 2, 10.0, "the dynamics subscriber")
    names = list(MODEL.joint_names)
    n = len(names)
    bad = [
        (names, [math.nan] * n, [0.0] * n),  # NaN
        (names, [0.0] * n, [math.inf] * n),  # inf
        ([*names[:-1], "joint_99"], [0.0] * n, [0.0] * n),  # unknown name
        (names, [0.0] * (n - 1), [0.0] * n),  # wrong length
        (names, [1.0] * n, [0.0] * n),  # valid, but stamped a minute ahead (below)
    ]
    c0, s0 = len(graph.commands), len(graph.states)
    for i in range(BAD_COMMANDS):
        msg = JointState()
        ahead = Duration(seconds=60 if i % len(bad) == len(bad) - 1 else 0)
        msg.header.stamp = (graph.node.get_clock().now() + ahead).to_msg()
        msg.name, msg.position, msg.velocity = bad[i % len(bad)]
        pub.publish(msg)
        graph.spin(0.05)
    graph.spin(1.0)
    graph.node.destroy_publisher(pub)
    states = graph.states[s0:]
    assert len(graph.commands) - c0 >= BAD_COMMANDS  # they went out on the topic
    assert len(states) > 0.5 * DYN_CONFIG["publish_rate"] * 1.6  # still publishing
    assert all(np.all(np.isfinite(s.q)) and np.all(np.isfinite(s.effort)) for s in states)
    assert max(float(np.max(np.abs(s.q))) for s in states) < math.pi  # and still sensible
    # and still following the gait: a command from the future did not shadow the real ones
    latest = states[-1]
    command = min(graph.commands, key=lambda c: abs(c.stamp - latest.stamp))
    assert np.max(np.abs(latest.q - command.q)) < 0.05, (latest, command)


def test_stop_ramps_to_rest_start_resumes_and_reset_answers(graph: Graph) -> None:
    answer = graph.call(Trigger, "/sim/gait_node/stop", Trigger.Request())
    assert answer.success and "rest" in answer.message
    graph.spin(RAMP + 0.3)
    commands, _ = record(graph, 0.3)
    assert all(np.all(c.q == 0.0) and np.all(c.qd == 0.0) for c in commands)
    assert not graph.call(Trigger, "/sim/gait_node/stop", Trigger.Request()).message.startswith(
        "ramping"
    )
    answer = graph.call(Trigger, "/sim/dynamics_node/reset", Trigger.Request())
    assert answer.success, answer.message
    answer = graph.call(Trigger, "/sim/gait_node/start", Trigger.Request())
    assert answer.success and "ramping" in answer.message
    commands, _ = record(graph, 1.0)
    assert np.max(np.abs(commands[-1].q)) > 0.0


def test_both_nodes_follow_sim_time_and_torque_mode_integrates_efforts(graph: Graph) -> None:
    """gait_node and dynamics_node (torque mode) with use_sim_time, on a /clock this test
    drives from 1000 s: every stamp is on that clock, the applied effort is the commanded
    one, and the motion is simulate() with those torques.
    """
    bin_dir = Path(sys.executable).parent
    common = ["--ros-args", "-r", "__ns:=/clocked", "-p", "use_sim_time:=true"]
    common += ["-p", f"robot_config:={ROOT / 'config' / 'robot.yaml'}"]
    logs = [graph.out.parent / "clocked_dynamics.log", graph.out.parent / "clocked_gait.log"]
    nodes = []
    for exe, extra, log in zip(
        # max_lag 10 s: on a loaded machine this test's /clock may run ahead of the node, and
        # skipping simulated time (the node's real-time behaviour) would break the comparison
        ("dynamics_node", "gait_node"),
        (["-p", "mode:=torque", "-p", "max_lag:=10.0"], []),
        logs,
        strict=True,
    ):
        with log.open("w") as sink:
            nodes.append(
                subprocess.Popen(
                    [str(bin_dir / exe), *common, *extra],
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                )
            )
    try:
        clock = graph.node.create_publisher(Clock, "/clock", 10)
        efforts = graph.node.create_publisher(JointState, "/clocked/joint_efforts", 10)
        states: list[Stamped] = []
        commands: list[Stamped] = []
        graph.node.create_subscription(
            JointState, "/clocked/joint_states", lambda m: states.append(_stamped(m)), 100
        )
        graph.node.create_subscription(
            JointState, "/clocked/joint_commands", lambda m: commands.append(_stamped(m)), 100
        )
        tau = np.linspace(-0.01, 0.01, MODEL.n_joints)
        t_ns = 1000 * 10**9  # simulated time starts at 1000 s
        deadline = time.monotonic() + 60.0
        while len(states) < 200 or len(commands) < 100:
            t_ns += 10**7  # 10 ms of simulated time per message
            stamp = Time(nanoseconds=t_ns).to_msg()
            clock.publish(Clock(clock=stamp))
            msg = JointState(name=list(MODEL.joint_names), effort=tau.tolist())
            msg.header.stamp = stamp
            efforts.publish(msg)
            graph.spin(0.01)
            assert time.monotonic() < deadline, [log.read_text() for log in logs]
            assert all(n.poll() is None for n in nodes), [log.read_text() for log in logs]
        for stream in (states, commands):
            stamps = np.array([s.stamp for s in stream])
            assert np.all((stamps >= 1000.0) & (stamps <= t_ns * 1e-9 + 1e-9))
            assert np.all(np.diff(stamps) > 0)
        driven = [s for s in states if np.array_equal(s.effort, tau)]
        assert len(driven) > 100
        start, rest = driven[0], driven[1:]
        dt = 1.0 / DYN_CONFIG["sim_rate"]
        span = round((rest[-1].stamp - start.stamp) / dt) * dt
        offline = simulate(MODEL, start.q, start.qd, lambda t: tau, span, dt)
        error = max(
            float(np.max(np.abs(s.q - offline.q[round((s.stamp - start.stamp) / dt)])))
            for s in rest
        )
        assert error < 1e-9, error  # the same RK4 on the same constant torques
        assert float(np.max(np.abs(rest[-1].q))) > 1e-3  # and it moved
    finally:
        codes = [_interrupt(node, 20.0) for node in nodes]
    assert codes == [0, 0], [log.read_text() for log in logs]
    assert all("Traceback" not in log.read_text() for log in logs)
    assert "0.000 s skipped" in logs[0].read_text()  # the final status line


def test_ctrl_c_stops_every_child_cleanly(graph: Graph) -> None:
    pids = [int(p) for p in re.findall(r"\(pid (\d+)\)", graph.stdout.read_text())]
    assert len(pids) >= 2
    graph.process.send_signal(signal.SIGINT)
    assert graph.process.wait(timeout=30) == 130
    text = graph.stdout.read_text()
    assert "/sim/gait_node: exit status 0" in text, text
    assert "/sim/dynamics_node: exit status 0" in text, text
    for pid in pids:
        assert (
            not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
        )
    logs = {p.name: p.read_text() for p in graph.out.glob("*.log")}
    assert set(logs) >= {"gait_node.log", "dynamics_node.log"}
    for name, log in logs.items():
        assert "Traceback" not in log, (name, log)
    # dynamics_node counted exactly the bad commands of the previous test as rejected.
    counts = re.findall(r"(\d+) messages rejected", logs["dynamics_node.log"])
    assert counts and int(counts[-1]) == BAD_COMMANDS, logs["dynamics_node.log"]
    assert "0.000 s skipped" in logs["dynamics_node.log"]  # it kept up in real time
