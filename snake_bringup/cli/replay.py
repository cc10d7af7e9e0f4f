"""``snake replay BAG``: :func:`snake_bringup.graph.replay_graph`, the nodes
``replay.launch.py`` starts (the player, both robot descriptions and RViz where they are
installed), run as ``snake sim`` runs its graph; it ends with the bag (or Ctrl-C with
``--loop``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from snake_viz.defaults import REPLAY_RATES

from ..graph import replay_graph
from ..runner import run_folder, run_graph
from .bag import summary
from .options import (
    dry_run_option,
    no_rviz_option,
    non_negative,
    output_option,
    positive,
    quiet_option,
    robot_option,
)

if TYPE_CHECKING:
    from .options import Subparsers


def register(sub: Subparsers) -> None:
    """Add ``snake replay BAG`` to the ``snake`` command."""
    p = sub.add_parser("replay", help="play a bag's topics with their original timing and /clock")
    p.add_argument("bag", type=Path, metavar="BAG", help="bag folder (MCAP or sqlite3)")
    p.add_argument(
        "--rate",
        type=positive,
        default=1.0,
        metavar="R",
        help=f"speed factor, {REPLAY_RATES[0]:g} to {REPLAY_RATES[1]:g} (default: 1)",
    )
    p.add_argument("--loop", action="store_true", help="start over at the end, until Ctrl-C")
    p.add_argument(
        "--delay",
        type=non_negative,
        default=1.0,
        metavar="S",
        help="wait S seconds for subscribers before playing (default: 1)",
    )
    p.add_argument(
        "--wait-for-subscribers",
        type=int,
        default=0,
        metavar="N",
        help="first wait (at most 30 s) until every topic has N subscribers (default: 0)",
    )
    p.add_argument("--topics", nargs="+", metavar="TOPIC", help="play only these topics")
    robot_option(p)
    no_rviz_option(p)
    output_option(p, "log folder (default: runs/replay-...)")
    quiet_option(p, "only the logs, not the terminal")
    dry_run_option(p)
    p.set_defaults(
        run=lambda a: run(
            bag=a.bag,
            rate=a.rate,
            loop=a.loop,
            delay=a.delay,
            wait_for_subscribers=a.wait_for_subscribers,
            topics=a.topics or (),
            robot=a.robot,
            rviz=not a.no_rviz,
            output=a.output,
            quiet=a.quiet,
            dry_run=a.dry_run,
        )
    )


def run(
    *,
    bag: Path,
    rate: float,
    loop: bool,
    delay: float,
    wait_for_subscribers: int,
    topics: Sequence[str],
    robot: str,
    rviz: bool,
    output: Path | None,
    quiet: bool,
    dry_run: bool,
) -> int:
    """Run the replay graph: the bag's topics with their original timing (scaled by
    ``rate``) and /clock, the robot descriptions and RViz on the bag's time.

    Raises:
        snake_viz.bag.BagError: the bag cannot be read.
        snake_bringup.graph.GraphError: a rate outside REPLAY_RATES.
        snake_bringup.runner.RunError: a node could not start or failed.
    """
    graph = replay_graph(
        str(bag),
        rate,
        loop=loop,
        robot=robot,
        rviz=rviz,
        topics=topics,
        delay=delay,
        wait_for_subscribers=wait_for_subscribers,
    )
    if not dry_run:
        print(f"replaying {summary(bag)}", flush=True)
    out = run_folder(f"replay-{bag.resolve().name}", output)
    return run_graph(graph, output=out, quiet=quiet, dry_run=dry_run)
