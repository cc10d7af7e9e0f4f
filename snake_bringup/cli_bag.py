"""``snake record``, ``snake replay`` and ``snake bag repair``: the recorder and replay nodes
from the command line, and the repair of a bag whose recorder was killed.

``snake record`` runs the recorder node in the ``snake`` process itself (a recording ends at
``--duration`` or Ctrl-C with the bag closed). ``snake replay`` runs
:func:`snake_bringup.graph.replay_graph`, the nodes ``replay.launch.py`` starts (the player,
both robot descriptions and RViz where they are installed), as ``snake sim`` runs its graph;
it ends with the bag (or Ctrl-C with ``--loop``). ``snake bag repair`` makes an MCAP bag
that a killed recorder left without its end readable in place
(:func:`snake_viz.bag.recover`), for tools other than ``snake``'s, which repair it
themselves before reading.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from snake_viz.bag import DEFAULT_TOPICS, BagError, open_reader, recover
from snake_viz.defaults import REPLAY_RATES

from .arguments import non_negative, positive


def _summary(bag: Path) -> str:
    with open_reader(bag) as reader:
        topics = ", ".join(f"{c.topic} {c.msgcount}" for c in reader.connections)
        return (
            f"{bag}: {reader.message_count} messages in {reader.duration * 1e-9:.1f} s "
            f"({topics or 'no topics'})"
        )


def cmd_record(args: argparse.Namespace) -> int:
    """Record topics into a new MCAP bag until --duration or Ctrl-C."""
    from snake_viz.recorder import default_output, record

    output = Path(args.output or default_output())
    if output.exists():
        raise BagError(f"{output} exists already; choose a new bag folder (-o)")
    print(f"recording {', '.join(args.topics or DEFAULT_TOPICS)} to {output}/", flush=True)
    status = record(
        args.duration,
        output=str(output),
        topics=list(args.topics or DEFAULT_TOPICS),
        flush_period=args.flush_period,
    )
    print(f"wrote {_summary(output)}")
    print(f"replay it: snake replay {output}")
    return status


def cmd_replay(args: argparse.Namespace) -> int:
    """Run the replay graph: the bag's topics with their original timing (scaled by
    --rate) and /clock, the robot descriptions and RViz on the bag's time.

    Raises:
        BagError: the bag cannot be read.
        snake_bringup.graph.GraphError: a rate outside REPLAY_RATES.
        snake_bringup.runner.RunError: a node could not start or failed.
    """
    from .graph import replay_graph
    from .runner import run_graph

    graph = replay_graph(
        str(args.bag),
        args.rate,
        loop=args.loop,
        robot=args.robot,
        rviz=not args.no_rviz,
        topics=args.topics or (),
        delay=args.delay,
        wait_for_subscribers=args.wait_for_subscribers,
    )
    if not args.dry_run:
        print(f"replaying {_summary(args.bag)}", flush=True)
    run = argparse.Namespace(
        output=args.output, duration=None, quiet=args.quiet, dry_run=args.dry_run
    )
    return run_graph(graph, f"replay-{args.bag.resolve().name}", run)


def cmd_bag_repair(args: argparse.Namespace) -> int:
    """Repair an interrupted MCAP bag in place and say what was done."""
    done = recover(args.bag)
    for r in done:
        print(
            f"{r.path}: closed after its last complete record ({r.kept_bytes} bytes kept, "
            f"{r.dropped_bytes} bytes of an unfinished record dropped)"
        )
    if not done:
        print(f"{args.bag}: complete, nothing to repair")
    print(f"reads as {_summary(args.bag)}")
    return 0


def register(subparsers: Any) -> None:
    """Add ``record`` and ``replay`` to the ``snake`` command's subparsers."""
    p = subparsers.add_parser("record", help="record topics into a rosbag2 MCAP bag")
    p.add_argument(
        "topics",
        nargs="*",
        metavar="TOPIC",
        help=f"topics to record (default: {' '.join(DEFAULT_TOPICS)})",
    )
    p.add_argument("--output", "-o", type=Path, help="bag folder to create (default: runs/bag-...)")
    p.add_argument(
        "--duration", type=positive, metavar="S", help="stop after S seconds (default: Ctrl-C)"
    )
    p.add_argument(
        "--flush-period",
        type=positive,
        default=1.0,
        metavar="S",
        help="flush to disk every S seconds: what a crash can lose (default: 1)",
    )
    p.set_defaults(func=cmd_record)

    p = subparsers.add_parser(
        "replay", help="play a bag's topics with their original timing and /clock"
    )
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
    p.add_argument(
        "--robot", default="robot", help="robot YAML file or config name (default: robot)"
    )
    p.add_argument("--no-rviz", action="store_true", help="do not start RViz")
    p.add_argument("--output", "-o", type=Path, help="log folder (default: runs/replay-...)")
    p.add_argument("--quiet", "-q", action="store_true", help="only the logs, not the terminal")
    p.add_argument("--dry-run", action="store_true", help="print the commands, start nothing")
    p.set_defaults(func=cmd_replay)

    p = subparsers.add_parser("bag", help="bag tools: repair")
    tools = p.add_subparsers(dest="tool", required=True, metavar="TOOL")
    p = tools.add_parser(
        "repair",
        help="make a bag whose recorder was killed readable by any tool (in place)",
        description="Close an MCAP bag left without its end (a recorder killed during a "
        "write): cut the unfinished record, append the MCAP data end and footer, recount "
        "metadata.yaml. Nothing flushed is lost. A bag the recorder closed, or killed "
        "between writes, is complete already.",
    )
    p.add_argument("bag", type=Path, metavar="BAG", help="bag folder (MCAP)")
    p.set_defaults(func=cmd_bag_repair)
