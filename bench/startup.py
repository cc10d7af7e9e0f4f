"""Start-up time of every node: from spawning it to its first message, as JSON on stdout.

Each node is spawned alone, as ``snake``'s runner spawns it (its NodeSpec from
``snake_bringup.graph``, the same command line and parameter files, a session of its own):
gait_node and dynamics_node of ``snake sim``; driver_node (against the real firmware in
simavr, started afresh for each run), compare_node and recorder_node of ``snake demo``;
replay_node of ``snake replay``; web_viewer_node as ``ros2 run`` starts it. Timed from
``Popen``:

* ``first_s``: the first message of the node's main output, received by a subscription of
  this process created before the spawn (reliable, volatile: the QoS every node offers).
  The recorder publishes nothing: its figure is when its subscription to /joint_commands
  matches a publisher here (from then on it records). The web viewer's is its first
  WebSocket message. compare_node and web_viewer_node get /sim and /measured joint states
  from this process at 100 Hz; replay_node plays a 3 s bag and waits its ``delay`` (1 s by
  default) before the first /clock, by design;
* ``ready_s``: its ready line (built and spinning: what the runner waits for);
* ``/diagnostics_s``: driver_node's first /diagnostics.

``first_s`` includes DDS discovery: the node's publisher and this subscription must match
before a message gets through. ``control_publisher`` measures that alone: a process that
only creates an rclpy node with one publisher at 100 Hz.

dynamics_node's start-up is broken down as well: ``python -X importtime`` of its module
(what the costly packages took) and, in a child process that builds and spins the node
as ``common.run`` does, the time each stage takes up to its first message. ``--load N``
keeps N busy processes running meanwhile.

ROS and the package are imported inside the functions: this file is also the child
processes (the breakdown, the control publisher), whose imports are part of what they time.

    python bench/startup.py [--repeat 5] [--load 1] [--nodes NAME ...] [--output FILE.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from report import emit  # bench/report.py (this folder is on sys.path)

#: What is timed, in the order it runs.
NODES = (
    "control_publisher",
    "gait_node",
    "dynamics_node",
    "driver_node",
    "compare_node",
    "recorder_node",
    "replay_node",
    "web_viewer_node",
)
#: Longest wait for a node's first message [s] (a node that never publishes is a result).
TIMEOUT_S = 60.0
#: Pause between creating this process's subscriptions and the spawn [s].
SETTLE_S = 0.5
#: Rate of the joint states this process feeds to compare_node and web_viewer_node [Hz].
FEED_HZ = 100.0
#: Longest wait for compare_node's detached plotter after the node stopped [s].
PLOTS_TIMEOUT_S = 120.0
#: The figures of a run that are times [s since the spawn].
TIMED = ("first_s", "ready_s", "/diagnostics_s")
#: Options of the child processes.
STAGES_OPTION, CONTROL_OPTION = "--dynamics-stages", "--control-publisher"
#: dynamics_node's stages: (what, the mark that ends it) (:func:`dynamics_stages`).
STAGES = (
    ("python start", "interpreter"),
    ("imports", "imports"),
    ("rclpy.init", "rclpy_init"),
    ("parameters, model, Simulator", "warm_up_start"),
    ("Simulator.warm_up (numba kernels)", "warm_up"),
    ("publisher, subscription, service, timer", "node_built"),
    ("wait for the first timer tick", "first_tick_start"),
    ("first tick up to its publish", "first_publish"),
)


# ------------------------------------------------------------------ the nodes' inputs
@dataclass
class Probe:
    """What a run watches: the first time [time.monotonic()] of each output, the checks
    polled while it waits, and what to undo afterwards."""

    first: dict[str, float | None]
    checks: list[Callable[[], None]] = field(default_factory=list)
    cleanup: list[Callable[[], object]] = field(default_factory=list)

    def seen(self, output: str) -> None:
        if self.first[output] is None:
            self.first[output] = time.monotonic()


class Bench:
    """This process on ROS: the subscriptions, publishers and WebSocket client of a run."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.node import Node
        from rclpy.signals import SignalHandlerOptions

        self.context = Context()
        rclpy.init(context=self.context, signal_handler_options=SignalHandlerOptions.NO)
        self.node = Node("startup_bench", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def close(self) -> None:
        import rclpy

        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)

    def spin(self, seconds: float) -> None:
        """Handle callbacks for ``seconds``."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.005)

    def watch(self, probe: Probe, topic: str, msg_type: Any) -> None:
        """Note the arrival of the first message on ``topic``.

        Raises:
            RuntimeError: something on this ROS domain publishes there already.
        """
        sub = self.node.create_subscription(msg_type, topic, lambda _: probe.seen(topic), 10)
        probe.cleanup.append(partial(self.node.destroy_subscription, sub))
        if self.node.count_publishers(topic):
            raise RuntimeError(
                f"{topic} has a publisher before the node starts: another graph runs on "
                f"ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID', '0')}; set another one"
            )

    def feed(self, probe: Probe, joints: list[str]) -> None:
        """Publish /sim and /measured joint states (zero angles, stamped now) at FEED_HZ."""
        from sensor_msgs.msg import JointState

        pubs = [
            self.node.create_publisher(JointState, topic, 10)
            for topic in ("/sim/joint_states", "/measured/joint_states")
        ]

        def publish() -> None:
            msg = JointState(name=joints, position=[0.0] * len(joints))
            msg.header.stamp = self.node.get_clock().now().to_msg()
            for pub in pubs:
                pub.publish(msg)

        timer = self.node.create_timer(1.0 / FEED_HZ, publish)
        probe.cleanup.append(partial(self.node.destroy_timer, timer))
        probe.cleanup += [partial(self.node.destroy_publisher, pub) for pub in pubs]

    def matched(self, probe: Probe, topic: str, output: str) -> None:
        """Note when a subscription matches a publisher of ``topic`` here (the recorder's)."""
        from sensor_msgs.msg import JointState

        pub = self.node.create_publisher(JointState, topic, 10)
        probe.checks.append(lambda: probe.seen(output) if pub.get_subscription_count() else None)
        probe.cleanup.append(partial(self.node.destroy_publisher, pub))


def websocket_first(probe: Probe, port: int, output: str) -> None:
    """Note the first WebSocket message of the web viewer on ``port`` (connecting until it
    listens)."""
    from websockets.exceptions import WebSocketException
    from websockets.sync.client import ClientConnection, connect

    client: list[ClientConnection] = []
    connections = contextlib.ExitStack()

    def check() -> None:
        with contextlib.suppress(OSError, TimeoutError, WebSocketException):
            if not client:
                uri = f"ws://127.0.0.1:{port}/ws"
                client.append(connections.enter_context(connect(uri, open_timeout=0.5)))
            client[0].recv(timeout=0.005)
            probe.seen(output)

    probe.checks.append(check)
    probe.cleanup.append(connections.close)


def write_bag(path: Path, joints: list[str], seconds: float = 3.0) -> Path:
    """A bag of ``seconds`` of zero /sim/joint_states at 100 Hz for replay_node."""
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    from snake_viz.bag import BagRecorder

    bag = BagRecorder(path)
    bag.open()
    bag.add_topic("/sim/joint_states", "sensor_msgs/msg/JointState")
    t0 = time.time_ns()
    for k in range(round(seconds * 100)):
        stamp = t0 + k * 10_000_000
        msg = JointState(name=joints, position=[0.0] * len(joints))
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp, 10**9)
        bag.write("/sim/joint_states", stamp, serialize_message(msg))
    bag.close()
    return path


def control_publisher() -> None:
    """In the child: an rclpy node with one JointState publisher at 100 Hz, nothing else."""
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from rclpy.node import Node
    from sensor_msgs.msg import JointState

    rclpy.init()
    node = Node("control_publisher")
    pub = node.create_publisher(JointState, "/startup_control", 10)
    node.create_timer(0.01, lambda: pub.publish(JointState()))
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:  # leave the graph as the nodes do (the next run's discovery depends on it)
        node.destroy_node()
        rclpy.try_shutdown()


# ------------------------------------------------------------------------ one run
@dataclass(frozen=True)
class Plan:
    """How one node is started and what is timed: its NodeSpec and command line, the main
    output and the further ones, the web viewer's port, compare_node's report folder."""

    spec: Any  # snake_bringup.graph.NodeSpec
    command: list[str]
    main: str
    also: tuple[str, ...] = ()
    port: int = 0
    report: Path | None = None


def plan(name: str, folder: Path, joints: list[str], robot: Any) -> Plan:
    """``name`` as its graph describes it, its files in ``folder``; ``robot``: the
    driver's endpoint (snake_bringup.emulator.Endpoint).

    Raises:
        RuntimeError: the node is not installed.
    """
    from snake_bringup.emulator import free_port
    from snake_bringup.graph import NodeSpec, demo_graph, replay_graph, simulation_graph
    from snake_bringup.runner import find_executable, ros_command
    from snake_ros.paths import PACKAGE

    if name == "control_publisher":
        spec = NodeSpec("startup_bench", name, name)  # not of this package: no ready line
        return Plan(spec, [sys.executable, __file__, CONTROL_OPTION], "/startup_control")
    port = free_port() if name == "web_viewer_node" else 0
    graph: tuple[NodeSpec, ...] = (
        (NodeSpec(PACKAGE, name, name, parameters=({"port": port},)),)
        if name == "web_viewer_node"
        else replay_graph(str(write_bag(folder / "bag", joints)), rviz=False)
        if name == "replay_node"
        else simulation_graph(rviz=False)
        if name in ("gait_node", "dynamics_node")
        else demo_graph(robot, folder)
    )
    spec = next(spec for spec in graph if spec.executable == name)
    exe = find_executable(spec)
    if exe is None:
        raise RuntimeError(f"{name} is not installed: make (installs the package)")
    cmd, files = ros_command(spec, exe, folder / "params")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    main = {
        "gait_node": "/joint_commands",
        "dynamics_node": "/sim/joint_states",
        "driver_node": "/measured/joint_states",
        "compare_node": "/compare/error",
        "recorder_node": "subscribed to /joint_commands",
        "replay_node": "/clock",
        "web_viewer_node": "WebSocket /ws",
    }[name]
    also = ("/diagnostics",) if name == "driver_node" else ()
    report = folder / "compare" if name == "compare_node" else None
    return Plan(spec, cmd, main, also, port, report)


def probe_for(bench: Bench, how: Plan, joints: list[str]) -> Probe:
    """Subscriptions, publishers and clients for ``how``, created before the spawn."""
    from diagnostic_msgs.msg import DiagnosticArray
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState

    types = {"/diagnostics": DiagnosticArray, "/clock": Clock}
    probe = Probe(dict.fromkeys((how.main, *how.also)))
    if how.spec.executable in ("compare_node", "web_viewer_node"):
        bench.feed(probe, joints)
    if how.spec.executable == "recorder_node":
        bench.matched(probe, "/joint_commands", how.main)
    if how.port:
        websocket_first(probe, how.port, how.main)
    for topic in (how.main, *how.also):
        if topic.startswith("/"):
            bench.watch(probe, topic, types.get(topic, JointState))
    return probe


def one_run(bench: Bench, name: str, folder: Path, joints: list[str]) -> dict[str, Any]:
    """Spawn ``name`` as the runner does and time its outputs [s since the spawn]."""
    from snake_bringup.emulator import Emulator, Endpoint
    from snake_bringup.runner import start_child, stop_children

    with contextlib.ExitStack() as stack:
        robot = (
            stack.enter_context(Emulator()).endpoint
            if name == "driver_node"
            else Endpoint("serial", os.devnull)  # demo_graph's driver, which is not started
        )
        how = plan(name, folder, joints, robot)
        probe = probe_for(bench, how, joints)
        stack.callback(lambda: [undo() for undo in probe.cleanup])
        bench.spin(SETTLE_S)
        spawned = time.monotonic()
        child = start_child(how.spec, how.command, folder / f"{name}.log", quiet=True)
        stack.callback(stop_children, [child])
        ready: float | None = None
        while time.monotonic() - spawned < TIMEOUT_S and child.process.poll() is None:
            bench.executor.spin_once(timeout_sec=0.005)
            for check in probe.checks:
                check()
            if ready is None and child.ready.is_set():
                ready = time.monotonic()
            if (ready or not child.reports_ready) and None not in probe.first.values():
                break
    if how.report is not None:  # its plotter outlives it: not as load on the next run
        deadline = time.monotonic() + PLOTS_TIMEOUT_S
        while not (how.report / "plots.log").exists() and time.monotonic() < deadline:
            time.sleep(0.1)

    def since(t: float | None) -> float | None:
        return None if t is None else round(t - spawned, 3)

    return {
        "output": how.main,
        "first_s": since(probe.first[how.main]),
        "ready_s": since(ready),
        **{f"{topic}_s": since(probe.first[topic]) for topic in how.also},
        "exit_status": child.process.returncode,
    }


# --------------------------------------------------------- dynamics_node, broken down
def import_times(module: str) -> dict[str, float]:
    """``python -X importtime -c 'import module'``: its total, and for the packages that
    cost most, what importing each first cost (its largest cumulative time, the modules it
    pulled in first included, so the figures overlap) [s]."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
    )
    by_package: dict[str, float] = {}
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        _, cumulative, name = line[len("import time:") :].split("|")
        package = name.strip() if name.strip() == module else name.strip().split(".")[0]
        by_package[package] = max(by_package.get(package, 0.0), int(cumulative) * 1e-6)
    total = by_package.pop(module, 0.0)
    ranked = sorted(by_package.items(), key=lambda kv: -kv[1])[:8]
    return {"total": round(total, 3), **{name: round(s, 3) for name, s in ranked}}


def dynamics_stages(spawned: float, ros_args: list[str]) -> dict[str, float]:
    """In the child: dynamics_node imported, built and spun as ``common.run`` does; when
    each stage of :data:`STAGES` ended [s since ``spawned``, the parent's time.monotonic()]."""
    marks = {"interpreter": time.monotonic()}
    from snake_ros import dynamics_node

    marks["imports"] = time.monotonic()
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.publisher import Publisher
    from rclpy.signals import SignalHandlerOptions

    rclpy.init(args=["dynamics_node", *ros_args], signal_handler_options=SignalHandlerOptions.NO)
    marks["rclpy_init"] = time.monotonic()

    def first_call(owner: Any, name: str, key: str, only: Callable[[Any], bool]) -> None:
        """Mark the start (``key``_start) and end (``key``) of the first call of a method."""
        original = getattr(owner, name)

        def timed(self: Any, *args: Any) -> Any:
            start = time.monotonic()
            try:
                return original(self, *args)
            finally:
                if only(self) and key not in marks:
                    marks[f"{key}_start"], marks[key] = start, time.monotonic()

        setattr(owner, name, timed)

    first_call(dynamics_node.Simulator, "warm_up", "warm_up", lambda _: True)
    first_call(dynamics_node.DynamicsNode, "_tick", "first_tick", lambda _: True)
    first_call(Publisher, "publish", "first_publish", lambda p: p.topic_name.endswith("states"))
    node = dynamics_node.DynamicsNode()
    marks["node_built"] = time.monotonic()
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    while "first_publish" not in marks:
        executor.spin_once(timeout_sec=0.1)
    executor.shutdown()
    node.destroy_node()
    rclpy.try_shutdown()
    return {key: t - spawned for key, t in marks.items()}


def stages_of_dynamics_node(folder: Path) -> dict[str, float]:
    """:func:`dynamics_stages` in a child process with dynamics_node's command line: the
    time each stage of :data:`STAGES` took [s]."""
    from snake_bringup.emulator import Endpoint

    how = plan("dynamics_node", folder, [], Endpoint("serial", os.devnull))
    spawned = time.monotonic()
    proc = subprocess.run(
        [sys.executable, __file__, STAGES_OPTION, repr(spawned), *how.command[1:]],
        capture_output=True,
        text=True,
        check=True,
    )
    marks = json.loads(proc.stdout.splitlines()[-1])
    ends = [0.0, *(marks[key] for _, key in STAGES)]
    return {what: round(ends[k + 1] - ends[k], 3) for k, (what, _) in enumerate(STAGES)}


# ------------------------------------------------------------------------------ main
@contextlib.contextmanager
def busy_processes(count: int) -> Iterator[None]:
    """``count`` processes spinning a CPU core each, meanwhile."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def summary(values: list[float | None]) -> dict[str, float | int | None]:
    """Median and max [s] of the runs that produced the figure, and how many did not."""
    got = [v for v in values if v is not None]
    return {
        "median": round(statistics.median(got), 3) if got else None,
        "max": max(got) if got else None,
        "missing": len(values) - len(got),
    }


def table(nodes: dict[str, dict[str, Any]]) -> str:
    """The figures as a text table [s]."""
    rows = [f"{'':<18} {'first message':^15} {'ready line':^15}", f"{'node':<18}"]
    rows[1] += f"{'median':>8} {'max':>6} {'median':>8} {'max':>6}  output"
    for name, figures in nodes.items():
        cells = [
            f"{'-' if v is None else f'{v:.2f}':>{width}}"
            for key in ("first_s", "ready_s")
            for v, width in ((figures[key]["median"], 8), (figures[key]["max"], 6))
        ]
        rows.append(f"{name:<18}{' '.join(cells)}  {figures['output']}")
    return "\n".join(rows)


def main() -> int:
    if sys.argv[1:2] == [STAGES_OPTION]:
        print(json.dumps(dynamics_stages(float(sys.argv[2]), sys.argv[3:])))
        return 0
    if sys.argv[1:2] == [CONTROL_OPTION]:
        control_publisher()
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per node (default 5)")
    parser.add_argument("--load", type=int, default=0, help="busy processes meanwhile")
    parser.add_argument("--nodes", nargs="+", choices=NODES, default=NODES, help="what to time")
    parser.add_argument("--output", type=Path, help="also write the JSON here")
    args = parser.parse_args()

    from snake_dynamics.model import SnakeModel
    from snake_ros.paths import robot_config

    joints = SnakeModel.from_yaml(robot_config("robot")).joint_names
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in args.nodes}
    stages: list[dict[str, float]] = []
    breakdown: dict[str, Any] = {}
    bench = Bench()
    try:
        with busy_processes(args.load), tempfile.TemporaryDirectory(prefix="snake-startup-") as tmp:
            if "dynamics_node" in args.nodes:
                breakdown["imports_s"] = import_times("snake_ros.dynamics_node")
            for k in range(args.repeat):
                for name in args.nodes:
                    folder = Path(tmp) / f"{name}-{k}"
                    folder.mkdir()
                    runs[name].append(one_run(bench, name, folder, joints))
                    print(f"run {k + 1}/{args.repeat} {name}: {runs[name][-1]}", file=sys.stderr)
                if "dynamics_node" in args.nodes:
                    folder = Path(tmp) / f"stages-{k}"
                    folder.mkdir()
                    stages.append(stages_of_dynamics_node(folder))
    finally:
        bench.close()
    if stages:
        breakdown["stages_s"] = {what: summary([s[what] for s in stages]) for what in stages[0]}
        breakdown["stage_runs"] = stages
    nodes = {
        name: {
            "output": node_runs[0]["output"],
            **{key: summary([r[key] for r in node_runs]) for key in node_runs[0] if key in TIMED},
            "exit_status_not_0": sum(r["exit_status"] != 0 for r in node_runs),
        }
        for name, node_runs in runs.items()
    }
    result = {
        "benchmark": "startup",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "load_processes": args.load,
        "repeat": args.repeat,
        "definitions": {
            "first_s": "from Popen to the first message of the node's main output (output), "
            "as a subscriber here receives it: includes DDS discovery (see control_publisher)",
            "ready_s": "from Popen to the node's ready line (what snake's runner waits for)",
            "dynamics_node_breakdown": "imports_s: python -X importtime of the module, and "
            "what importing each costly package first cost (overlapping); stages_s: each "
            "stage's time up to the first /sim/joint_states",
        },
        "nodes": nodes,
        "dynamics_node_breakdown": breakdown,
        "runs": runs,
    }
    print(table(nodes), file=sys.stderr)
    emit(result, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
