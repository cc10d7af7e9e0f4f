"""``snake record``: the recorder node in the ``snake`` process itself; a recording ends at
``--duration`` or Ctrl-C with the bag closed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from snake_viz.bag import DEFAULT_TOPICS, BagError

from .bag import summary
from .options import duration_option, output_option, positive

if TYPE_CHECKING:
    from .options import Subparsers


def register(sub: Subparsers) -> None:
    """Add ``snake record [TOPIC ...]`` to the ``snake`` command."""
    p = sub.add_parser("record", help="record topics into a rosbag2 MCAP bag")
    p.add_argument(
        "topics",
        nargs="*",
        metavar="TOPIC",
        help=f"topics to record (default: {' '.join(DEFAULT_TOPICS)})",
    )
    output_option(p, "bag folder to create (default: runs/bag-...)")
    duration_option(p, "stop after S seconds (default: Ctrl-C)", metavar="S")
    p.add_argument(
        "--flush-period",
        type=positive,
        default=1.0,
        metavar="S",
        help="flush to disk every S seconds: what a crash can lose (default: 1)",
    )
    p.set_defaults(
        run=lambda a: run(
            topics=a.topics or list(DEFAULT_TOPICS),
            output=a.output,
            duration=a.duration,
            flush_period=a.flush_period,
        )
    )


def run(
    *, topics: Sequence[str], output: Path | None, duration: float | None, flush_period: float
) -> int:
    """Record ``topics`` into a new MCAP bag until ``duration`` [s] or Ctrl-C.

    Args:
        output: the bag folder to create (None: ``runs/bag-<time>``).
        flush_period: flush to disk every this many seconds [s].

    Raises:
        snake_viz.bag.BagError: the bag folder exists already, or cannot be written.
    """
    from snake_viz.recorder import default_output, record

    bag = Path(output or default_output())
    if bag.exists():
        raise BagError(f"{bag} exists already; choose a new bag folder (-o)")
    print(f"recording {', '.join(topics)} to {bag}/", flush=True)
    status = record(duration, output=str(bag), topics=list(topics), flush_period=flush_period)
    print(f"wrote {summary(bag)}")
    print(f"replay it: snake replay {bag}")
    return status
