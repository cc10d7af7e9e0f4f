"""Turn a graph description into ``launch`` actions (used by launch/*.launch.py only).

``launch`` and ``launch_ros`` exist only on full ROS 2 installs, so they are imported
inside the functions: this module imports without them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .graph import LaunchArgument, NodeSpec


def launch_description(
    arguments: Sequence[LaunchArgument], graph: Callable[[dict[str, str]], Sequence[NodeSpec]]
) -> Any:
    """A LaunchDescription: the declared ``arguments``, then the nodes ``graph`` returns
    for their values (strings, as given on the command line)."""
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch.substitutions import LaunchConfiguration

    # mypy takes the repository's launch/ folder for the package: ignore its attr errors
    from launch import LaunchContext, LaunchDescription  # type: ignore[attr-defined]

    def nodes(context: LaunchContext) -> list[Any]:
        values = {a.name: LaunchConfiguration(a.name).perform(context) for a in arguments}
        return [node_action(spec) for spec in graph(values)]

    declared = [
        DeclareLaunchArgument(
            a.name, default_value=a.default, description=a.description, choices=a.choices or None
        )
        for a in arguments
    ]
    return LaunchDescription([*declared, OpaqueFunction(function=nodes)])


def node_action(spec: NodeSpec) -> Any:
    """The ``launch_ros.actions.Node`` of one graph node."""
    from launch_ros.actions import Node

    return Node(
        package=spec.package,
        executable=spec.executable,
        name=spec.name,
        namespace=spec.namespace or None,
        parameters=[str(p) if isinstance(p, Path) else dict(p) for p in spec.parameters],
        remappings=list(spec.remappings),
        arguments=list(spec.arguments),
        output="screen",
    )


def is_true(value: str) -> bool:
    """A launch argument's boolean value: "true", "True" or "1" (see ``graph.BOOLEAN``)."""
    return value.strip().lower() in ("true", "1")
