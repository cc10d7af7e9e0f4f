"""The simulation graph on real rclpy: `snake sim` starts gait_node and dynamics_node in
subprocesses, a fresh graph for each test on a ROS domain of its own (loopback only); this
process listens and pokes.

References: the gait's analytic form (the commands), the offline `snake_dynamics.simulate`
for the same gait (dynamics_node on a /clock this test steps, so nothing depends on how fast
the machine is), stamps and counts, and the quintic blend's velocity bound (smooth gait
changes). Every wait is on a condition with a deadline; no assertion is about speed (that
is bench/).
"""

from __future__ import annotations

import itertools
import math
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

rclpy = pytest.importorskip("rclpy")
from nav_msgs.msg import Odometry  # noqa: E402
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
from scipy.spatial.transform import Rotation  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from snake_dynamics import SnakeModel, make_gait  # noqa: E402
from snake_dynamics.floating import FloatingState, on_the_ground  # noqa: E402
from snake_dynamics.gaits import JointTrajectory  # noqa: E402
from snake_dynamics.mfm.integrators import Servo, simulate  # noqa: E402
from snake_dynamics.servo import ServoModel  # noqa: E402
from snake_dynamics.sim.crawler import CrawlingSimulator  # noqa: E402
from snake_dynamics.sim.simulator import MotionInput, stable_substeps  # noqa: E402
from snake_dynamics.sim.wheeled import WheeledSimulator  # noqa: E402

pytestmark = pytest.mark.ros
# The tests in lock step with a /clock of their own are marked parallel (they share the cores
# in make test); those on `snake sim`'s wall clock (the graph fixture) keep the machine alone:
# on a starved machine the prediction falls behind a gait that does not wait for it.

ROOT = Path(__file__).resolve().parents[2]
MODEL = SnakeModel.from_yaml(ROOT / "config" / "robot.yaml")
SERVOS = ServoModel.from_yaml(ROOT / "config" / "robot.yaml", MODEL.joint_names)
GAIT_CONFIG = yaml.safe_load((ROOT / "config" / "gaits.yaml").read_text())["/**"]["ros__parameters"]
DYN_CONFIG = yaml.safe_load((ROOT / "config" / "dynamics_node.yaml").read_text())["/**"][
    "ros__parameters"
]
RAMP = GAIT_CONFIG["ramp_time"]
TRANSITION = GAIT_CONFIG["transition_time"]
BAD_COMMANDS = 15  # sent by test_bad_commands..., counted by the node


#: Simulated time at which the tests' /clock starts [s].
CLOCK_START_S = 1000.0
#: How far behind the clock :func:`_lockstep`'s late commands arrive [s]: beyond the
#: node's command_timeout.
LATE_S = 0.8


@dataclass
class Stamped:
    """A received JointState: its stamp [s] and arrays."""

    stamp: float
    q: np.ndarray
    qd: np.ndarray
    effort: np.ndarray


def _stamped(msg: JointState) -> Stamped:
    return Stamped(
        msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9,
        np.array(msg.position),
        np.array(msg.velocity),
        np.array(msg.effort),
    )


@dataclass
class Listener:
    """A node in this process on the test's private ROS domain, and processes it watches."""

    node: Node
    executor: SingleThreadedExecutor
    tmp: Path
    watched: list[tuple[subprocess.Popen[Any], Path]] = field(default_factory=list)

    def spin_until(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        """Spin until ``done()``; fail after ``timeout`` [s] or when a watched process exits."""
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
            for process, log in self.watched:
                assert process.poll() is None, f"{process.args[0]} exited: {log.read_text()}"
            self.executor.spin_once(timeout_sec=0.01)

    def call(self, srv_type: Any, name: str, request: Any, timeout: float = 20.0) -> Any:
        client = self.node.create_client(srv_type, name)
        try:
            self.spin_until(client.service_is_ready, timeout, f"service {name}")
            future = client.call_async(request)
            self.spin_until(future.done, timeout, f"the answer of {name}")
            return future.result()
        finally:
            self.node.destroy_client(client)

    def start_node(self, executable: str, args: list[str], log: Path) -> subprocess.Popen[bytes]:
        """An installed node of this package, watched by :meth:`spin_until`."""
        with log.open("w") as sink:
            process = subprocess.Popen(
                [str(Path(sys.executable).parent / executable), "--ros-args", *args],
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        self.watched.append((process, log))
        return process


@pytest.fixture
def listener(
    tmp_path: Path, private_ros_domain: int, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Listener]:
    ament = [sys.prefix, *filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep))]
    monkeypatch.setenv("ROS_LOG_DIR", str(tmp_path / "ros_log"))  # this process and children
    monkeypatch.setenv("AMENT_PREFIX_PATH", os.pathsep.join(ament))
    context = Context()
    rclpy.init(
        context=context,
        domain_id=private_ros_domain,
        signal_handler_options=SignalHandlerOptions.NO,
    )
    node = Node("test_listener", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    ros = Listener(node, executor, tmp_path)
    try:
        yield ros
    finally:
        for process, _ in ros.watched:
            _interrupt(process, 20.0)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)


@dataclass
class Graph:
    """`snake sim` running, what it published, and the listener."""

    process: subprocess.Popen[str]
    out: Path
    stdout: Path
    ros: Listener
    started: float  # time.time() before the start [s]
    commands: list[Stamped] = field(default_factory=list)
    states: list[Stamped] = field(default_factory=list)

    def spin_until(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        self.ros.spin_until(done, timeout, what)

    def collect(self, commands: int, states: int, what: str) -> tuple[list[Stamped], list[Stamped]]:
        """The next ``commands`` commands and ``states`` states received."""
        c0, s0 = len(self.commands), len(self.states)
        self.spin_until(
            lambda: len(self.commands) >= c0 + commands and len(self.states) >= s0 + states,
            60.0,
            what,
        )
        return self.commands[c0:], self.states[s0:]

    def past_the_ramp(self) -> None:
        """Wait until the start-up ramp into the gait is over (the commands are the gait) and
        the prediction has begun. gait_node starts once it sees one subscriber of
        /joint_commands, which may be this test's listener: dynamics_node then joins the
        running gait when its discovery completes (up to a 3 s announcement later) and
        publishes rest until its first command (exactly zero)."""
        first = self.commands[0].stamp
        self.spin_until(
            lambda: self.commands[-1].stamp > first + RAMP + 0.1, 60.0, "the end of the ramp"
        )
        self.spin_until(
            lambda: bool(self.states) and bool(np.any(self.states[-1].q != 0.0)),
            60.0,
            "the prediction's first command",
        )

    def logs(self) -> dict[str, str]:
        return {p.name: p.read_text() for p in self.out.glob("*.log")}


def _interrupt(process: subprocess.Popen[Any], timeout: float) -> int:
    """Ctrl-C a process; kill it if it has not exited after ``timeout`` [s]. Its status."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
    return process.wait(timeout=10)


@pytest.fixture
def graph(listener: Listener) -> Iterator[Graph]:
    """A fresh `snake sim` (gait_node, dynamics_node) for one test, its first states received."""
    stdout = listener.tmp / "snake_sim.out"
    cmd = [sys.executable, "-m", "snake_bringup.cli", "sim", "--no-rviz", "--quiet"]
    started = time.time()
    with stdout.open("w") as sink:
        process = subprocess.Popen(
            [*cmd, "--duration", "300", "-o", str(listener.tmp / "run")],
            cwd=ROOT,
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
        )
    listener.watched.append((process, stdout))
    g = Graph(process, listener.tmp / "run", stdout, listener, started)
    listener.node.create_subscription(
        JointState, "/joint_commands", lambda m: g.commands.append(_stamped(m)), 100
    )
    listener.node.create_subscription(
        JointState, "/sim/joint_states", lambda m: g.states.append(_stamped(m)), 100
    )
    try:
        # The first start after an install may compile the kernels (numba) for a while.
        g.spin_until(lambda: bool(g.states and g.commands), 120.0, "the first states")
        yield g
    finally:
        _interrupt(process, 30.0)


def angle_only(sample: JointTrajectory) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A gait sample as a hobby servo's pulse carries it: the angle, no rate (the node's
    prescribed prediction without feed-forward, docs/mfm.md (201))."""
    zero = np.zeros_like(sample.q)
    return sample.q, zero, zero


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


def test_commands_are_the_gait_and_the_prediction_follows_it(graph: Graph) -> None:
    graph.past_the_ramp()
    commands, states = graph.collect(200, 200, "200 commands and 200 states")
    for everything in (graph.commands, graph.states):  # stamps on the system clock, in order
        stamps = np.array([m.stamp for m in everything])
        assert np.all(np.diff(stamps) > 0), "stamps must increase"
        assert graph.started <= stamps[0] and stamps[-1] <= time.time()

    # The commands are the configured gait (to the rounding of the stamps, ~1e-7 s).
    t_ref = commands[0].stamp
    gait = _shifted_gait(commands, t_ref)
    for c in commands:
        np.testing.assert_allclose(c.q, gait(c.stamp - t_ref).q, atol=1e-6)
    # The prediction tracks them, lagging as the servo model does (nominal servos on this
    # gait, driven by the angle alone: at most 0.111 rad behind, bench/servo_lag.py), within
    # a third of the amplitude.
    amplitude = GAIT_CONFIG[GAIT_CONFIG["gait"]]["amplitude"]
    for s in states:
        assert np.max(np.abs(s.q - gait(s.stamp - t_ref).q)) < amplitude / 3, s
    assert max(float(np.max(np.abs(s.effort))) for s in states) > 0.0


def _lockstep(
    listener: Listener,
    namespace: str,
    robot: Path,
    seconds: float,
    extra: Callable[[Node], None],
    late_after: float | None = None,
) -> tuple[list[Stamped], Any]:
    """dynamics_node alone in ``namespace`` on a /clock this test steps (10 ms), fed the
    serpenoid's commands 50 ms ahead of the clock (the node simulates 20 ms behind it) and
    answering each step before the next: every step the node integrates has its commands,
    however slow the machine. From ``late_after`` [s] on, the commands fall behind the clock
    until they arrive :data:`LATE_S` after it (a node too busy to take them on time): the
    node waits for each, neither extrapolating nor calling them stale. ``extra`` adds this
    test's own subscriptions first.

    Returns:
        The node's states, and the gait.
    """
    log = listener.tmp / f"{namespace}_dynamics.log"
    listener.start_node(
        "dynamics_node",
        [
            *("-r", f"__ns:=/{namespace}", "-p", "use_sim_time:=true"),
            *("--params-file", str(ROOT / "config" / "dynamics_node.yaml")),
            *("-p", "max_lag:=10.0"),  # after the file: the last one wins
            *("-p", f"robot_config:={robot}"),
        ],
        log,
    )
    node = listener.node
    clock = node.create_publisher(Clock, "/clock", 10)
    commands = node.create_publisher(JointState, f"/{namespace}/joint_commands", 100)
    states: list[Stamped] = []
    node.create_subscription(
        JointState, f"/{namespace}/joint_states", lambda m: states.append(_stamped(m)), 100
    )
    extra(node)
    params = GAIT_CONFIG["serpenoid"]
    gait = make_gait("serpenoid", MODEL, **params)
    # 10 ms clock steps, commands 50 ms ahead (6 at first: the node keeps the last 10 unread)
    step_ns, ahead_ns = 10**7, 5 * 10**7
    t0_ns = round(CLOCK_START_S * 1e9)

    def tick(t_ns: int) -> None:
        clock.publish(Clock(clock=Time(nanoseconds=t_ns).to_msg()))

    # The node's first state tells that it runs on this clock (its epoch: CLOCK_START_S);
    # until then (discovery, start-up) the first tick is repeated.
    deadline = time.monotonic() + 120.0
    while not states:
        assert time.monotonic() < deadline, f"no state on the first tick: {log.read_text()}"
        tick(t0_ns)
        for _ in range(10):
            listener.executor.spin_once(timeout_sec=0.01)
    assert states[0].stamp == CLOCK_START_S, states[0]
    sent_ns = t0_ns - step_ns
    delay_ns = round(DYN_CONFIG["delay"] * 1e9)
    for k in range(1, round(seconds * 100) + 1):
        t_ns = t0_ns + k * step_ns
        if late_after is not None and t_ns - t0_ns >= late_after * 1e9:
            ahead_ns = -round(LATE_S * 1e9)
        while sent_ns < t_ns + ahead_ns:
            sent_ns += step_ns
            sample = gait((sent_ns - t0_ns) * 1e-9)
            msg = JointState(
                name=list(MODEL.joint_names),
                position=sample.q.tolist(),
                velocity=sample.qd.tolist(),
            )
            msg.header.stamp = Time(nanoseconds=sent_ns).to_msg()
            commands.publish(msg)
        tick(t_ns)
        if t_ns - delay_ns > t0_ns:  # simulated up to t - delay, or the newest command
            due = min(t_ns - delay_ns, sent_ns) * 1e-9 - 1.5 / DYN_CONFIG["sim_rate"]
            listener.spin_until(lambda d=due: states[-1].stamp >= d, 60.0, f"the state at {due}")
    _interrupt(listener.watched.pop()[0], 20.0)  # stopped: no longer watched
    text = log.read_text()
    assert "Traceback" not in text and "0 messages rejected" in text, text
    return states, gait


@pytest.mark.parallel
@pytest.mark.parametrize("late_after", [None, 1.0], ids=["on-time", "late-commands"])
def test_prescribed_mode_on_sim_time_is_the_offline_simulation(
    listener: Listener, late_after: float | None
) -> None:
    """dynamics_node in lock step with this test's /clock (:func:`_lockstep`): the motion is
    snake_dynamics.simulate() of the same gait with the same servo gains (the node
    interpolates 100 Hz commands: ~1e-8 rad, test_simulator); also when the commands fall
    behind the clock, by more than ``command_timeout`` (a busy node takes them late)."""
    states, gait = _lockstep(
        listener, "lockstep", ROOT / "config" / "robot.yaml", 3.0, lambda _: None, late_after
    )

    # From a state after the first commands arrived: the offline simulation of the gait.
    start = next(s for s in states if s.stamp >= CLOCK_START_S + 0.1)
    rest = [s for s in states if s.stamp > start.stamp]
    assert len(rest) > 250 - (0 if late_after is None else LATE_S * 100)  # at 100 Hz
    dt = 1.0 / DYN_CONFIG["sim_rate"]
    span = round((rest[-1].stamp - start.stamp) / dt) * dt
    sub = stable_substeps(MODEL, SERVOS, dt)  # the node's RK4 steps per step
    offline = simulate(  # the robot config's servo model, no feed-forward (as the node)
        MODEL,
        start.q,
        start.qd,
        None,
        span,
        dt / sub,
        servo=Servo.of(SERVOS, lambda t: angle_only(gait(t + start.stamp - CLOCK_START_S))),
    )
    offline = replace(offline, q=offline.q[::sub], tau=offline.tau[::sub])
    rows = [round((s.stamp - start.stamp) / dt) for s in rest]
    assert all(
        abs(r * dt - (s.stamp - start.stamp)) < 1e-6 for r, s in zip(rows, rest, strict=True)
    )
    error = max(float(np.max(np.abs(s.q - offline.q[r]))) for r, s in zip(rows, rest, strict=True))
    assert error < 1e-6, error
    print(f"live prediction vs offline simulate(): max joint-angle difference {error:.2g} rad")
    torque = max(
        float(np.max(np.abs(s.effort - offline.tau[r]))) for r, s in zip(rows, rest, strict=True)
    )
    assert torque < 1e-4 * float(np.max(np.abs(offline.tau))), torque


@pytest.mark.parallel
def test_on_the_ground_the_node_publishes_the_travelling_base(listener: Listener) -> None:
    """A floating robot (config/robot_ground.yaml) in lock step (:func:`_lockstep`): with each
    joint state an Odometry of the same stamp (world -> <ns>/base_link); the tail stays on
    the ground, unit quaternions, and it travels under the gait; the twist is the pose's rate
    (linear: R_0 v_0 against the positions' differences; angular: w_0 against the
    quaternions'), so its frame is the tail's, as nav_msgs asks; joints and base come from one
    simulation under the servos: the offline CrawlingSimulator, started from a state and its
    odometry, reproduces every later joint angle and tail position."""
    odoms: list[Odometry] = []

    def listen(node: Node) -> None:
        node.create_subscription(Odometry, "/ground/odom", odoms.append, 100)

    states, gait = _lockstep(listener, "ground", ROOT / "config" / "robot_ground.yaml", 2.0, listen)
    listener.spin_until(lambda: len(odoms) >= len(states), 20.0, "an odom per state")
    assert [o.header.stamp for o in odoms] == [
        Time(nanoseconds=round(s.stamp * 1e9)).to_msg() for s in states
    ]
    assert {(o.header.frame_id, o.child_frame_id) for o in odoms} == {("world", "ground/base_link")}
    t = np.array([s.stamp for s in states])
    p = np.array(
        [[o.pose.pose.position.x, o.pose.pose.position.y, o.pose.pose.position.z] for o in odoms]
    )
    quat = np.array(
        [
            [
                o.pose.pose.orientation.x,
                o.pose.pose.orientation.y,
                o.pose.pose.orientation.z,
                o.pose.pose.orientation.w,
            ]
            for o in odoms
        ]
    )
    v = np.array(
        [[o.twist.twist.linear.x, o.twist.twist.linear.y, o.twist.twist.linear.z] for o in odoms]
    )
    w = np.array(
        [[o.twist.twist.angular.x, o.twist.twist.angular.y, o.twist.twist.angular.z] for o in odoms]
    )
    np.testing.assert_allclose(np.linalg.norm(quat, axis=1), 1.0, atol=1e-12)
    assert np.all((p[:, 2] > 0.0) & (p[:, 2] < 0.05))  # on the ground (tail radius 35 mm)
    moving = t >= CLOCK_START_S + 0.5
    assert np.linalg.norm(p[-1, :2] - p[moving][0, :2]) > 1e-3  # it travels
    rotations = Rotation.from_quat(quat)
    world_v = rotations.apply(v)
    dt = np.diff(t)
    rate = np.diff(p, axis=0) / dt[:, None]
    mean_v = 0.5 * (world_v[1:] + world_v[:-1])
    scale = np.max(np.abs(world_v[moving]))
    # per 10 ms sample, the largest component's error; the median (contact transients of
    # ~1 ms are not resolved by 10 ms samples; a twist in the wrong frame is off by tens of %)
    assert np.median(np.max(np.abs(rate - mean_v), axis=1)[moving[1:]]) < 0.02 * scale
    turn = (rotations[:-1].inv() * rotations[1:]).as_rotvec() / dt[:, None]  # tail frame
    error = np.max(np.abs(turn - 0.5 * (w[1:] + w[:-1])), axis=1)[moving[1:]]
    assert np.median(error) < 0.02 * np.max(np.abs(w[moving]))
    # joints and base are one simulation under the servos (ground_model: servos): from a
    # state and its odometry, the offline CrawlingSimulator reproduces both
    robot = ROOT / "config" / "robot_ground.yaml"
    model = on_the_ground(SnakeModel.from_yaml(robot))
    servos = ServoModel.from_yaml(robot, model.joint_names)
    i0 = int(np.argmax(moving))
    start = states[i0]
    sim = CrawlingSimulator(model, 1.0 / DYN_CONFIG["sim_rate"], servo=servos)
    base = FloatingState(p[i0], quat[i0], start.q, np.concatenate([v[i0], w[i0], start.qd]))
    sim.reset(0.0, start.q, start.qd, base)
    offset = start.stamp - CLOCK_START_S
    source = MotionInput(lambda t: gait(t + offset), servos.dead_times)  # angles only
    q_error = p_error = 0.0
    for state, position in zip(states[i0 + 1 :], p[i0 + 1 :], strict=True):
        sim.advance(round((state.stamp - start.stamp) / sim.dt) - round(sim.time / sim.dt), source)
        q_error = max(q_error, float(np.max(np.abs(state.q - sim.q))))
        p_error = max(p_error, float(np.max(np.abs(position - sim.base_state.position))))
    print(f"live crawler vs offline: joints {q_error:.2g} rad, tail {p_error:.2g} m")
    assert q_error < 1e-6 and p_error < 1e-6, (q_error, p_error)


def _set(graph: Graph, name: str, value: Any) -> Any:
    if isinstance(value, float):
        pv = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=value)
    else:
        pv = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
    request = SetParameters.Request(parameters=[ParameterMsg(name=name, value=pv)])
    return graph.ros.call(SetParameters, "/sim/gait_node/set_parameters", request).results[0]


def test_gait_change_is_smooth_and_a_bad_value_is_refused(graph: Graph) -> None:
    graph.past_the_ramp()
    gait_name = GAIT_CONFIG["gait"]
    old = GAIT_CONFIG[gait_name]["amplitude"]
    new = old + 0.4
    result = _set(graph, f"{gait_name}.amplitude", new)
    assert result.successful, result.reason
    c0 = len(graph.commands)
    last = graph.commands[-1].stamp
    graph.spin_until(
        lambda: graph.commands[-1].stamp > last + TRANSITION + 1.5, 60.0, "the new gait"
    )
    commands = graph.commands[c0:]
    q = np.array([c.q for c in commands])
    dt = np.diff([c.stamp for c in commands])
    omega = 2 * math.pi * GAIT_CONFIG[gait_name]["frequency"]
    # Quintic blend: |q_dot| <= max(|v_old|, |v_new|) + 1.875 |q_new - q_old| / T, per joint.
    speed = new * omega + 1.875 * (new - old) / TRANSITION
    steps = np.max(np.abs(np.diff(q, axis=0)), axis=1)
    assert np.all(steps <= speed * dt * 1.01 + 1e-9), (steps / dt).max()
    # ... while switching at once would jump by up to (new - old) = 0.4 rad; and it did change:
    stamps = np.array([c.stamp for c in commands])
    last_period = q[stamps > stamps[-1] - 1.0 / GAIT_CONFIG[gait_name]["frequency"]]
    assert np.max(np.abs(last_period)) == pytest.approx(new, abs=0.02)

    # Out of range, wrong type and unknown gait: refused with a reason; the node goes on.
    for name, value in (
        (f"{gait_name}.amplitude", 5.0),
        (f"{gait_name}.amplitude", "wide"),
        ("gait", "moonwalk"),
    ):
        result = _set(graph, name, value)
        assert not result.successful and result.reason, (name, value)
    commands, _ = graph.collect(50, 0, "commands after the refused values")
    assert np.max(np.abs([c.q for c in commands])) <= new + 1e-9  # still the accepted gait


def test_bad_commands_are_rejected_and_the_states_stay_finite(graph: Graph) -> None:
    node = graph.ros.node
    pub = node.create_publisher(JointState, "/joint_commands", 50)
    graph.spin_until(lambda: pub.get_subscription_count() >= 2, 20.0, "the dynamics subscriber")
    graph.past_the_ramp()
    names = list(MODEL.joint_names)
    n = len(names)
    bad = [
        (names, [math.nan] * n, [0.0] * n),  # NaN
        (names, [0.0] * n, [math.inf] * n),  # inf
        ([*names[:-1], "joint_99"], [0.0] * n, [0.0] * n),  # unknown name
        (names, [0.0] * (n - 1), [0.0] * n),  # wrong length
        (names, [1.0] * n, [0.0] * n),  # valid, but stamped a minute ahead (below)
    ]
    for i in range(BAD_COMMANDS):
        msg = JointState()
        ahead = Duration(seconds=60 if i % len(bad) == len(bad) - 1 else 0)
        msg.header.stamp = (node.get_clock().now() + ahead).to_msg()
        msg.name, msg.position, msg.velocity = bad[i % len(bad)]
        pub.publish(msg)
    _, states = graph.collect(0, 100, "100 states after the bad commands")
    assert all(np.all(np.isfinite(s.q)) and np.all(np.isfinite(s.effort)) for s in states)
    assert max(float(np.max(np.abs(s.q))) for s in states) < math.pi  # and still sensible
    # and still following the gait (behind it by the servos' lag: at most 0.111 rad on this
    # gait): a command from the future (1 rad on every joint) did not shadow the real ones
    latest = states[-1]
    command = min(graph.commands, key=lambda c: abs(c.stamp - latest.stamp))
    assert np.max(np.abs(latest.q - command.q)) < 0.2, (latest, command)
    node.destroy_publisher(pub)
    # dynamics_node's final status counts exactly the bad ones as rejected
    assert _interrupt(graph.process, 30.0) == 130
    counts = re.findall(r"(\d+) messages rejected", graph.logs()["dynamics_node.log"])
    assert counts and int(counts[-1]) == BAD_COMMANDS, graph.logs()["dynamics_node.log"]


def test_stop_ramps_to_rest_start_resumes_and_reset_answers(graph: Graph) -> None:
    answer = graph.ros.call(Trigger, "/sim/gait_node/stop", Trigger.Request())
    assert answer.success and "rest" in answer.message
    c0 = len(graph.commands)

    def at_rest() -> bool:
        tail = graph.commands[c0:][-20:]
        return len(tail) == 20 and all(np.all(c.q == 0.0) and np.all(c.qd == 0.0) for c in tail)

    graph.spin_until(at_rest, RAMP + 60.0, "20 commands at rest")
    answer = graph.ros.call(Trigger, "/sim/gait_node/stop", Trigger.Request())
    assert not answer.message.startswith("ramping"), answer.message
    answer = graph.ros.call(Trigger, "/sim/dynamics_node/reset", Trigger.Request())
    assert answer.success, answer.message
    answer = graph.ros.call(Trigger, "/sim/gait_node/start", Trigger.Request())
    assert answer.success and "ramping" in answer.message
    c1 = len(graph.commands)
    graph.spin_until(
        lambda: any(np.max(np.abs(c.q)) > 0.0 for c in graph.commands[c1:]), 60.0, "motion"
    )


@pytest.mark.parallel
def test_the_prediction_begins_at_the_first_command(listener: Listener) -> None:
    """A dynamics node that hears its first command while the robot is already away from rest
    (a gait that started before the node, discovery) starts its prediction there: every
    state from the first command on holds the commanded pose (no servo transient from rest)."""
    common = ["-r", "__ns:=/first", "-p", "use_sim_time:=true"]
    common += ["-p", f"robot_config:={ROOT / 'config' / 'robot.yaml'}"]
    log = listener.tmp / "first_dynamics.log"
    process = listener.start_node("dynamics_node", common, log)
    node = listener.node
    clock = node.create_publisher(Clock, "/clock", 10)
    commands = node.create_publisher(JointState, "/first/joint_commands", 10)
    states: list[Stamped] = []
    node.create_subscription(
        JointState, "/first/joint_states", lambda m: states.append(_stamped(m)), 100
    )
    pose = np.full(MODEL.n_joints, 0.3)
    t_ns = round(CLOCK_START_S * 1e9)
    first_sent = None
    deadline = time.monotonic() + 120.0
    while first_sent is None or len([s for s in states if s.stamp >= first_sent]) < 50:
        t_ns += 10**7
        stamp = Time(nanoseconds=t_ns).to_msg()
        clock.publish(Clock(clock=stamp))
        if commands.get_subscription_count() > 0 and states:  # heard, and running from rest
            msg = JointState(name=list(MODEL.joint_names), position=pose.tolist())
            msg.header.stamp = stamp
            commands.publish(msg)
            first_sent = t_ns * 1e-9 if first_sent is None else first_sent
        listener.executor.spin_once(timeout_sec=0.01)
        assert time.monotonic() < deadline, log.read_text()
    assert first_sent is not None
    assert np.array_equal(states[0].q, np.zeros(MODEL.n_joints))  # at rest before
    # every state stamped after the first command it can have heard (one command period on)
    after = [s for s in states if s.stamp >= first_sent + 0.01]
    worst = max(float(np.max(np.abs(s.q - pose))) for s in after)
    assert worst < 1e-6, worst
    assert _interrupt(process, 20.0) == 0, log.read_text()


@pytest.mark.parallel
def test_both_nodes_follow_sim_time_and_torque_mode_integrates_efforts(listener: Listener) -> None:
    """gait_node and dynamics_node (torque mode) with use_sim_time, on a /clock this test
    drives from CLOCK_START_S: every stamp is on that clock, the applied effort is the
    commanded one, and the motion is simulate() with those torques.
    """
    common = ["-r", "__ns:=/clocked", "-p", "use_sim_time:=true"]
    common += ["-p", f"robot_config:={ROOT / 'config' / 'robot.yaml'}"]
    logs = [listener.tmp / "clocked_dynamics.log", listener.tmp / "clocked_gait.log"]
    # max_lag 10 s: on a loaded machine this test's /clock may run ahead of the node, and
    # skipping simulated time (the node's real-time behaviour) would break the comparison
    nodes = [
        listener.start_node(
            "dynamics_node", [*common, "-p", "mode:=torque", "-p", "max_lag:=10.0"], logs[0]
        ),
        listener.start_node("gait_node", common, logs[1]),
    ]
    node = listener.node
    clock = node.create_publisher(Clock, "/clock", 10)
    efforts = node.create_publisher(JointState, "/clocked/joint_efforts", 10)
    states: list[Stamped] = []
    commands: list[Stamped] = []
    node.create_subscription(
        JointState, "/clocked/joint_states", lambda m: states.append(_stamped(m)), 100
    )
    node.create_subscription(
        JointState, "/clocked/joint_commands", lambda m: commands.append(_stamped(m)), 100
    )
    tau = np.linspace(-0.01, 0.01, MODEL.n_joints)
    t_ns = round(CLOCK_START_S * 1e9)
    deadline = time.monotonic() + 120.0

    # until 100 states in a row carry the test's efforts: how many come before the node hears
    # this publisher depends on discovery, not on the test
    def driven() -> list[Stamped]:
        """The latest unbroken run of states that applied the test's efforts."""
        run = itertools.takewhile(lambda s: np.array_equal(s.effort, tau), reversed(states))
        return list(run)[::-1]

    while len(commands) < 100 or len(driven()) <= 100:
        t_ns += 10**7  # 10 ms of simulated time per message
        stamp = Time(nanoseconds=t_ns).to_msg()
        clock.publish(Clock(clock=stamp))
        msg = JointState(name=list(MODEL.joint_names), effort=tau.tolist())
        msg.header.stamp = stamp
        efforts.publish(msg)
        listener.executor.spin_once(timeout_sec=0.01)
        assert time.monotonic() < deadline, [log.read_text() for log in logs]
    for stream in (states, commands):
        stamps = np.array([s.stamp for s in stream])
        assert np.all((stamps >= CLOCK_START_S) & (stamps <= t_ns * 1e-9 + 1e-9))
        assert np.all(np.diff(stamps) > 0)
    start, *rest = driven()
    dt = 1.0 / DYN_CONFIG["sim_rate"]
    span = round((rest[-1].stamp - start.stamp) / dt) * dt
    offline = simulate(MODEL, start.q, start.qd, lambda t: tau, span, dt)
    error = max(
        float(np.max(np.abs(s.q - offline.q[round((s.stamp - start.stamp) / dt)]))) for s in rest
    )
    assert error < 1e-9, error  # the same RK4 on the same constant torques
    assert float(np.max(np.abs(rest[-1].q))) > 1e-3  # and it moved
    codes = [_interrupt(process, 20.0) for process in nodes]
    assert codes == [0, 0], [log.read_text() for log in logs]
    assert all("Traceback" not in log.read_text() for log in logs)
    assert "0.000 s skipped" in logs[0].read_text()  # within max_lag: nothing skipped


def test_snake_sim_starts_the_nodes_says_what_it_skipped_and_ctrl_c_stops_them(
    graph: Graph,
) -> None:
    """The runner's own account from start to end, on one bring-up."""
    # the nodes may publish before the runner has seen every ready line (a loaded machine)
    graph.spin_until(lambda: "all nodes ready" in graph.stdout.read_text(), 60.0, "all ready")
    text = graph.stdout.read_text()
    assert "started /sim/gait_node" in text and "started /sim/dynamics_node" in text
    for optional in ("/sim/robot_state_publisher", "/world_to_sim"):  # RViz: --no-rviz
        if f"started {optional}" not in text:  # present on a full ROS install
            assert re.search(f"skipped {optional}: .+", text), text
    pids = [int(p) for p in re.findall(r"\(pid (\d+)\)", text)]
    assert len(pids) >= 2
    graph.process.send_signal(signal.SIGINT)
    assert graph.process.wait(timeout=60) == 130
    text = graph.stdout.read_text()
    assert "/sim/gait_node: exit status 0" in text, text
    assert "/sim/dynamics_node: exit status 0" in text, text
    assert "did not stop" not in text, text
    for pid in pids:
        assert (
            not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
        )
    logs = graph.logs()
    assert set(logs) >= {"gait_node.log", "dynamics_node.log"}
    for name, log in logs.items():
        assert "Traceback" not in log, (name, log)
    # each wrote its final status line
    assert re.search(r"published \d+ messages on /joint_commands", logs["gait_node.log"])
    assert re.search(r"\d+ messages rejected", logs["dynamics_node.log"])


@pytest.mark.parallel
def test_on_wheels_the_node_is_the_offline_wheeled_simulation(listener: Listener) -> None:
    """A robot on wheels (config/robot_wheels.yaml) in lock step (:func:`_lockstep`): from a
    state and its odometry (the whole of Kane's state: the tail's pose and the joints), the
    offline WheeledSimulator under the same servos reproduces every later joint angle and
    tail position; the snake rolls (this gait, robot.yaml's, moves only every other joint)."""
    odoms: list[Odometry] = []

    def listen(node: Node) -> None:
        node.create_subscription(Odometry, "/wheels/odom", odoms.append, 100)

    robot = ROOT / "config" / "robot_wheels.yaml"
    states, gait = _lockstep(listener, "wheels", robot, 2.0, listen)
    listener.spin_until(lambda: len(odoms) >= len(states), 20.0, "an odom per state")
    assert [o.header.stamp for o in odoms] == [
        Time(nanoseconds=round(s.stamp * 1e9)).to_msg() for s in states
    ]
    model = SnakeModel.from_yaml(robot)
    servos = ServoModel.from_yaml(robot, model.joint_names)
    i0 = next(i for i, s in enumerate(states) if s.stamp >= CLOCK_START_S + 0.1)
    start, pose = states[i0], odoms[i0].pose.pose
    yaw = 2.0 * math.atan2(pose.orientation.z, pose.orientation.w)
    sim = WheeledSimulator(model, 1.0 / DYN_CONFIG["sim_rate"], servo=servos)
    sim.reset(0.0, start.q, start.qd, pose=(pose.position.x, pose.position.y, yaw + math.pi / 2))
    offset = start.stamp - CLOCK_START_S
    source = MotionInput(lambda t: gait(t + offset), servos.dead_times)  # angles only
    q_error = p_error = 0.0
    for state, odom in zip(states[i0 + 1 :], odoms[i0 + 1 :], strict=True):
        sim.advance(round((state.stamp - start.stamp) / sim.dt) - round(sim.time / sim.dt), source)
        q_error = max(q_error, float(np.max(np.abs(state.q - sim.q))))
        p = odom.pose.pose.position
        p_error = max(
            p_error, math.hypot(p.x - sim.base_state.position[0], p.y - sim.base_state.position[1])
        )
    print(f"live wheels vs offline: joints {q_error:.2g} rad, tail {p_error:.2g} m")
    assert q_error < 1e-6 and p_error < 1e-6, (q_error, p_error)
    end = odoms[-1].pose.pose.position
    assert math.hypot(end.x - pose.position.x, end.y - pose.position.y) > 0.01  # it rolls
