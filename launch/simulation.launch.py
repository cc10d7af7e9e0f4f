"""The simulation graph on a ROS 2 install: gait -> MFM dynamics -> robot_state_publisher -> RViz.

    ros2 launch mfm_snake simulation.launch.py [robot_config:=robot] [gait:=serpenoid]
        [rviz:=true] [use_sim_time:=false]

Thin on purpose: the nodes, parameters and remappings come from
``snake_bringup.graph.simulation_graph``, the description ``snake sim`` runs too.
"""

from __future__ import annotations

from snake_bringup.graph import SIMULATION_ARGUMENTS, simulation_graph
from snake_bringup.launch_support import is_true, launch_description


def generate_launch_description():  # type: ignore[no-untyped-def]  # launch's own type
    """The launch arguments of :data:`SIMULATION_ARGUMENTS`, then the graph's nodes."""
    return launch_description(
        SIMULATION_ARGUMENTS,
        lambda v: simulation_graph(
            v["robot_config"],
            v["gait"],
            rviz=is_true(v["rviz"]),
            use_sim_time=is_true(v["use_sim_time"]),
        ),
    )
