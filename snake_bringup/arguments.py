"""argparse value types shared by the ``snake`` subcommands."""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence

from snake_driver.transport import TRANSPORTS


class UsageError(Exception):
    """A command-line mistake, reported in one line."""


def name_values(pairs: Sequence[str], option: str) -> dict[str, float]:
    """``NAME=VALUE`` pairs of a repeated option (e.g. ``--set``) as numbers by name.

    Raises:
        UsageError: a pair without ``=`` or a value that is not a number.
    """
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"{option} expects NAME=VALUE, got {pair!r}")
        try:
            params[key.strip()] = float(value)
        except ValueError:
            raise UsageError(f"{option} {key}: expected a number, got {value!r}") from None
    return params


def robot_link_options(p: argparse.ArgumentParser, key_help: str) -> None:
    """``--transport``, ``--port``, ``--host`` and ``--key``: how to reach the robot."""
    p.add_argument("--transport", choices=TRANSPORTS, default="serial", help="link to the robot")
    p.add_argument("--port", default="/dev/ttyACM0", help="serial device, or the bridge's port")
    p.add_argument("--host", default="127.0.0.1", help="the Wi-Fi bridge's address (udp, tcp)")
    p.add_argument("--key", metavar="HEX32", help=key_help)


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
