"""``snake record`` and ``snake replay``: the recorder and replay nodes from the command line.

Both run their node in the ``snake`` process itself (a recording ends at ``--duration`` or
Ctrl-C with the bag closed; a replay ends with the bag). For RViz and the robot
descriptions beside a replay, use ``ros2 launch mfm_snake replay.launch.py bag:=BAG``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from snake_bringup.arguments import non_negative, positive

from .bag import DEFAULT_TOPICS, BagError, open_reader


def _summary(bag: Path) -> str:
    with open_reader(bag) as reader:
        topics = ", ".join(f"{c.topic} {c.msgcount}" for c in reader.connections)
        return (
            f"{bag}: {reader.message_count} messages in {reader.duration * 1e-9:.1f} s "
            f"({topics or 'no topics'})"
        )


def cmd_record(args: argparse.Namespace) -> int:
    """Record topics into a new MCAP bag until --duration or Ctrl-C."""
    from .recorder import default_output, record

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
    """Publish a bag's topics with their original timing (scaled by --rate) and /clock."""
    from .replayer import replay

    if not 0.01 <= args.rate <= 100.0:
        raise BagError(f"--rate must be between 0.01 and 100, got {args.rate:g}")
    if not 0 <= args.wait_for_subscribers <= 1000:
        raise BagError(f"--wait-for-subscribers must be 0..1000, got {args.wait_for_subscribers}")
    print(f"replaying {_summary(args.bag)}", flush=True)
    overrides: dict[str, Any] = {
        "bag": str(args.bag.resolve()),
        "rate": args.rate,
        "loop": args.loop,
        "delay": args.delay,
        "wait_for_subscribers": args.wait_for_subscribers,
    }
    if args.topics:
        overrides["topics"] = list(args.topics)
    status = replay(**overrides)
    if status == 1:
        raise BagError(f"cannot replay {args.bag} (see the log line above)")
    return status


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
        "--rate", type=positive, default=1.0, metavar="R", help="speed factor (default: 1)"
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
    p.set_defaults(func=cmd_replay)
