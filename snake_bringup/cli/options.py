"""What the ``snake`` subcommands share: argparse value types, every option several commands
take (each declared here once: ``--robot``, ``--gait``, ``--output``, ``--quiet``,
``--no-plots``, the graph, link, gaits-file and study options), and the one-line error
report."""

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

from ..cluster import CONNECT_TIMEOUT_S, WORKER_TIMEOUT_S, ClusterOptions
from ..cluster_tls import OPTIONS as TLS_OPTIONS
from ..cluster_tls import TlsFiles
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
    robot_option(p)
    gait_option(p, None, "gait (default: the --gaits file's, else the one in config/gaits.yaml)")
    gaits_option(p)
    duration_option(p, "stop after S seconds (default: Ctrl-C)", metavar="S")
    no_rviz_option(p)
    p.add_argument("--use-sim-time", action="store_true", help="nodes follow /clock")
    output_option(p, f"log folder (default: runs/{label}-...)")
    quiet_option(p, "only the logs, not the terminal")
    dry_run_option(p)


#: ``--robot``'s help where it names any robot.
ROBOT_HELP = "robot YAML file or config name (default: robot)"


def robot_option(
    p: argparse.ArgumentParser, default: str | None = "robot", help: str = ROBOT_HELP
) -> None:
    """``--robot NAME``: the robot YAML file or config name (snake_ros.paths.robot_config)."""
    p.add_argument("--robot", default=default, help=help)


def gait_option(
    p: argparse.ArgumentParser,
    default: str | None = "serpenoid",
    help: str = "gait (default: serpenoid)",
) -> None:
    """``--gait NAME``: one of the gaits (snake_dynamics.gaits.GAITS)."""
    p.add_argument("--gait", default=default, choices=sorted(GAITS), help=help)


def output_option(p: argparse.ArgumentParser, help: str, default: Path | None = None) -> None:
    """``--output/-o PATH``: where the command writes (``help`` says what and its default)."""
    p.add_argument("--output", "-o", type=Path, default=default, help=help)


def quiet_option(p: argparse.ArgumentParser, help: str) -> None:
    """``--quiet/-q``: less on the terminal (``help`` says what is left out)."""
    p.add_argument("--quiet", "-q", action="store_true", help=help)


def no_plots_option(p: argparse.ArgumentParser, help: str) -> None:
    """``--no-plots``: no PNG figures (``help`` says what is written instead)."""
    p.add_argument("--no-plots", action="store_true", help=help)


def study_options(p: argparse.ArgumentParser, per: str) -> None:
    """What ``snake sweep`` and ``snake optimize`` share: ``--set``, ``--duration``, ``--dt``
    and ``--ideal-servos`` (each ``per`` run on the ground), ``--jobs``, ``--scheduler``,
    ``--connect-timeout``, ``--worker-timeout`` and the ``--tls-*`` files (the Dask cluster
    it runs on; :func:`cluster_options` reads them back)."""
    set_option(p, "a fixed gait parameter, repeatable")
    duration_option(p, f"simulated time per {per} [s] (default: 4)", 4.0)
    dt_option(p)
    ideal_servos_option(
        p, "the joints exactly on the gait (prescribed) instead of the robot file's servos"
    )
    p.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=0,
        help=f"worker processes of the local Dask cluster, a {per} at a time each (default: one "
        "per core)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on the Dask scheduler at ADDRESS instead of a local cluster: tls://HOST:8786 "
        "with the --tls-* files (tcp:// lets anyone who reaches it run code on it)",
    )
    p.add_argument(
        "--connect-timeout",
        type=positive,
        default=CONNECT_TIMEOUT_S,
        help=f"how long to try --scheduler [s] (default: {CONNECT_TIMEOUT_S:g})",
    )
    p.add_argument(
        "--worker-timeout",
        type=positive,
        default=WORKER_TIMEOUT_S,
        help="how long --scheduler may have no worker before the study stops [s] (default: "
        f"{WORKER_TIMEOUT_S:g})",
    )
    for name, what in {
        "ca_file": "the cluster's CA certificate",
        "cert": "this client's certificate",
        "key": "this client's private key (mode 0600)",
    }.items():
        p.add_argument(
            TLS_OPTIONS[name],
            dest=f"tls_{name}",
            type=Path,
            metavar="FILE",
            help=f"{what}, for --scheduler tls://HOST:PORT (`snake cluster-certs`)",
        )


def cluster_options(args: argparse.Namespace) -> ClusterOptions:
    """Where the study of :func:`study_options` runs: its cluster options, read back."""
    return ClusterOptions(
        args.jobs,
        args.scheduler,
        args.connect_timeout,
        args.worker_timeout,
        TlsFiles(args.tls_ca_file, args.tls_cert, args.tls_key),
    )


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


def plant_option(
    p: argparse._ActionsContainer,
    help: str = "emulate the servos, body and feedback pots with this plant file "
    "(e.g. config/plant.yaml; default: no plant, pulses drive nothing)",
    metavar: str | None = "FILE",
) -> None:
    """``--plant FILE``: the emulated robot's servos and body (snake_dynamics.sim.plant)."""
    p.add_argument("--plant", type=Path, metavar=metavar, help=help)


def emulate_option(p: argparse.ArgumentParser, help: str) -> None:
    """``--emulate``: the real firmware in simavr instead of a robot (snake_bringup.emulator)."""
    p.add_argument("--emulate", action="store_true", help=help)


def duration_option(
    p: argparse.ArgumentParser, help: str, default: float | None = None, metavar: str | None = None
) -> None:
    """``--duration``: how long the command runs [s] (``help`` says which time, and its
    default)."""
    p.add_argument("--duration", type=positive, default=default, metavar=metavar, help=help)


def dt_option(p: argparse.ArgumentParser) -> None:
    """``--dt``: the RK4 step [s] of an offline run."""
    p.add_argument("--dt", type=positive, default=0.001, help="RK4 step [s] (default: 0.001)")


def set_option(p: argparse.ArgumentParser, help: str) -> None:
    """``--set NAME=VALUE``, repeatable: gait parameters (read with :func:`name_values`)."""
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help=help)


def ideal_servos_option(p: argparse.ArgumentParser, help: str) -> None:
    """``--ideal-servos``: the joints exactly on the gait, prescribed (eq. 228)."""
    p.add_argument("--ideal-servos", action="store_true", help=help)


def no_rviz_option(p: argparse.ArgumentParser) -> None:
    """``--no-rviz``: a graph without RViz."""
    p.add_argument("--no-rviz", action="store_true", help="do not start RViz")


def dry_run_option(p: argparse.ArgumentParser) -> None:
    """``--dry-run``: print a graph's commands, start nothing."""
    p.add_argument("--dry-run", action="store_true", help="print the commands, start nothing")


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
