"""argparse value types shared by the ``snake`` subcommands."""

from __future__ import annotations

import argparse
import math


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def positive(text: str) -> float:
    """A finite number > 0 (argparse ``type=``)."""
    value = _number(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def non_negative(text: str) -> float:
    """A finite number >= 0 (argparse ``type=``)."""
    value = _number(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value
