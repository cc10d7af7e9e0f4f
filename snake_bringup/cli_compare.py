"""``snake compare BAG``: the comparison report of a recorded bag, offline and without ROS.

``snake_bringup.cli`` calls :func:`register` to add the sub-command; errors a user can cause
raise :class:`snake_viz.compare.CompareError` (one line, caught by the CLI).
"""

from __future__ import annotations

import argparse
import datetime as dt_module
from pathlib import Path
from typing import Any

from snake_viz.compare import (
    DEFAULT_MAX_LAG_S,
    DEFAULT_WINDOW_S,
    MEASURED_TOPIC,
    SIM_TOPIC,
    compare_bag,
)

from .arguments import positive


def register(subparsers: Any) -> None:
    """Add ``compare BAG [-o DIR] [--robot R] [--window S] [--max-lag S] [--no-plots]``.

    Args:
        subparsers: the object ``ArgumentParser.add_subparsers`` returned.
    """
    p = subparsers.add_parser(
        "compare",
        help="compare prediction and measurement in a recorded bag (report folder, no ROS)",
        description=(
            f"Align {SIM_TOPIC} and {MEASURED_TOPIC} of a rosbag2 bag by stamp and write a "
            "report: aligned CSV, per-joint plots, error table, lag, configuration."
        ),
    )
    p.add_argument("bag", type=Path, metavar="BAG", help="rosbag2 folder, or an .mcap or .db3 file")
    p.add_argument("--output", "-o", type=Path, help="report folder (default: runs/compare-...)")
    p.add_argument(
        "--robot", default="robot", help="robot YAML file or config name (default: robot)"
    )
    p.add_argument(
        "--window",
        type=positive,
        default=DEFAULT_WINDOW_S,
        metavar="S",
        help=f"window of the 'window' columns: the last S seconds (default: {DEFAULT_WINDOW_S:g})",
    )
    p.add_argument(
        "--max-lag",
        type=positive,
        default=DEFAULT_MAX_LAG_S,
        metavar="S",
        help=f"largest lag searched [s] (default: {DEFAULT_MAX_LAG_S:g})",
    )
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    """Write the report and print its folder and the per-joint error table.

    Raises:
        CompareError: no such bag, missing topics, no overlap, unknown robot config.
    """
    bag = Path(args.bag)
    out = args.output or Path("runs") / (
        f"compare-{bag.resolve().name.removesuffix('.mcap')}-"
        f"{dt_module.datetime.now():%Y%m%d-%H%M%S}"
    )
    summary = compare_bag(
        bag, out, args.robot, window=args.window, max_lag=args.max_lag, plots=not args.no_plots
    )
    print(
        f"report: {summary.folder}/ ({len(summary.files)} files, {summary.duration:.2f} s aligned)"
    )
    print(summary.table())
    return 0
