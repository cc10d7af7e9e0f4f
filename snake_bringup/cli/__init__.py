"""The ``snake`` command: offline simulation, gait and URDF tools, the node graphs without
``ros2 launch``, the emulated robot, bags, comparison, identification and the demo.

One module per subcommand, named after it; each has ``register(sub)``, which adds its parser
and sets ``run`` to a call of its typed ``run(*, ...)`` with the parsed options (the
``argparse.Namespace`` stops there). :func:`main` builds the parser from them, in the order
``snake --help`` lists them.

Exit status: 0; 1 for an error a user can act on (every project error derives from
:class:`snake_dynamics.errors.SnakeError`; the operating system's refusals, an
:class:`OSError`, are reported the same way), printed on one line ``snake: error: ...``,
never a traceback; 2 for a command line argparse refuses; 3 for a ``snake simulate`` run that
left the commanded gait (its files written, :data:`.simulate.OFF_GAIT_STATUS`); 130 after
Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import sys
import threading
from collections.abc import Sequence
from typing import NoReturn

from snake_dynamics.errors import SnakeError

from ..versions import check as check_versions
from . import (
    bag,
    cluster_certs,
    compare,
    demo,
    emulate,
    estop,
    flexible,
    gaits,
    hardware,
    identify,
    optimize,
    record,
    replay,
    sim,
    simulate,
    sweep,
    urdf,
    view,
)
from .options import report_error

#: The subcommands, in the order ``snake --help`` lists them.
COMMANDS = (
    simulate,
    gaits,
    urdf,
    demo,
    sim,
    hardware,
    estop,
    emulate,
    compare,
    identify,
    sweep,
    optimize,
    flexible,
    cluster_certs,
    view,
    record,
    replay,
    bag,
)


def build_parser() -> argparse.ArgumentParser:
    """The ``snake`` parser: one subparser per module of :data:`COMMANDS`."""
    parser = argparse.ArgumentParser(
        prog="snake", description="mfm_snake: MFM snake robot dynamics, gaits and tools"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``snake`` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        check_versions(args.command)  # one line naming a package too old
        return int(args.run(args))
    except SnakeError as exc:
        report_error(str(exc))
    except OSError as exc:
        report_error(f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc))
    except KeyboardInterrupt:
        print("snake: interrupted", file=sys.stderr)
        return 130
    return 1


def console() -> NoReturn:
    """The ``snake`` console script: :func:`main`, then the process ends with its status.

    When nothing is left running in it (no thread but this one, no child process of its own,
    as after a node graph: its nodes stopped and waited for), the process ends at once
    (``os._exit`` after flushing stdout and stderr): the interpreter's teardown of the modules
    a graph command loads (the JIT, the middleware) took 1.3 s of every Ctrl-C. Otherwise
    (a Dask client, a process pool) it exits as usual, their ``atexit`` handlers run.
    """
    status = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if threading.active_count() == 1 and not multiprocessing.active_children():
        os._exit(status)
    sys.exit(status)
