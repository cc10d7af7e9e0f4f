"""A recorded run on a ROS 2 install: the bag's topics and /clock, both robot descriptions
and RViz on the bag's time.

    ros2 launch mfm_snake replay.launch.py bag:=runs/bag-... [rate:=1.0] [loop:=false]
        [robot_config:=robot] [rviz:=true]

Thin on purpose: the nodes come from ``snake_bringup.graph.replay_graph``.
"""

from __future__ import annotations

from snake_bringup.graph import REPLAY_ARGUMENTS, replay_graph
from snake_bringup.launch_support import is_true, launch_description


def generate_launch_description():  # type: ignore[no-untyped-def]  # launch's own type
    """The launch arguments of :data:`REPLAY_ARGUMENTS`, then the graph's nodes."""
    return launch_description(
        REPLAY_ARGUMENTS,
        lambda v: replay_graph(
            v["bag"],
            v["rate"],
            loop=is_true(v["loop"]),
            robot=v["robot_config"],
            rviz=is_true(v["rviz"]),
        ),
    )
