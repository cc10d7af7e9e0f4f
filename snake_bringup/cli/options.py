"""What the ``snake`` subcommands share: argparse value types, the option groups several
commands take, and the one-line error report."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from snake_driver.keyfile import KEY_FILE_ENV, load_key
from snake_driver.protocol import AuthKeyError
from snake_driver.transport import TRANSPORTS
from snake_dynamics.gaits import GAITS

from ..errors import UsageError
from ..gaits_file import gait_node_line, read_gait_overrides

if TYPE_CHECKING:
    #: What ``ArgumentParser.add_subparsers`` returns: each subcommand's ``register`` takes it.
    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]


def report_error(message: str) -> None:
    """Print ``snake: error: <message>`` on stderr: how every ``snake`` error ends."""
    print(f"snake: error: {message}", file=sys.stderr)


def report_warning(message: str) -> None:
    """Print ``snake: warning: <message>`` on stderr: something to know, the run goes on."""
    print(f"snake: warning: {message}", file=sys.stderr)


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


def auth_key(key_file: Path | None, key: str | None = None) -> str:
    """The link key of ``--key-file`` (else ``$SNAKE_AUTH_KEY_FILE``, else
    ``$SNAKE_AUTH_KEY``) as 32 hex digits; "" for plain mode. The key stays in this process.

    Raises:
        UsageError: a key given on the command line (``key``, the old ``--key``: every user
            of the machine sees it in ``ps``), or a key file that is not private or holds no
            key, naming the option and the fix.
    """
    if key is not None:
        raise UsageError(
            "--key: a key on the command line is visible to every user of this machine (ps): "
            f"write it to a file, chmod 600 it and pass --key-file FILE (or set {KEY_FILE_ENV})"
        )
    try:
        found = load_key(key_file)
    except AuthKeyError as exc:
        raise UsageError(f"--key-file: {exc}" if key_file else str(exc)) from None
    return found.hex() if found else ""


def robot_link_options(p: argparse.ArgumentParser, key_help: str) -> None:
    """``--transport``, ``--port``, ``--host`` and ``--key-file``: how to reach the robot."""
    p.add_argument("--transport", choices=TRANSPORTS, default="serial", help="link to the robot")
    p.add_argument("--port", default="/dev/ttyACM0", help="serial device, or the bridge's port")
    p.add_argument("--host", default="127.0.0.1", help="the Wi-Fi bridge's address (udp, tcp)")
    key_options(p, key_help)


def key_options(p: argparse.ArgumentParser, key_help: str) -> None:
    """``--key-file FILE`` (the link key, a file only its owner reads), and the old ``--key``
    kept only to refuse it in one line (:func:`auth_key`)."""
    p.add_argument(
        "--key-file",
        type=Path,
        metavar="FILE",
        help=f"{key_help}: FILE holds the key's 32 hex digits, chmod 600 (default: "
        f"${KEY_FILE_ENV}, else $SNAKE_AUTH_KEY, else plain mode)",
    )
    p.add_argument("--key", help=argparse.SUPPRESS)


def graph_options(p: argparse.ArgumentParser, label: str) -> None:
    """The options every graph command (``snake sim``, ``snake hardware``) shares."""
    p.add_argument(
        "--robot", default="robot", help="robot YAML file or config name (default: robot)"
    )
    p.add_argument(
        "--gait",
        choices=sorted(GAITS),
        help="gait (default: the --gaits file's, else the one in config/gaits.yaml)",
    )
    gaits_option(p)
    p.add_argument(
        "--duration", type=positive, metavar="S", help="stop after S seconds (default: Ctrl-C)"
    )
    p.add_argument("--no-rviz", action="store_true", help="do not start RViz")
    p.add_argument("--use-sim-time", action="store_true", help="nodes follow /clock")
    p.add_argument("--output", "-o", type=Path, help=f"log folder (default: runs/{label}-...)")
    p.add_argument("--quiet", "-q", action="store_true", help="only the logs, not the terminal")
    p.add_argument("--dry-run", action="store_true", help="print the commands, start nothing")


def gaits_option(p: argparse.ArgumentParser) -> None:
    """``--gaits FILE``: a gait_node parameter file's gait and gait parameters."""
    p.add_argument(
        "--gaits",
        type=Path,
        metavar="FILE",
        help="a gait_node parameter file of config/gaits.yaml's schema (e.g. snake optimize's "
        "best_gait.yaml): its gait unless --gait, its gait parameters over config/gaits.yaml's",
    )


def played_gait(
    gait: str, gaits: Path | None, default: str = ""
) -> tuple[str, dict[str, Mapping[str, float]]]:
    """The gait to play and the gait parameters replacing config/gaits.yaml's, by gait:
    ``gait`` (``--gait``), else the ``gaits`` file's, else ``default`` (empty: config/gaits.yaml's);
    the file's gait parameters (none without a file).

    Raises:
        GaitsFileError: the file cannot be read as gaits, or sets another gait_node parameter.
    """
    if gaits is None:
        return gait or default, {}
    file = read_gait_overrides(gaits)
    return gait or file.gait or default, dict(file.parameters)


def gaits_note(gaits: Path, gait: str, parameters: Mapping[str, Mapping[str, float]]) -> str:
    """The line that says what gait_node plays with ``--gaits FILE``."""
    return f"gait_node, with {gaits}: {gait_node_line(gait, parameters) or 'nothing set'}"


def compensate_options(p: argparse.ArgumentParser) -> None:
    """``--compensate`` and ``--force``: commands pre-shaped for the servos, and running a gait
    the servos cannot follow (docs/hardware.md, "Compensated commands")."""
    p.add_argument(
        "--compensate",
        action="store_true",
        help="pre-shape the commands with the robot config's servo model and body so that the "
        "joints follow the gait",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="run a gait that asks more torque or speed of a servo than it gives (refused "
        "otherwise)",
    )


def plant_option(p: argparse.ArgumentParser) -> None:
    """``--plant FILE``: the emulated robot's servos and body (snake_dynamics.sim.plant)."""
    p.add_argument(
        "--plant",
        type=Path,
        metavar="FILE",
        help="emulate the servos, body and feedback pots with this plant file "
        "(e.g. config/plant.yaml; default: no plant, pulses drive nothing)",
    )


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
