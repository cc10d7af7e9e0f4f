"""``snake view``: run web_viewer_node in this process and print the page's address.

ROS (rclpy) is imported only when the command runs, so ``snake`` itself starts without it.
"""

from __future__ import annotations

import argparse
import sys

from snake_viz.defaults import DEFAULT_PORT


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port in 0..65535, got {value}")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``snake view [--port P] [--robot R]`` to the ``snake`` command."""
    p = subparsers.add_parser(
        "view",
        help="WebGL view of /sim and /measured joint states on http://127.0.0.1 (Ctrl-C to stop)",
    )
    p.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        help=f"http/WebSocket port on 127.0.0.1; 0: a free one (default: {DEFAULT_PORT})",
    )
    p.add_argument(
        "--robot", default="robot", help="robot YAML file or config name (default: robot)"
    )
    p.set_defaults(func=cmd_view)


def cmd_view(args: argparse.Namespace) -> int:
    """Run the viewer until Ctrl-C; print its URL once it serves.

    Returns:
        0 after a clean stop; 2 when the web files are missing or the node cannot start.
    """
    from rclpy.parameter import Parameter

    from snake_ros.common import run
    from snake_viz.web_viewer import WebAssetsError, WebViewerNode, check_assets

    try:
        check_assets()
    except WebAssetsError as exc:
        print(f"snake: error: {exc}", file=sys.stderr)
        return 2

    def factory() -> WebViewerNode:
        node = WebViewerNode(
            parameter_overrides=[
                Parameter("port", Parameter.Type.INTEGER, args.port),
                Parameter("robot_config", Parameter.Type.STRING, args.robot),
            ]
        )
        print(f"web view: {node.url}  (Ctrl-C to stop)", flush=True)
        return node

    return 0 if run(factory, "web_viewer_node") == 0 else 2
