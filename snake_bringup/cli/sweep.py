"""``snake sweep``: its options, then one call of :func:`snake_bringup.sweep.sweep` (the
study: a grid of two gait parameters on a Dask cluster, its speed and cost-of-transport map)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from snake_ros.paths import load_robot

from ..sweep import DEFAULT_X, DEFAULT_Y, GroundRuns, parse_axis, sweep
from .options import (
    cluster_options,
    gait_option,
    name_values,
    no_plots_option,
    output_option,
    quiet_option,
    robot_option,
    study_options,
)

if TYPE_CHECKING:
    from .options import Subparsers


def ground_runs(args: argparse.Namespace) -> GroundRuns:
    """A study's runs as its options (``--robot``, ``--gait`` and
    :func:`~.options.study_options`) give them, the robot read once here."""
    fixed = name_values(args.set, "--set")
    return GroundRuns(
        load_robot(args.robot), args.gait, fixed, args.duration, args.dt, args.ideal_servos
    )


def register(sub: Subparsers) -> None:
    """Add ``snake sweep`` to the ``snake`` command."""
    p = sub.add_parser(
        "sweep", help="speed and cost-of-transport map of a gait on the ground over two parameters"
    )
    robot_option(p)
    gait_option(p)
    p.add_argument(
        "--x",
        default=DEFAULT_X,
        metavar="NAME=LOW:HIGH[:COUNT]",
        help=f"first swept parameter (default: {DEFAULT_X}; see `snake gaits`)",
    )
    p.add_argument(
        "--y",
        default=DEFAULT_Y,
        metavar="NAME=LOW:HIGH[:COUNT]",
        help=f"second swept parameter (default: {DEFAULT_Y})",
    )
    study_options(p, "point")
    output_option(
        p, "output folder (default: runs/sweep-...); a folder of the same sweep resumes it"
    )
    no_plots_option(p, "only the CSV and JSON")
    quiet_option(p, "no progress lines")
    p.set_defaults(
        run=lambda a: sweep(
            runs=ground_runs(a),
            x=parse_axis(a.x, "--x"),
            y=parse_axis(a.y, "--y"),
            cluster=cluster_options(a),
            output=a.output,
            plots=not a.no_plots,
            quiet=a.quiet,
        )
    )
