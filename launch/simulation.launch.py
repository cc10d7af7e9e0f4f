"""The simulation graph on a ROS 2 install: gait -> MFM dynamics -> robot_state_publisher -> RViz.

    ros2 launch mfm_snake simulation.launch.py [robot_config:=robot] [gait:=serpenoid]
        [rviz:=true] [use_sim_time:=false]

Thin on purpose: the nodes, parameters and remappings come from
``snake_bringup.graph.simulation_graph``, the description ``snake sim`` runs too.
"""

# ruff: noqa: I001  (ruff takes `launch` for the repository's launch/ folder, not the package)
from __future__ import annotations

from pathlib import Path

from launch import LaunchContext, LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from snake_bringup.graph import SIMULATION_ARGUMENTS, simulation_graph


def _nodes(context: LaunchContext) -> list[Node]:
    value = {a.name: LaunchConfiguration(a.name).perform(context) for a in SIMULATION_ARGUMENTS}
    graph = simulation_graph(
        value["robot_config"],
        value["gait"],
        rviz=value["rviz"].lower() == "true",
        use_sim_time=value["use_sim_time"].lower() == "true",
    )
    return [
        Node(
            package=spec.package,
            executable=spec.executable,
            name=spec.name,
            namespace=spec.namespace or None,
            parameters=[str(p) if isinstance(p, Path) else dict(p) for p in spec.parameters],
            remappings=list(spec.remappings),
            arguments=list(spec.arguments),
            output="screen",
        )
        for spec in graph
    ]


def generate_launch_description() -> LaunchDescription:
    """The launch arguments of :data:`SIMULATION_ARGUMENTS`, then the graph's nodes."""
    arguments = [
        DeclareLaunchArgument(
            a.name, default_value=a.default, description=a.description, choices=a.choices or None
        )
        for a in SIMULATION_ARGUMENTS
    ]
    return LaunchDescription([*arguments, OpaqueFunction(function=_nodes)])
