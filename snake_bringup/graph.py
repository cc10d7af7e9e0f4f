"""The node graphs, described once: read by ``launch/*.launch.py`` and by the ``snake`` CLI.

A graph is a tuple of :class:`NodeSpec` (package, executable, name, namespace, parameters,
remappings, arguments). ``ros2 launch`` turns each into a ``launch_ros.actions.Node``; where
``ros2 launch`` is missing, ``snake sim`` starts the same executables with the same
``--ros-args``. Neither adds nodes or parameters of its own, so they cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from snake_driver.keyfile import KeyFileError, read_key_file
from snake_driver.transport import TRANSPORTS
from snake_dynamics.errors import GaitError
from snake_dynamics.gaits import GAITS
from snake_dynamics.robot import Robot
from snake_dynamics.urdf import to_urdf
from snake_ros.paths import PACKAGE, robot_config, share_dir
from snake_viz.defaults import REPLAY_RATES

from .emulator import Endpoint
from .errors import BringupError

#: A parameter source: a YAML parameter file, or a dict of name -> value.
Parameters = Path | Mapping[str, Any]
#: What the runner does when a required node fails (:attr:`NodeSpec.on_failure`).
OnFailure = Literal["restart", "report", "stop"]


@dataclass(frozen=True)
class NodeSpec:
    """One node of a graph: everything ``launch_ros.actions.Node`` takes.

    Attributes:
        package: the ROS package that installs ``executable``.
        executable: the program (a console script for this package).
        name: node name.
        namespace: node namespace ("" for the root).
        parameters: parameter files and dicts, later ones override earlier ones.
        remappings: (from, to) topic remappings.
        arguments: extra command-line arguments (before ``--ros-args``).
        optional: the graph still works without it (``snake sim`` skips it if missing).
        needs_display: a GUI (``snake sim`` skips it without $DISPLAY or $WAYLAND_DISPLAY).
        starts_first: ``snake``'s runner starts it, and waits until it is ready, before the
            other nodes, and stops it after them (the recorder: it keeps every message).
            ``ros2 launch`` starts every node at once.
        on_failure: what ``snake``'s runner does when this required node exits with an
            error once the graph runs: ``restart`` it (with backoff, a bounded number of
            times, then report it; the rest keeps running), ``report`` it (the rest keeps
            running), or ``stop`` the graph. See :mod:`snake_bringup.runner`.
    """

    package: str
    executable: str
    name: str
    namespace: str = ""
    parameters: tuple[Parameters, ...] = ()
    remappings: tuple[tuple[str, str], ...] = ()
    arguments: tuple[str, ...] = ()
    optional: bool = False
    needs_display: bool = False
    starts_first: bool = False
    on_failure: OnFailure = "restart"

    @property
    def full_name(self) -> str:
        """The node's fully qualified name, e.g. ``/sim/gait_node``."""
        return f"/{self.namespace}/{self.name}" if self.namespace else f"/{self.name}"


@dataclass(frozen=True)
class LaunchArgument:
    """A launch argument (``name:=value``), with its CLI counterpart in ``snake sim``."""

    name: str
    default: str
    description: str
    choices: tuple[str, ...] = field(default=())


#: Namespace of the simulated robot (its topics, services, TF frame prefix).
SIM_NAMESPACE = "sim"
#: Namespace of the measured robot (its joint states, TF frame prefix).
MEASURED_NAMESPACE = "measured"
#: Every gait and dynamics node reads the one command topic.
COMMANDS = (("joint_commands", "/joint_commands"),)
#: gait_node's gait itself (its commands are that gait, or compensate for the servos).
DESIRED = ("joint_desired", "/joint_desired")
#: driver_node's target frames per second [Hz] (config/driver_node.yaml: command_rate, with
#: interpolate: the firmware moves to each target over one period).
DRIVER_COMMAND_RATE_HZ = 50.0
#: gait_node's commands per second [Hz] (config/gaits.yaml: publish_rate).
GAIT_PUBLISH_RATE_HZ = 100.0
#: A target frame's time from driver_node to the firmware [s]: the 28 ms measured end to end
#: over the pty (bench/README.md, "End to end") less the 25 ms of the two periods.
LINK_FRAME_S = 0.003
#: The MCU's line [baud] (config/driver_node.yaml: baudrate).
DRIVER_BAUDRATE = 115200
#: A telemetry report's time on the line [s]: 16 channels, 7 + 31 + 4 x 16 = 102 bytes of 10
#: bits (firmware/PROTOCOL.md, "Messages"), 8.85 ms. On the robot's clock the graph's time is
#: the newest report's, stamped when the MCU made it and known once it has arrived
#: (snake_driver.clock.RobotClock), so the commands' stamps trail the MCU's clock by it.
REPORT_FRAME_S = (7 + 31 + 4 * 16) * 10 / DRIVER_BAUDRATE


def driver_command_delay(
    command_rate: float = DRIVER_COMMAND_RATE_HZ,
    publish_rate: float = GAIT_PUBLISH_RATE_HZ,
    link: float = LINK_FRAME_S,
    clock_lag: float = 0.0,
) -> float:
    """T_c = 1 / f_cmd + 1 / (2 f_gait) + T_link + T_clock (eq. 218): how late the
    firmware's servo target follows a /joint_commands stamp [s], gait_node's
    ``command_delay``. The driver sends the newest command once per command period and the
    firmware interpolates to it over the next period; the newest command is half a publish
    period old on average; the frame takes ``link`` on the wire; the stamps' clock trails the
    MCU's by ``clock_lag``. The servo model's dead time (snake identify's, eq. 208) counts
    from that target: the two add up, neither holds the other.

    Args:
        command_rate: driver_node's target frames per second [Hz].
        publish_rate: gait_node's commands per second [Hz].
        link: a frame's time from the driver to the firmware [s].
        clock_lag: how far the stamps' clock trails the MCU's [s]: :data:`REPORT_FRAME_S` on
            the robot's clock, 0 on the host's.
    """
    return 1.0 / command_rate + 0.5 / publish_rate + link + clock_lag


#: The compensated hardware graph's T_c on the host's clock [s] (eq. 218): 28 ms.
DRIVER_COMMAND_DELAY_S = driver_command_delay()
#: The same on the robot's clock (the emulated robot, ``snake demo``) [s]: 36.9 ms.
ROBOT_CLOCK_COMMAND_DELAY_S = driver_command_delay(clock_lag=REPORT_FRAME_S)


#: Which part of the hardware graph a host runs (:func:`hardware_graph`'s ``role``).
ROLES = ("both", "robot", "station")
#: The executables of the robot's host (``role="robot"``): the driver next to the MCU, and
#: the emulated pose sensor, whose readings come from the emulated plant on that host.
ROBOT_EXECUTABLES = frozenset({"driver_node", "pose_sensor_node"})

#: driver_node's ``command_timeout`` in the hardware graph [s]: commands silent this long (the
#: station's link lost, gait_node stopped) and the driver sends the MCU no more targets, so the
#: firmware's watchdog trips (500 ms later) instead of the robot holding stale commands.
DRIVER_COMMAND_TIMEOUT_S = 0.5

#: The values a boolean launch argument takes (``launch``'s own conditions accept them all).
BOOLEAN = ("true", "false", "True", "False", "1", "0")


class GraphError(BringupError, ValueError):
    """Launch arguments that do not describe a graph."""


#: The arguments of ``simulation.launch.py`` (``snake sim`` has an option for each).
SIMULATION_ARGUMENTS = (
    LaunchArgument("robot_config", "robot", "robot YAML file, or a name in config/"),
    LaunchArgument("gait", "", "gait to play (empty: the one in config/gaits.yaml)"),
    LaunchArgument("rviz", "true", "start RViz", BOOLEAN),
    LaunchArgument("use_sim_time", "false", "follow /clock", BOOLEAN),
)


#: The arguments of ``hardware.launch.py`` (``snake hardware`` has an option for each).
HARDWARE_ARGUMENTS = (
    LaunchArgument("robot_config", "robot", "robot YAML file, or a name in config/"),
    LaunchArgument("transport", "serial", "link to the robot", TRANSPORTS),
    LaunchArgument("port", "/dev/ttyACM0", "serial device, or the Wi-Fi bridge's port number"),
    LaunchArgument("host", "127.0.0.1", "the Wi-Fi bridge's address (udp, tcp)"),
    LaunchArgument(
        "auth_key_file",
        "",
        "file holding the link key (chmod 600; the firmware's AUTH_KEY_FILE): authenticated "
        "mode; empty: $SNAKE_AUTH_KEY_FILE, else $SNAKE_AUTH_KEY, else plain",
    ),
    LaunchArgument(
        "allow_open_domain",
        "false",
        "start the driver although ROS discovery reaches other hosts (docs/safety.md)",
        BOOLEAN,
    ),
    LaunchArgument("gait", "", "gait to play (empty: the one in config/gaits.yaml)"),
    LaunchArgument("dynamics", "false", "run the MFM prediction beside the robot", BOOLEAN),
    LaunchArgument(
        "compensate", "false", "commands pre-shaped for the servos (gait_node)", BOOLEAN
    ),
    LaunchArgument("rviz", "true", "start RViz", BOOLEAN),
    LaunchArgument("use_sim_time", "false", "follow /clock", BOOLEAN),
    LaunchArgument(
        "role",
        "both",
        "the nodes of this host: robot (the driver), station (the rest) or both",
        ROLES,
    ),
)


def config_file(name: str) -> Path:
    """A file of the package's ``config/`` folder."""
    return share_dir() / "config" / name


def _gait_node(
    robot_params: Mapping[str, Any],
    gait: str,
    namespace: str,
    listeners: int,
    compensate: bool = False,
    gait_parameters: Mapping[str, Mapping[str, float]] | None = None,
    robot_clock: bool = False,
) -> NodeSpec:
    """gait_node; it starts the gait once the graph's ``listeners`` nodes that subscribe to
    /joint_commands have been discovered (all of them see it from rest); with ``compensate``
    its commands are pre-shaped for the servos (T_c of eq. 218 on the graph's clock: the
    robot's with ``robot_clock``), the gait itself on /joint_desired; ``gait_parameters``
    (by gait) replace config/gaits.yaml's."""
    options: dict[str, Any] = {
        "wait_for_subscribers": listeners,
        **({"gait": gait} if gait else {}),
        **{
            f"{name}.{key}": float(value)
            for name, section in (gait_parameters or {}).items()
            for key, value in section.items()
        },
    }
    if compensate:
        delay = ROBOT_CLOCK_COMMAND_DELAY_S if robot_clock else DRIVER_COMMAND_DELAY_S
        options |= {"compensate": True, "command_delay": delay}
    return NodeSpec(
        PACKAGE,
        "gait_node",
        "gait_node",
        namespace,
        (config_file("gaits.yaml"), {**robot_params, **options}),
        (*COMMANDS, DESIRED),
    )


#: dynamics_node's ``max_lag`` on the robot's clock [s]: a prediction starved of the CPU
#: catches up on the commands it has instead of skipping (docs/hardware.md, "Emulated time").
ROBOT_CLOCK_MAX_LAG = 2.0


def _dynamics_node(robot_params: Mapping[str, Any], robot_clock: bool = False) -> NodeSpec:
    lag = {"max_lag": ROBOT_CLOCK_MAX_LAG} if robot_clock else {}
    return NodeSpec(
        PACKAGE,
        "dynamics_node",
        "dynamics_node",
        SIM_NAMESPACE,
        (config_file("dynamics_node.yaml"), {**robot_params, **lag}),
        (*COMMANDS, ("joint_efforts", "/joint_efforts")),
    )


#: operator_node's heartbeat: the stop state on /estop this often [Hz] (a returning link
#: carries the current state within one period; docs/safety.md, "The e-stop and arming").
OPERATOR_RATE_HZ = 10.0


def _operator_node() -> NodeSpec:
    """operator_node, the operator's station: the stop state on /estop as a heartbeat (false
    at start), ``snake estop`` presses and releases it. On the station's host, on the host's
    clock even where the graph follows the robot's /clock: the heartbeat must not stop with
    the link that carries /clock."""
    return NodeSpec(
        PACKAGE,
        "operator_node",
        "operator_node",
        parameters=({"use_sim_time": False, "rate": OPERATOR_RATE_HZ},),
        # a restart would start with the stop state false: it would release a stop
        on_failure="stop",
    )


def _compare_node(robot_params: Mapping[str, Any], report_dir: Path | None) -> NodeSpec:
    """compare_node: /sim/joint_states against /measured/joint_states (/compare/error,
    /compare/markers for RViz, a report when it stops: ``report_dir/compare``, or without
    ``report_dir`` the node's default, ``$ROS_HOME/mfm_snake/compare-<time>``)."""
    report = ({"report_dir": str(report_dir), "report_name": "compare"},) if report_dir else ()
    return NodeSpec(PACKAGE, "compare_node", "compare_node", parameters=(robot_params, *report))


def _robot_description(
    namespace: str, urdf: str, common: Mapping[str, Any], moving_base: bool = False
) -> tuple[NodeSpec, ...]:
    """robot_state_publisher in ``namespace`` (frame prefix ``namespace/``, reading
    ``/namespace/joint_states``) and the static transform world -> namespace/base_link,
    unless the base moves (a floating robot's dynamics_node publishes that transform)."""
    description = (
        NodeSpec(
            "robot_state_publisher",
            "robot_state_publisher",
            "robot_state_publisher",
            namespace,
            ({**common, "robot_description": urdf, "frame_prefix": f"{namespace}/"},),
            optional=True,
        ),
        NodeSpec(
            "tf2_ros",
            "static_transform_publisher",
            f"world_to_{namespace}",
            parameters=(common,),
            arguments=("--frame-id", "world", "--child-frame-id", f"{namespace}/base_link"),
            optional=True,
        ),
    )
    return description[:1] if moving_base else description


def _rviz(common: Mapping[str, Any]) -> NodeSpec:
    return NodeSpec(
        "rviz2",
        "rviz2",
        "rviz2",
        parameters=(common,),
        arguments=("-d", str(share_dir() / "rviz" / "snake.rviz")),
        optional=True,
        needs_display=True,
    )


def _loaded(robot: str | Robot) -> Robot:
    """The robot a command read and handed down, or the one a launch file's argument names
    (a YAML file or a name in config/), read here, once per graph."""
    return robot if isinstance(robot, Robot) else Robot.load(robot_config(robot).resolve())


def _robot(robot: str | Robot, gait: str) -> tuple[Path, str, bool]:
    """The resolved robot config, its URDF and whether its base floats (raising ModelError /
    GaitError early)."""
    if gait and gait not in GAITS:
        raise GaitError(f"unknown gait {gait!r}; choose one of {', '.join(sorted(GAITS))}")
    robot = _loaded(robot)
    return robot.path.resolve(), to_urdf(robot.model), robot.model.base == "floating"


def simulation_graph(
    robot: str | Robot = "robot",
    gait: str = "",
    *,
    rviz: bool = True,
    use_sim_time: bool = False,
    gait_parameters: Mapping[str, Mapping[str, float]] | None = None,
) -> tuple[NodeSpec, ...]:
    """The simulation: gait_node -> dynamics_node -> robot_state_publisher -> RViz.

    Args:
        robot: the Robot a command read, or a robot YAML file or config name (``robot``
            -> config/robot.yaml).
        gait: gait name; empty for the one in config/gaits.yaml.
        rviz: include RViz.
        use_sim_time: every node follows /clock.
        gait_parameters: gait parameters by gait (units as in ``snake gaits``), replacing
            config/gaits.yaml's.

    Returns:
        The nodes, in start order.

    Raises:
        ModelError: the robot config cannot be loaded (the URDF is generated from it).
        GaitError: unknown gait.
    """
    config, urdf, floating = _robot(robot, gait)
    common: dict[str, Any] = {"use_sim_time": use_sim_time}
    robot_params = {**common, "robot_config": str(config)}
    nodes = [
        # listeners: dynamics_node
        _gait_node(robot_params, gait, SIM_NAMESPACE, 1, gait_parameters=gait_parameters),
        _dynamics_node(robot_params),
        *_robot_description(SIM_NAMESPACE, urdf, common, floating),
    ]
    return (*nodes, _rviz(common)) if rviz else tuple(nodes)


def hardware_graph(
    robot: str | Robot = "robot",
    transport: str = "serial",
    port: str = "/dev/ttyACM0",
    host: str = "127.0.0.1",
    gait: str = "",
    *,
    dynamics: bool = False,
    compensate: bool = False,
    rviz: bool = True,
    use_sim_time: bool = False,
    robot_clock: bool = False,
    auth_key_file: str = "",
    allow_open_domain: bool = False,
    report_dir: Path | None = None,
    pose_port: int | None = None,
    role: str = "both",
    gait_parameters: Mapping[str, Mapping[str, float]] | None = None,
) -> tuple[NodeSpec, ...]:
    """The robot: gait_node -> driver_node -> firmware -> /measured/joint_states, the
    measured robot's description, and (``dynamics``) the MFM prediction beside it with
    compare_node comparing the two; (``pose_port``) pose_sensor_node -> /measured/pose;
    operator_node's stop state -> /estop -> driver_node (on the station's host).

    Args:
        robot: the Robot a command read, or a robot YAML file or config name (model and
            servo calibration).
        transport: serial, udp or tcp.
        port: serial device, or the Wi-Fi bridge's port number.
        host: the Wi-Fi bridge's address (udp, tcp).
        gait: gait name; empty for the one in config/gaits.yaml.
        dynamics: also run dynamics_node on the same commands (``/sim/joint_states``),
            its robot description, and compare_node.
        compensate: gait_node pre-shapes the commands for the robot config's servos
            (docs/mfm.md eq. 213); the gait itself goes on /joint_desired either way.
        rviz: include RViz.
        use_sim_time: every node follows /clock.
        robot_clock: the robot's clock drives the graph: driver_node publishes /clock from
            the MCU's timestamps and every other node follows it (the emulated robot: one that
            falls behind real time slows the run instead of skewing it).
        auth_key_file: the file holding the link key (mode 0600) for authenticated mode;
            empty: the driver's ``$SNAKE_AUTH_KEY_FILE``, else ``$SNAKE_AUTH_KEY``, else plain.
            The key itself is never a parameter (docs/safety.md, "The MCU link key").
        allow_open_domain: the driver starts although ROS discovery reaches other hosts
            (two hosts, an isolated network); False: it refuses to.
        report_dir: with ``dynamics``, compare_node's report goes to ``report_dir/compare``
            (a run's folder; None: compare_node's default under ``$ROS_HOME``, for
            ``ros2 launch``).
        pose_port: the emulated pose sensor's UDP port (``Endpoint.pose_port``): its
            readings on /measured/pose (None: no pose sensor; a real one's driver is
            started apart, its topic remapped to /measured/pose).
        role: the nodes of one host when the graph runs on two (docs/two-hosts.md):
            ``robot`` the driver (and the pose sensor), ``station`` every other node
            (``robot_clock`` there: they follow the robot's /clock across the link),
            ``both`` all of them.
        gait_parameters: gait parameters by gait (units as in ``snake gaits``), replacing
            config/gaits.yaml's.

    Raises:
        GraphError: unknown transport or role, or (on the robot's side) an auth_key_file
            that is not a private key file.
        ModelError: the robot config cannot be loaded.
        GaitError: unknown gait.
    """
    if transport not in TRANSPORTS:
        raise GraphError(f"transport must be one of {', '.join(TRANSPORTS)}, got {transport!r}")
    if role not in ROLES:
        raise GraphError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    key_file = str(Path(auth_key_file.strip()).resolve()) if auth_key_file.strip() else ""
    if key_file and role != "station":  # the station never reads it
        try:
            read_key_file(key_file)
        except KeyFileError as exc:
            raise GraphError(f"auth_key_file: {exc}") from None
    config, urdf, floating = _robot(robot, gait)
    common: dict[str, Any] = {"use_sim_time": use_sim_time or robot_clock}
    robot_params = {**common, "robot_config": str(config)}
    link: dict[str, Any] = {
        "transport": transport,
        "port": port,
        "host": host,
        "command_timeout": DRIVER_COMMAND_TIMEOUT_S,
    }
    if robot_clock:  # the driver keeps the host's clock and publishes the robot's
        link |= {"use_sim_time": False, "publish_clock": True}
    if key_file:
        link["auth_key_file"] = key_file
    if allow_open_domain:
        link["allow_open_domain"] = True
    nodes = [
        # listeners: the driver; with dynamics, dynamics_node and compare_node (it judges the
        # command stamps): the gait waits for the prediction, which then starts at rest
        _gait_node(
            robot_params, gait, "", 3 if dynamics else 1, compensate, gait_parameters, robot_clock
        ),
        NodeSpec(
            PACKAGE,
            "driver_node",
            "driver_node",
            "",
            (config_file("driver_node.yaml"), {**robot_params, **link}),
            # the robot link: a restart would set up and enable the robot with no operator
            on_failure="stop",
        ),
        _operator_node(),
        *_robot_description(MEASURED_NAMESPACE, urdf, common),
    ]
    if pose_port is not None:
        pose = {**common, "port": pose_port}
        nodes.append(NodeSpec(PACKAGE, "pose_sensor_node", "pose_sensor_node", parameters=(pose,)))
    if dynamics:
        nodes += [
            _dynamics_node(robot_params, robot_clock),
            *_robot_description(SIM_NAMESPACE, urdf, common, floating),
            _compare_node(robot_params, report_dir),
        ]
    if rviz:
        nodes.append(_rviz(common))
    return for_role(nodes, role)


def for_role(nodes: Sequence[NodeSpec], role: str) -> tuple[NodeSpec, ...]:
    """The nodes of a hardware graph that run on ``role``'s host (:data:`ROLES`)."""
    if role == "both":
        return tuple(nodes)
    on_robot = role == "robot"
    return tuple(s for s in nodes if (s.executable in ROBOT_EXECUTABLES) == on_robot)


#: The arguments of ``replay.launch.py`` (``snake replay`` has an option for each).
REPLAY_ARGUMENTS = (
    LaunchArgument("bag", "", "bag folder to play (required)"),
    LaunchArgument(
        "rate", "1.0", f"playback speed factor ({REPLAY_RATES[0]:g} to {REPLAY_RATES[1]:g})"
    ),
    LaunchArgument("loop", "false", "start over at the end", BOOLEAN),
    LaunchArgument("robot_config", "robot", "robot YAML file, or a name in config/"),
    LaunchArgument("rviz", "true", "start RViz", BOOLEAN),
)


def replay_graph(
    bag: str,
    rate: float | str = 1.0,
    *,
    loop: bool = False,
    robot: str | Robot = "robot",
    rviz: bool = True,
    topics: Sequence[str] = (),
    delay: float | None = None,
    wait_for_subscribers: int | None = None,
) -> tuple[NodeSpec, ...]:
    """A recorded run: replay_node (the bag's topics and /clock) -> the sim/ and measured/
    robot_state_publishers -> RViz, every node but the player on ``use_sim_time``.

    Args:
        bag: the bag folder (rosbag2, MCAP or sqlite3).
        rate: playback speed factor, within :data:`snake_viz.defaults.REPLAY_RATES`.
        loop: start over at the end.
        robot: the Robot a command read, or a robot YAML file or config name (the URDF
            the robot descriptions show).
        rviz: include RViz.
        topics: play only these topics (empty: all).
        delay: replay_node's wait before playing [s] (None: its default).
        wait_for_subscribers: subscriptions each topic waits for (None: its default).

    Returns:
        The nodes, in start order.

    Raises:
        GraphError: no bag, or a rate that is not a number within REPLAY_RATES.
        ModelError: the robot config cannot be loaded.
    """
    if not bag:
        raise GraphError("bag is required: the bag folder to replay (bag:=runs/bag-...)")
    low, high = REPLAY_RATES
    try:
        speed = float(rate)
    except ValueError:
        speed = float("nan")  # refused with the range below
    if not low <= speed <= high:
        raise GraphError(f"rate must be a number from {low:g} to {high:g}, got {rate!r}")
    _, urdf, _ = _robot(robot, "")
    common: dict[str, Any] = {"use_sim_time": True}
    options = {
        "topics": list(topics) or None,
        "delay": delay,
        "wait_for_subscribers": wait_for_subscribers,
    }
    player = NodeSpec(
        PACKAGE,
        "replay_node",
        "replay_node",
        parameters=(
            {
                "bag": str(Path(bag).resolve()),
                "rate": speed,
                "loop": loop,
                **{k: v for k, v in options.items() if v is not None},
            },
        ),
        on_failure="stop",  # the graph's source: nothing to show without it
    )
    nodes = [
        player,
        *_robot_description(SIM_NAMESPACE, urdf, common),
        *_robot_description(MEASURED_NAMESPACE, urdf, common),
    ]
    return (*nodes, _rviz(common)) if rviz else tuple(nodes)


def demo_graph(
    endpoint: Endpoint,
    out: Path,
    gait: str = "",
    robot: str | Robot = "robot_table",
    compensate: bool = False,
    gait_parameters: Mapping[str, Mapping[str, float]] | None = None,
) -> tuple[NodeSpec, ...]:
    """The demo: the recorder first (it must see the first messages), then the hardware graph
    on the emulated robot with the MFM prediction and the comparison node beside it, the
    comparison's report going to ``out/compare``, every node but the driver and the recorder
    on the emulated robot's clock (``robot_clock``; the recorder logs arrivals on the host's
    clock, as rosbag2 does, and the messages keep their stamps).

    Args:
        endpoint: where the emulated robot listens (``Emulator.endpoint``).
        out: the run folder: the bag goes to ``out/bag``, the live report to ``out/compare``.
        gait: gait name; empty for the one in config/gaits.yaml.
        robot: the Robot a command read, or a robot YAML file or config name (default: the
            robot with feedback pots on the table); the emulated pose sensor's poses join it
            when the emulator has one.
        compensate: gait_node's commands pre-shaped for the servos of ``robot``.
        gait_parameters: gait parameters by gait, replacing config/gaits.yaml's.
    """
    robot = _loaded(robot)  # once: hardware_graph takes it
    config = robot.path.resolve()
    recorder = NodeSpec(
        PACKAGE,
        "recorder_node",
        "recorder_node",
        parameters=({"output": str(out / "bag")},),
        starts_first=True,
        on_failure="report",  # its bag folder exists: a restart could not record into it
    )
    nodes = hardware_graph(
        str(config),
        endpoint.transport,
        endpoint.port,
        endpoint.host,
        gait,
        dynamics=True,
        compensate=compensate,
        rviz=False,
        robot_clock=True,
        report_dir=out,
        pose_port=endpoint.pose_port,
        gait_parameters=gait_parameters,
        allow_open_domain=True,  # an emulated robot: nothing on the network can hurt it
    )
    listeners = {"wait_for_subscribers": 4}  # the recorder listens too
    return (
        recorder,
        *(
            replace(spec, parameters=(*spec.parameters, listeners))
            if spec.executable == "gait_node"
            else spec
            for spec in nodes
        ),
    )
