"""``snake estop``: press the operator's stop (``--release``: release it), through the
station's operator_node: its stop state on /estop, and the driver's own services beside it
(docs/safety.md, "The e-stop and arming")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .options import positive

if TYPE_CHECKING:
    from .options import Subparsers


def register(sub: Subparsers) -> None:
    """Add ``snake estop [--release]`` to the ``snake`` command."""
    p = sub.add_parser("estop", help="press the operator's e-stop (latched; --release releases it)")
    p.add_argument(
        "--release",
        action="store_true",
        help="release the stop: the stop state false, the driver's ~/enable true (refused "
        "while the driver has not answered the e-stop)",
    )
    p.add_argument(
        "--operator",
        default="/operator_node",
        help="the station's operator node (default: /operator_node)",
    )
    p.add_argument(
        "--timeout",
        type=positive,
        default=10.0,
        metavar="S",
        help="wait this long for the operator node (default: 10)",
    )
    p.set_defaults(run=lambda a: run(release=a.release, operator=a.operator, timeout=a.timeout))


def run(*, release: bool, operator: str, timeout: float) -> int:
    """Press or release the operator's stop; prints the operator node's answer.

    Raises:
        snake_ros.operator_node.OperatorCallError: no operator node answered, or it refused.
    """
    from snake_ros.operator_node import call_operator

    print(call_operator(not release, operator, timeout))
    return 0
