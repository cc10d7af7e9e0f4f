"""``snake view``: run web_viewer_node in this process and print the page's address.

ROS (rclpy) is imported only when the command runs, so ``snake`` itself starts without it.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from snake_viz.defaults import DEFAULT_PORT

from .options import robot_option

if TYPE_CHECKING:
    from snake_viz.web_viewer import WebViewerNode

    from .options import Subparsers


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port in 0..65535, got {value}")
    return value


def register(sub: Subparsers) -> None:
    """Add ``snake view [--port P] [--robot R]`` to the ``snake`` command."""
    p = sub.add_parser(
        "view",
        help="WebGL view of /sim and /measured joint states on http://127.0.0.1 (Ctrl-C to stop)",
    )
    p.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        help=f"http/WebSocket port on 127.0.0.1; 0: a free one (default: {DEFAULT_PORT})",
    )
    robot_option(p)
    p.set_defaults(run=lambda a: run(port=a.port, robot=a.robot))


def run(*, port: int, robot: str) -> int:
    """Run the viewer until Ctrl-C; print its URL once it serves.

    Returns:
        0 after a clean stop; 1 when the node cannot start (logged in one line).

    Raises:
        snake_viz.web_viewer.WebAssetsError: the page's files are missing.
    """
    from rclpy.parameter import Parameter

    from snake_ros.common import run as run_node
    from snake_viz.web_viewer import WebViewerNode, check_assets

    check_assets()

    def factory() -> WebViewerNode:
        node = WebViewerNode(
            parameter_overrides=[
                Parameter("port", Parameter.Type.INTEGER, port),
                Parameter("robot_config", Parameter.Type.STRING, robot),
            ]
        )
        print(f"web view: {node.url}  (Ctrl-C to stop)", flush=True)
        return node

    return run_node(factory, "web_viewer_node")
