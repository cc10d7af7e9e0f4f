"""``snake bag repair``: make an MCAP bag that a killed recorder left without its end
readable in place (:func:`snake_viz.bag.recover`), for tools other than ``snake``'s, which
repair it themselves before reading. :func:`summary` is the one line ``snake record``,
``snake replay`` and ``snake bag repair`` print of a bag."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from snake_viz.bag import open_reader, recover

if TYPE_CHECKING:
    from .options import Subparsers


def summary(bag: Path) -> str:
    """``<bag>: N messages in T s (topic count, ...)``.

    Raises:
        snake_viz.bag.BagError: the bag cannot be read.
    """
    with open_reader(bag) as reader:
        topics = ", ".join(f"{c.topic} {c.msgcount}" for c in reader.connections)
        return (
            f"{bag}: {reader.message_count} messages in {reader.duration * 1e-9:.1f} s "
            f"({topics or 'no topics'})"
        )


def register(sub: Subparsers) -> None:
    """Add ``snake bag repair BAG`` to the ``snake`` command."""
    p = sub.add_parser("bag", help="bag tools: repair")
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
    p.set_defaults(run=lambda a: repair(bag=a.bag))


def repair(*, bag: Path) -> int:
    """Repair an interrupted MCAP bag in place and say what was done."""
    done = recover(bag)
    for r in done:
        print(
            f"{r.path}: closed after its last complete record ({r.kept_bytes} bytes kept, "
            f"{r.dropped_bytes} bytes of an unfinished record dropped)"
        )
    if not done:
        print(f"{bag}: complete, nothing to repair")
    print(f"reads as {summary(bag)}")
    return 0
