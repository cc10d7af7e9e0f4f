"""``snake gaits``: the gaits and their parameters (defaults, ranges, units)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from snake_dynamics import GAITS

if TYPE_CHECKING:
    from .options import Subparsers


def register(sub: Subparsers) -> None:
    """Add ``snake gaits`` to the ``snake`` command."""
    p = sub.add_parser("gaits", help="list gaits and their parameters")
    p.set_defaults(run=lambda a: run())


def run() -> int:
    """Print every gait with its parameters."""
    for name, spec in GAITS.items():
        print(f"{name}: {spec.description}")
        for key, (default, low, high, unit) in spec.params.items():
            print(f"    {key} = {default:g} {unit}  (range {low:g} .. {high:g})")
    return 0
