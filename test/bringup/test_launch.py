"""simulation.launch.py and `snake sim` come from one graph; everything they name exists.

`launch` and `launch_ros` exist only on full ROS installs, so the launch file is checked
statically (its AST) and run against recording stand-ins of the few launch classes it uses.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import yaml

from snake_bringup.emulator import Endpoint
from snake_bringup.graph import (
    DRIVER_COMMAND_TIMEOUT_S,
    HARDWARE_ARGUMENTS,
    REPLAY_ARGUMENTS,
    ROLES,
    SIMULATION_ARGUMENTS,
    NodeSpec,
    demo_graph,
    hardware_graph,
    replay_graph,
    simulation_graph,
)
from snake_ros.paths import PACKAGE, robot_config

ROOT = Path(__file__).resolve().parents[2]
LAUNCH = ROOT / "launch" / "simulation.launch.py"
ROS_ONLY = {"launch", "launch_ros"}  # present wherever `ros2 launch` is


def console_scripts() -> dict[str, str]:
    """setup.py's console_scripts, name -> "module:function", read from its AST."""
    for node in ast.walk(ast.parse((ROOT / "setup.py").read_text())):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "console_scripts":
                    entries = [ast.literal_eval(e) for e in value.elts]
                    return dict(e.replace(" ", "").split("=", 1) for e in entries)
    raise AssertionError("setup.py has no console_scripts")


@pytest.mark.parametrize(
    ("path", "graph_name"),
    [(LAUNCH, "simulation_graph"), (ROOT / "launch" / "hardware.launch.py", "hardware_graph")],
)
def test_launch_file_imports_only_launch_and_the_shared_graph(path: Path, graph_name: str) -> None:
    tree = ast.parse(path.read_text())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            modules.add(node.module or "")
        elif isinstance(node, ast.Import):
            modules.update(a.name for a in node.names)
    top = {m.split(".")[0] for m in modules}
    assert top <= ROS_ONLY | {"__future__", "pathlib", "snake_bringup"}, top
    assert "snake_bringup.graph" in modules
    called = {
        n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and hasattr(n.func, "id")
    }
    assert graph_name in called
    # It names no executable, node or package itself: those come from the graph only.
    graph = simulation_graph(rviz=True) + hardware_graph(dynamics=True, rviz=True)
    names = {s for spec in graph for s in (spec.executable, spec.package)}
    literals = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
    assert not names & literals


def test_the_graph_imports_no_ros() -> None:
    code = (
        "import sys, snake_bringup.graph\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'rclpy', 'launch', 'launch_ros', 'sensor_msgs'})\n"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


#: Libraries rosdep does not install (pip only) or that only some commands need.
OPTIONAL = ("rosbags", "ruamel", "mcap", "mcap_ros2", "hypothesis", "websockets", "matplotlib")
#: Loads every launch file against stand-ins of launch/launch_ros with OPTIONAL unimportable,
#: builds each graph with "True" for its booleans, and prints what each started.
LOAD_WITHOUT_OPTIONAL = """
import importlib.abc, sys, types
from pathlib import Path
blocked = set(sys.argv[2].split(","))
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
sys.meta_path.insert(0, Block())
class Recorder:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs
class Config(Recorder):
    def perform(self, context):
        return context[self.args[0]]
stand_ins = {
    "launch": {"LaunchDescription": Recorder, "LaunchContext": dict},
    "launch.actions": {"DeclareLaunchArgument": Recorder, "OpaqueFunction": Recorder},
    "launch.substitutions": {"LaunchConfiguration": Config},
    "launch_ros": {}, "launch_ros.actions": {"Node": Recorder},
}
for name, attrs in stand_ins.items():
    sys.modules[name] = types.ModuleType(name)
    sys.modules[name].__dict__.update(attrs)
for path in sorted(Path(sys.argv[1]).glob("*.launch.py")):
    namespace = {"__name__": path.stem}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    *declared, opaque = namespace["generate_launch_description"]().args[0]
    values = {d.args[0]: d.kwargs["default_value"] for d in declared}
    values.update({k: "True" for k, v in values.items() if v == "true"}, bag="runs/some-bag")
    nodes = opaque.kwargs["function"](values)
    print(path.name, sorted(n.kwargs["executable"] for n in nodes))
print("heavy", sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[3].split(","))))
print("loaded", sorted(m for m in sys.modules if m.split(".")[0] in blocked))
"""
#: What a launch file must not import: compiled numerics, the serial port, bags, rclpy (the
#: nodes import these in their own processes).
HEAVY = ("numba", "scipy", "serial", "rosbags", "rclpy")


def test_every_launch_file_loads_without_the_optional_libraries() -> None:
    """After ``rosdep install`` a launch file has only what package.xml brings: with rosbags
    and the other optional libraries unimportable, each launch file still loads and builds
    its graph; ``True`` is a boolean value as ``true`` is (RViz starts). Loading and building
    imports none of the heavy libraries the nodes use (numba, scipy, pyserial, rosbags,
    rclpy): ``ros2 launch`` spends no seconds on them."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            LOAD_WITHOUT_OPTIONAL,
            str(ROOT / "launch"),
            ",".join(OPTIONAL),
            ",".join(HEAVY),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    *graphs, heavy, loaded = out.stdout.splitlines()
    launched = {line.split(" ", 1)[0] for line in graphs}
    assert launched == {p.name for p in (ROOT / "launch").glob("*.launch.py")}
    assert all("rviz2" in line for line in graphs), graphs
    assert (heavy, loaded) == ("heavy []", "loaded []")


def test_every_executable_is_a_console_script_and_every_file_exists() -> None:
    scripts = console_scripts()
    graph = simulation_graph("robot", rviz=True)
    ours = [spec for spec in graph if spec.package == PACKAGE]
    assert {spec.executable for spec in ours} == {"gait_node", "dynamics_node"}
    for spec in ours:
        module, _, function = scripts[spec.executable].partition(":")
        source = ROOT / (module.replace(".", "/") + ".py")
        defs = {
            n.name for n in ast.parse(source.read_text()).body if isinstance(n, ast.FunctionDef)
        }
        assert function in defs, (spec.executable, scripts[spec.executable])
    for spec in graph:
        for params in spec.parameters:
            if isinstance(params, Path):
                assert params.is_file(), params
            elif "robot_config" in params:
                assert Path(params["robot_config"]).is_file()
        for arg in spec.arguments:
            if arg.endswith((".rviz", ".yaml", ".urdf")):
                assert Path(arg).is_file(), arg
    assert {a.name for a in SIMULATION_ARGUMENTS} == {
        "robot_config",
        "gait",
        "rviz",
        "use_sim_time",
    }
    assert {a.name: a.default for a in SIMULATION_ARGUMENTS}["rviz"] == "true"


def test_graph_names_namespaces_and_topics() -> None:
    graph = {spec.name: spec for spec in simulation_graph("robot", "cobra")}
    for name in ("gait_node", "dynamics_node", "robot_state_publisher"):
        assert graph[name].namespace == "sim"
    assert ("joint_commands", "/joint_commands") in graph["gait_node"].remappings
    assert ("joint_commands", "/joint_commands") in graph["dynamics_node"].remappings
    rsp = graph["robot_state_publisher"].parameters[0]
    assert isinstance(rsp, dict) and rsp["frame_prefix"] == "sim/"
    assert '<robot name="mfm_snake_8">' in rsp["robot_description"]
    gait_params = graph["gait_node"].parameters[1]
    assert isinstance(gait_params, dict) and gait_params["gait"] == "cobra"
    assert graph["world_to_sim"].arguments[-1] == "sim/base_link"
    assert "rviz2" not in {s.name for s in simulation_graph(rviz=False)}


@pytest.mark.parametrize("robot", ["robot_ground", "robot_wheels"])
def test_a_moving_base_drops_the_static_world_transform(robot: str) -> None:
    # on the friction ground or on wheels, dynamics_node publishes world -> sim/base_link
    graph = {spec.name: spec for spec in simulation_graph(robot, "serpenoid")}
    assert "world_to_sim" not in graph
    params = graph["dynamics_node"].parameters[1]
    assert isinstance(params, dict) and params["robot_config"].endswith(f"{robot}.yaml")


class _Recorder:
    """A stand-in for a launch class: keeps its arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs


class _LaunchConfiguration(_Recorder):
    def perform(self, context: dict[str, str]) -> str:
        return context[self.args[0]]


@pytest.fixture
def launch_stand_ins(monkeypatch: pytest.MonkeyPatch) -> None:
    modules = {
        "launch": {"LaunchDescription": _Recorder, "LaunchContext": dict},
        "launch.actions": {"DeclareLaunchArgument": _Recorder, "OpaqueFunction": _Recorder},
        "launch.substitutions": {"LaunchConfiguration": _LaunchConfiguration},
        "launch_ros": {},
        "launch_ros.actions": {"Node": _Recorder},
    }
    for name, attrs in modules.items():
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        monkeypatch.setitem(sys.modules, name, module)


def _as_launch_node(spec: NodeSpec) -> dict[str, Any]:
    return {
        "package": spec.package,
        "executable": spec.executable,
        "name": spec.name,
        "namespace": spec.namespace or None,
        "parameters": [str(p) if isinstance(p, Path) else dict(p) for p in spec.parameters],
        "remappings": list(spec.remappings),
        "arguments": list(spec.arguments),
        "output": "screen",
    }


def test_launch_file_starts_exactly_the_graph(launch_stand_ins: None) -> None:
    namespace: dict[str, Any] = {"__name__": "simulation_launch"}
    exec(compile(LAUNCH.read_text(), str(LAUNCH), "exec"), namespace)
    description = namespace["generate_launch_description"]()
    *declared, opaque = description.args[0]
    assert [d.args[0] for d in declared] == [a.name for a in SIMULATION_ARGUMENTS]
    defaults = {d.args[0]: d.kwargs["default_value"] for d in declared}
    assert defaults["rviz"] == "true" and defaults["use_sim_time"] == "false"
    context = {**defaults, "gait": "spiral", "robot_config": "snake20"}
    nodes = opaque.kwargs["function"](context)
    expected = simulation_graph("snake20", "spiral", rviz=True, use_sim_time=False)
    assert [n.kwargs for n in nodes] == [_as_launch_node(spec) for spec in expected]
    no_rviz = opaque.kwargs["function"]({**context, "rviz": "false"})
    assert "rviz2" not in {n.kwargs["executable"] for n in no_rviz}


def test_snake_sim_dry_run_runs_the_same_graph(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["sim", "--gait", "rolling", "--dry-run", "-o", str(out)]
    proc = subprocess.run(
        [sys.executable, "-m", "snake_bringup.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    graph = simulation_graph("robot", "rolling")
    assert len(lines) == len(graph)
    for spec, line in zip(graph, lines, strict=True):
        if line.startswith("#"):
            assert spec.optional and spec.full_name in line and "skipped" in line
            continue
        assert f"__node:={spec.name}" in line and "--ros-args" in line
        assert (f"__ns:=/{spec.namespace}" in line) == bool(spec.namespace)
        assert all(f"{a}:={b}" in line for a, b in spec.remappings)
        assert all(str(p) in line for p in spec.parameters if isinstance(p, Path))
    assert not out.exists()  # a dry run writes nothing


def test_rviz_config_shows_both_robots_and_the_traces_in_the_world_frame() -> None:
    config = yaml.safe_load((ROOT / "rviz" / "snake.rviz").read_text())
    manager = config["Visualization Manager"]
    assert manager["Global Options"]["Fixed Frame"] == "world"
    displays = manager["Displays"]
    assert any(d["Class"] == "rviz_default_plugins/Grid" for d in displays)
    robots = {
        d["TF Prefix"]: d for d in displays if d["Class"] == "rviz_default_plugins/RobotModel"
    }
    assert set(robots) == {"sim", "measured"}
    for prefix, robot in robots.items():
        # the description topic of the robot_state_publisher in that namespace of the graphs
        assert robot["Description Topic"]["Value"] == f"/{prefix}/robot_description"
        publishers = [
            s for s in hardware_graph(dynamics=True) if s.executable == "robot_state_publisher"
        ]
        assert prefix in {s.namespace for s in publishers}
    assert robots["measured"]["Alpha"] < robots["sim"]["Alpha"]  # the ghost
    markers = [d for d in displays if d["Class"] == "rviz_default_plugins/MarkerArray"]
    assert markers and markers[0]["Topic"]["Value"] == "/compare/markers"
    # a floating robot's predicted travel: the trail of its odometry (what dynamics_node
    # publishes in the sim namespace)
    odometry = [d for d in displays if d["Class"] == "rviz_default_plugins/Odometry"]
    assert odometry and odometry[0]["Topic"]["Value"] == "/sim/odom" and odometry[0]["Keep"] > 1


def test_replay_launch_file_starts_exactly_the_replay_graph(
    launch_stand_ins: None, tmp_path: Path
) -> None:
    """replay.launch.py declares REPLAY_ARGUMENTS and starts replay_graph's nodes, no more."""
    path = ROOT / "launch" / "replay.launch.py"
    namespace: dict[str, Any] = {"__name__": "replay_launch"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    *declared, opaque = namespace["generate_launch_description"]().args[0]
    assert [d.args[0] for d in declared] == [a.name for a in REPLAY_ARGUMENTS]
    defaults = {d.args[0]: d.kwargs["default_value"] for d in declared}
    nodes = opaque.kwargs["function"]({**defaults, "bag": str(tmp_path), "rate": "0.5"})
    expected = replay_graph(str(tmp_path), 0.5, rviz=True)
    assert [(n.kwargs["executable"], n.kwargs["name"]) for n in nodes] == [
        (s.executable, s.name) for s in expected
    ]
    assert nodes[0].kwargs["parameters"] == [{"bag": str(tmp_path), "rate": 0.5, "loop": False}]


HARDWARE_LAUNCH = ROOT / "launch" / "hardware.launch.py"


def test_hardware_launch_file_starts_exactly_the_hardware_graph(launch_stand_ins: None) -> None:
    namespace: dict[str, Any] = {"__name__": "hardware_launch"}
    exec(compile(HARDWARE_LAUNCH.read_text(), str(HARDWARE_LAUNCH), "exec"), namespace)
    *declared, opaque = namespace["generate_launch_description"]().args[0]
    assert [d.args[0] for d in declared] == [a.name for a in HARDWARE_ARGUMENTS]
    defaults = {d.args[0]: d.kwargs["default_value"] for d in declared}
    assert defaults["transport"] == "serial" and defaults["port"] == "/dev/ttyACM0"
    context = {
        **defaults,
        "transport": "udp",
        "port": "5760",
        "host": "10.0.0.7",
        "dynamics": "true",
    }
    nodes = opaque.kwargs["function"](context)
    expected = hardware_graph("robot", "udp", "5760", "10.0.0.7", "", dynamics=True, rviz=True)
    assert [n.kwargs for n in nodes] == [_as_launch_node(spec) for spec in expected]
    assert defaults["role"] == "both"
    for role in ROLES:  # role:=robot|station: the same split as snake hardware --role
        nodes = opaque.kwargs["function"]({**context, "role": role})
        expected = hardware_graph(
            "robot", "udp", "5760", "10.0.0.7", "", dynamics=True, rviz=True, role=role
        )
        assert [n.kwargs for n in nodes] == [_as_launch_node(spec) for spec in expected]


def test_the_robot_s_host_runs_the_driver_and_the_station_the_rest() -> None:
    """role robot: driver_node (and the emulated pose sensor, fed by the plant on that host);
    station: every other node, in the same order; together exactly the whole graph. On the
    robot's clock the station's nodes follow /clock (the driver's, across the link)."""
    options = {"dynamics": True, "robot_clock": True, "pose_port": 40123}
    whole = hardware_graph(**options)  # type: ignore[arg-type]
    robot = hardware_graph(**options, role="robot")  # type: ignore[arg-type]
    station = hardware_graph(**options, role="station")  # type: ignore[arg-type]
    assert [s.executable for s in robot] == ["driver_node", "pose_sensor_node"]
    assert {s.executable for s in station} >= {"gait_node", "dynamics_node", "compare_node"}
    # the operator's stop state starts where the operator is (docs/safety.md)
    assert "operator_node" in {s.executable for s in station}
    assert sorted(robot + station, key=whole.index) == list(whole)
    assert not {s.full_name for s in robot} & {s.full_name for s in station}
    # commands silent (a lost link): the driver stops sending targets, the watchdog trips
    assert robot[0].parameters[-1]["command_timeout"] == DRIVER_COMMAND_TIMEOUT_S  # type: ignore[index]
    for spec in station:
        params = {k: v for p in spec.parameters if isinstance(p, dict) for k, v in p.items()}
        # the operator's heartbeat runs on the host's clock: it must not stop with /clock
        follows = spec.executable != "operator_node"
        assert params.get("use_sim_time") is follows, spec.full_name
    with pytest.raises(ValueError, match="role must be one of both, robot, station"):
        hardware_graph(role="workstation")


@pytest.mark.parametrize("role", ["robot", "station"])
def test_snake_hardware_role_dry_run_prints_that_host_s_nodes(role: str, tmp_path: Path) -> None:
    args = ["hardware", "--role", role, "--dynamics", "--no-rviz", "--dry-run"]
    proc = subprocess.run(
        [sys.executable, "-m", "snake_bringup.cli", *args, "-o", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    graph = hardware_graph(dynamics=True, rviz=False, role=role)
    lines = proc.stdout.splitlines()
    assert len(lines) == len(graph), proc.stdout
    for spec, line in zip(graph, lines, strict=True):  # each node: its command, or skipped
        assert f"__node:={spec.name}" in line or line.startswith(f"# {spec.full_name} skipped")


def test_hardware_graph_wires_driver_measured_and_prediction() -> None:
    graph = {spec.full_name: spec for spec in hardware_graph("robot", "tcp", "5760", dynamics=True)}
    driver = graph["/driver_node"]
    link = driver.parameters[-1]
    assert isinstance(link, dict) and (link["transport"], link["port"]) == ("tcp", "5760")
    assert isinstance(driver.parameters[0], Path) and driver.parameters[0].is_file()
    assert "driver_node" in console_scripts()
    rsp = graph["/measured/robot_state_publisher"].parameters[0]
    assert isinstance(rsp, dict) and rsp["frame_prefix"] == "measured/"
    assert "/sim/dynamics_node" in graph and "/sim/robot_state_publisher" in graph
    # the comparison RViz draws (/compare/markers) runs wherever the prediction does
    compare = graph["/compare_node"]
    assert compare.executable == "compare_node" and "compare_node" in console_scripts()
    assert compare.parameters == (graph["/sim/dynamics_node"].parameters[-1],)
    without = {s.executable for s in hardware_graph(dynamics=False)}
    assert not without & {"dynamics_node", "compare_node"}
    with pytest.raises(ValueError, match="transport must be one of"):
        hardware_graph(transport="carrier-pigeon")


def test_compensated_commands_lead_by_the_driver_s_path_from_its_config_files() -> None:
    """gait_node's ``command_delay`` in a compensated graph is T_c of eq. 218 from the rates
    the driver and gait_node read (config/driver_node.yaml, config/gaits.yaml), with the
    firmware interpolating: 1/50 + 1/(2 x 100) + 3 ms = 28 ms, the lag measured end to end
    over the pty. On the robot's clock the stamps trail the MCU by a 16-channel report's time
    on the line at the driver's baud rate (the frame as the host's encoder builds it: 102
    bytes, 8.85 ms): 36.9 ms. Without ``compensate`` there is none."""
    from snake_bringup.graph import DRIVER_BAUDRATE, LINK_FRAME_S, driver_command_delay
    from snake_driver.protocol import Counters, Direction, Encoder, Flag, Telemetry

    def section(name: str) -> dict[str, Any]:
        text = (ROOT / "config" / name).read_text(encoding="utf-8")
        return dict(yaml.safe_load(text)["/**"]["ros__parameters"])

    driver, gaits = section("driver_node.yaml"), section("gaits.yaml")
    assert driver["interpolate"] is True  # else the target follows without the command period
    assert driver["baudrate"] == DRIVER_BAUDRATE
    expected = 1.0 / driver["command_rate"] + 0.5 / gaits["publish_rate"] + LINK_FRAME_S
    report = Telemetry(0, Flag(0), 0, Counters(), (0,) * 16, (1500,) * 16)
    frame = Encoder(direction=Direction.TO_HOST).encode(report)
    assert len(frame) == 102
    on_the_line = len(frame) * 10 / driver["baudrate"]

    def gait_options(compensate: bool, robot_clock: bool = False) -> dict[str, Any]:
        graph = hardware_graph(compensate=compensate, robot_clock=robot_clock)
        spec = next(s for s in graph if s.name == "gait_node")
        return {k: v for p in spec.parameters if isinstance(p, dict) for k, v in p.items()}

    options = gait_options(True)
    assert options["compensate"] is True
    assert options["command_delay"] == pytest.approx(expected, abs=1e-12)
    assert driver_command_delay() == pytest.approx(0.028, abs=1e-12)
    robot_clock = gait_options(True, robot_clock=True)["command_delay"]
    assert robot_clock == pytest.approx(expected + on_the_line, abs=1e-12)
    assert robot_clock == pytest.approx(0.03685, abs=1e-5)
    assert "command_delay" not in gait_options(False)
    assert "command_delay" not in gait_options(False, robot_clock=True)


def test_an_emulated_pose_sensor_adds_its_node_on_the_robot_s_clock() -> None:
    """``pose_port`` (the emulator's ``Endpoint.pose_port``): pose_sensor_node listens there
    and publishes /measured/pose on the graph's clock; without it there is none."""
    graph = {s.executable: s for s in hardware_graph(robot_clock=True, pose_port=40123)}
    sensor = graph["pose_sensor_node"]
    module, _, function = console_scripts()["pose_sensor_node"].partition(":")
    assert (module, function) == ("snake_ros.pose_sensor_node", "main")
    assert sensor.full_name == "/pose_sensor_node"
    assert sensor.parameters == ({"use_sim_time": True, "port": 40123},)
    assert "pose_sensor_node" not in {s.executable for s in hardware_graph(robot_clock=True)}


def test_on_the_robot_clock_the_driver_publishes_clock_and_the_rest_follows_it() -> None:
    """``robot_clock`` (the emulated robot): driver_node keeps the host's clock and publishes
    /clock; every other node of the graph is on use_sim_time. Without it nobody is."""

    def merged(spec: NodeSpec) -> dict[str, object]:
        return {k: v for p in spec.parameters if isinstance(p, dict) for k, v in p.items()}

    on = {s.full_name: merged(s) for s in hardware_graph(dynamics=True, robot_clock=True)}
    driver = on.pop("/driver_node")
    assert driver["publish_clock"] is True and driver["use_sim_time"] is False
    assert on.pop("/operator_node")["use_sim_time"] is False  # its heartbeat: the host's clock
    assert on and all(params.get("use_sim_time") is True for params in on.values()), on
    off = [merged(s) for s in hardware_graph(dynamics=True)]
    assert not any(p.get("use_sim_time") or p.get("publish_clock") for p in off)
    demo = demo_graph(Endpoint("tcp", "5760"), Path("/tmp/demo"))
    assert merged(next(s for s in demo if s.executable == "driver_node"))["publish_clock"]


def test_demo_graph_is_the_recorder_and_the_hardware_graph_with_its_report_folder(
    tmp_path: Path,
) -> None:
    endpoint = Endpoint("tcp", "5760")
    demo = demo_graph(endpoint, tmp_path, "cobra")
    robot = hardware_graph(
        str(robot_config("robot_table").resolve()),
        "tcp",
        "5760",
        gait="cobra",
        dynamics=True,
        rviz=False,
    )
    assert demo[0].executable == "recorder_node"
    assert [s.full_name for s in demo[1:]] == [s.full_name for s in robot]
    # the hardware graph's gait waits for the driver, dynamics_node and compare_node
    (robot_gait,) = [s for s in robot if s.executable == "gait_node"]
    options = robot_gait.parameters[1]
    assert isinstance(options, dict) and options["wait_for_subscribers"] == 3
    (compare,) = [s for s in demo if s.executable == "compare_node"]
    assert compare.parameters[-1] == {"report_dir": str(tmp_path), "report_name": "compare"}
    # the gait waits for every subscriber of /joint_commands: the recorder, the driver,
    # dynamics_node and compare_node (a prediction that joined mid-gait began away from rest)
    (gait_node,) = [s for s in demo if s.executable == "gait_node"]
    assert gait_node.parameters[-1] == {"wait_for_subscribers": 4}
    table = demo_graph(
        endpoint, tmp_path, "sidewinding", gait_parameters={"sidewinding": {"frequency": 0.4}}
    )
    (gait_node,) = [s for s in table if s.executable == "gait_node"]
    params = gait_node.parameters[1]
    assert isinstance(params, dict) and params["sidewinding.frequency"] == 0.4
    assert gait_node.parameters[-1] == {"wait_for_subscribers": 4}
