"""The node graphs, described once: read by ``launch/*.launch.py`` and by the ``snake`` CLI.

A graph is a tuple of :class:`NodeSpec` (package, executable, name, namespace, parameters,
remappings, arguments). ``ros2 launch`` turns each into a ``launch_ros.actions.Node``; where
``ros2 launch`` is missing, ``snake sim`` starts the same executables with the same
``--ros-args``. Neither adds nodes or parameters of its own, so they cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from snake_dynamics.errors import GaitError
from snake_dynamics.gaits import GAITS
from snake_dynamics.model import SnakeModel
from snake_dynamics.urdf import to_urdf

from .paths import PACKAGE, robot_config, share_dir

#: A parameter source: a YAML parameter file, or a dict of name -> value.
Parameters = Path | Mapping[str, Any]


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

#: The arguments of ``simulation.launch.py`` (``snake sim`` has an option for each).
SIMULATION_ARGUMENTS = (
    LaunchArgument("robot_config", "robot", "robot YAML file, or a name in config/"),
    LaunchArgument("gait", "", "gait to play (empty: the one in config/gaits.yaml)"),
    LaunchArgument("rviz", "true", "start RViz", ("true", "false")),
    LaunchArgument("use_sim_time", "false", "follow /clock", ("true", "false")),
)


def config_file(name: str) -> Path:
    """A file of the package's ``config/`` folder."""
    return share_dir() / "config" / name


def simulation_graph(
    robot: str = "robot", gait: str = "", *, rviz: bool = True, use_sim_time: bool = False
) -> tuple[NodeSpec, ...]:
    """The simulation: gait_node -> dynamics_node -> robot_state_publisher -> RViz.

    Args:
        robot: robot YAML file or config name (``robot`` -> config/robot.yaml).
        gait: gait name; empty for the one in config/gaits.yaml.
        rviz: include RViz.
        use_sim_time: every node follows /clock.

    Returns:
        The nodes, in start order.

    Raises:
        ModelError: the robot config cannot be loaded (the URDF is generated from it).
        GaitError: unknown gait.
    """
    if gait and gait not in GAITS:
        raise GaitError(f"unknown gait {gait!r}; choose one of {', '.join(sorted(GAITS))}")
    config = robot_config(robot).resolve()
    urdf = to_urdf(SnakeModel.from_yaml(config))
    common: dict[str, Any] = {"use_sim_time": use_sim_time}
    robot_params = {**common, "robot_config": str(config)}
    commands = (("joint_commands", "/joint_commands"),)
    nodes = [
        NodeSpec(
            PACKAGE,
            "gait_node",
            "gait_node",
            SIM_NAMESPACE,
            (config_file("gaits.yaml"), {**robot_params, **({"gait": gait} if gait else {})}),
            commands,
        ),
        NodeSpec(
            PACKAGE,
            "dynamics_node",
            "dynamics_node",
            SIM_NAMESPACE,
            (config_file("dynamics_node.yaml"), robot_params),
            (*commands, ("joint_efforts", "/joint_efforts")),
        ),
        NodeSpec(
            "robot_state_publisher",
            "robot_state_publisher",
            "robot_state_publisher",
            SIM_NAMESPACE,
            ({**common, "robot_description": urdf, "frame_prefix": f"{SIM_NAMESPACE}/"},),
            optional=True,
        ),
        NodeSpec(
            "tf2_ros",
            "static_transform_publisher",
            "world_to_sim",
            parameters=(common,),
            arguments=("--frame-id", "world", "--child-frame-id", f"{SIM_NAMESPACE}/base_link"),
            optional=True,
        ),
    ]
    if rviz:
        nodes.append(
            NodeSpec(
                "rviz2",
                "rviz2",
                "rviz2",
                parameters=(common,),
                arguments=("-d", str(share_dir() / "rviz" / "snake.rviz")),
                optional=True,
                needs_display=True,
            )
        )
    return tuple(nodes)
