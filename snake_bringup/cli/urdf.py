"""``snake urdf``: the URDF generated from a robot config, on stdout or to a file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from snake_dynamics.urdf import to_urdf, write_urdf
from snake_ros.paths import load_robot

from .options import output_option, robot_option

if TYPE_CHECKING:
    from .options import Subparsers


def register(sub: Subparsers) -> None:
    """Add ``snake urdf [--robot R] [-o FILE]`` to the ``snake`` command."""
    p = sub.add_parser("urdf", help="URDF of a robot config (stdout or --output)")
    robot_option(p)
    output_option(p, "file to write")
    p.set_defaults(run=lambda a: run(robot=a.robot, output=a.output))


def run(*, robot: str, output: Path | None) -> int:
    """Print the URDF of ``robot`` (a YAML file or config name), or write it to ``output``."""
    model = load_robot(robot).model
    if output is None:
        sys.stdout.write(to_urdf(model))
    else:
        print(f"wrote {write_urdf(model, output)}")
    return 0
