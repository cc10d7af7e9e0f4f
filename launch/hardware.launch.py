"""The robot on a ROS 2 install: gait -> driver -> firmware -> measured state, RViz, and the
MFM prediction beside it when asked.

    ros2 launch mfm_snake hardware.launch.py [transport:=serial] [port:=/dev/ttyACM0]
        [host:=127.0.0.1] [auth_key_file:=FILE] [robot_config:=robot] [gait:=serpenoid]
        [dynamics:=false] [compensate:=false] [rviz:=true] [use_sim_time:=false]
        [role:=both] [allow_open_domain:=false]

The link key comes from ``auth_key_file`` (chmod 600) or the environment, never from the
command line; the driver refuses to start on a ROS domain open to other hosts unless
``allow_open_domain:=true`` (docs/safety.md).

``role:=robot`` starts the driver alone (on the robot's computer), ``role:=station`` the rest
(on the workstation): the graph on two machines, docs/two-hosts.md.

Thin on purpose: the nodes come from ``snake_bringup.graph.hardware_graph``, the
description ``snake hardware`` runs too.
"""

from __future__ import annotations

from snake_bringup.graph import HARDWARE_ARGUMENTS, hardware_graph
from snake_bringup.launch_support import is_true, launch_description


def generate_launch_description():  # type: ignore[no-untyped-def]  # launch's own type
    """The launch arguments of :data:`HARDWARE_ARGUMENTS`, then the graph's nodes."""
    return launch_description(
        HARDWARE_ARGUMENTS,
        lambda v: hardware_graph(
            v["robot_config"],
            v["transport"],
            v["port"],
            v["host"],
            v["gait"],
            dynamics=is_true(v["dynamics"]),
            compensate=is_true(v["compensate"]),
            rviz=is_true(v["rviz"]),
            use_sim_time=is_true(v["use_sim_time"]),
            auth_key_file=v["auth_key_file"],
            allow_open_domain=is_true(v["allow_open_domain"]),
            role=v["role"],
        ),
    )
