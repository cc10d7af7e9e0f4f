"""``snake compare BAG``: the comparison report of a recorded bag, offline and without ROS
(:func:`snake_bringup.comparison.compare_bag`)."""

from __future__ import annotations

import datetime as dt_module
from pathlib import Path
from typing import TYPE_CHECKING

from snake_viz.compare import DEFAULT_MAX_LAG_S, DEFAULT_WINDOW_S, MEASURED_TOPIC, SIM_TOPIC
from snake_viz.path_compare import DEFAULT_MAX_AHEAD_S, SIM_CLOCK_MAX_AHEAD_S

from ..comparison import compare_bag, report_robot
from .options import no_plots_option, output_option, positive, robot_option

if TYPE_CHECKING:
    from .options import Subparsers


def register(sub: Subparsers) -> None:
    """Add ``compare BAG [-o DIR] [--robot R] [--window S] [--max-lag S] [--no-plots]``."""
    p = sub.add_parser(
        "compare",
        help="compare prediction and measurement in a recorded bag (report folder, no ROS)",
        description=(
            f"Align {SIM_TOPIC} and {MEASURED_TOPIC} of a rosbag2 bag by stamp and write a "
            "report: aligned CSV, per-joint plots, error table, lag, configuration."
        ),
    )
    p.add_argument("bag", type=Path, metavar="BAG", help="rosbag2 folder, or an .mcap or .db3 file")
    output_option(p, "report folder (default: runs/compare-...)")
    robot_option(p)
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
    p.add_argument(
        "--pose-max-ahead",
        type=positive,
        default=DEFAULT_MAX_AHEAD_S,
        metavar="S",
        help="a measured pose stamped more than S ahead of its arrival in the bag is rejected "
        f"[s] (default: {DEFAULT_MAX_AHEAD_S:g}; {SIM_CLOCK_MAX_AHEAD_S:g} for a bag recorded "
        "on a robot's /clock, as snake demo and snake hardware --emulate record)",
    )
    no_plots_option(p, "skip the PNG plots")
    p.set_defaults(
        run=lambda a: run(
            bag=a.bag,
            output=a.output,
            robot=a.robot,
            window=a.window,
            max_lag=a.max_lag,
            plots=not a.no_plots,
            pose_max_ahead=a.pose_max_ahead,
        )
    )


def run(
    *,
    bag: Path,
    output: Path | None,
    robot: str,
    window: float,
    max_lag: float,
    plots: bool,
    pose_max_ahead: float,
) -> int:
    """Write the report and print its folder and the per-joint error table.

    Raises:
        snake_viz.compare.CompareError: no such bag, missing topics, no overlap, unknown
            robot config.
    """
    out = output or Path("runs") / (
        f"compare-{bag.resolve().name.removesuffix('.mcap')}-"
        f"{dt_module.datetime.now():%Y%m%d-%H%M%S}"
    )
    summary = compare_bag(
        bag,
        out,
        report_robot(robot),
        window=window,
        max_lag=max_lag,
        plots=plots,
        pose_max_ahead=pose_max_ahead,
    )
    print(
        f"report: {summary.folder}/ ({len(summary.files)} files, {summary.duration:.2f} s aligned)"
    )
    print(summary.table())
    return 0
