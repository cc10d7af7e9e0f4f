"""web_viewer_node: the WebGL view of both robots, served on 127.0.0.1.

One port serves everything: the static page (``web/index.html``, ``web/viewer.js``), the
vendored three.js and urdf-loader modules (``web/node_modules``, installed by ``make web``),
the robot's URDF (``/robot.urdf``, generated from the robot config) and a WebSocket
(``/ws``) that streams ``/sim/joint_states`` and ``/measured/joint_states`` as JSON text
messages ``{"topic", "stamp", "name", "position"}`` (stamp in seconds, angles in radians;
``topic`` is the role's canonical name, also under remapping), and the base poses of a
floating robot (the tail's, base_link's, pose in ``world``): the prediction's ``/sim/odom``
(nav_msgs/Odometry) and the robot's ``/measured/pose`` (geometry_msgs/PoseStamped, from an
external pose sensor such as motion capture), as ``{"topic", "stamp", "position",
"orientation"}`` (position [m] x, y, z; orientation the unit quaternion x, y, z, w; an
odometry's twist is not sent). A robot config with ``elastic:`` links also streams the
prediction's ``/sim/link_deflections`` as each elastic link's bent centreline,
``{"topic", "stamp", "links": {"link_5": [[x, y, z], ...]}}`` (9 points from the joint, in
the link's URDF frame [m]; :meth:`LinkDeflections.centrelines`), which the page draws over
the link. Each topic is throttled to ``rate``: the latest message is sent,
older ones in the same period are dropped, and a client that cannot keep up is skipped
rather than buffered. A new client first gets the latest message of each topic. Messages
that cannot be drawn (non-finite values, a quaternion whose norm is off 1 by more than
``QUATERNION_TOLERANCE``) are rejected and counted (:class:`InputMonitor`), never sent.

The WebSocket is read-only, but what the robot does is still nobody else's business: an
upgrade whose ``Origin`` header names a page that is not on this host (any page the user's
browser happens to show, a DNS name rebound to 127.0.0.1, ``null``) is refused with 403 and
counted (``/ws (origin) rejected`` on ``/diagnostics``); a page on a loopback address
(``http://127.0.0.1:*``, ``http://localhost:*``, ``http://[::1]:*``: the view itself, or the
view through ``ssh -L``) and a client that is no page (no ``Origin``, as browsers always send
one) are served (docs/safety.md, "Inputs the graph refuses").

The server runs in an asyncio loop on its own thread; the ROS callbacks only store the
latest message per topic under a lock.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import email.utils
import http
import ipaddress
import json
import math
import mimetypes
import sys
import threading
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from websockets.version import version as websockets_version

from snake_dynamics.flexible.snake import LinkDeflections, elastic_arm
from snake_dynamics.urdf import to_urdf
from snake_ros.common import (
    InputMonitor,
    declare_float,
    declare_int,
    declare_robot_config,
    run,
)
from snake_ros.paths import load_robot

from .compare import DEFLECTIONS_TOPIC, ODOM_TOPIC
from .defaults import DEFAULT_PORT
from .errors import VizError
from .path_compare import POSE_TOPIC, QUATERNION_TOLERANCE

#: The page and its module; the vendored packages live in ``node_modules`` below it.
WEB_DIR = Path(__file__).resolve().with_name("web")
#: URL prefix -> folder for the vendored ES modules (only ``.js`` files are served).
VENDOR = {"three": "three", "urdf-loader": "urdf-loader"}
#: Files that must exist for the page to work (checked at start-up).
REQUIRED = (
    "index.html",
    "viewer.js",
    "node_modules/three/build/three.module.js",
    "node_modules/urdf-loader/src/URDFLoader.js",
)
#: The streamed joint-state topics: canonical name (also the JSON ``topic`` field).
TOPICS = ("/sim/joint_states", "/measured/joint_states")
#: The base poses: canonical name -> message type (the prediction's, the robot's).
POSE_TOPICS: dict[str, type[Odometry] | type[PoseStamped]] = {
    ODOM_TOPIC: Odometry,
    POSE_TOPIC: PoseStamped,
}
HOST = "127.0.0.1"
INSTALL_HINT = "run `make web` (or `npm ci --prefix snake_viz/web`)"

# ------------------------------------------------------------------ websockets 10.4 .. 17.4
# The one place where websockets versions differ. 13.0 added the asyncio implementation, used
# from there on; 10.4 - 12.x (10.4: Debian 12's, Ubuntu 24.04's) have only the legacy one,
# deprecated in 14.0 (a DeprecationWarning on import) and to be removed by 2030. serve(),
# broadcast() and the connections behave alike in both; only the HTTP hook's signature differs.
# mypy checks the current implementation; test_web_viewer.py runs the server on 10.4 too.

#: An HTTP response: status, headers, body.
HttpReply = tuple[http.HTTPStatus, list[tuple[str, str]], bytes]
#: Answers the HTTP request for a path (query included) and its ``Origin`` header (None:
#: none): a response, or None for a WebSocket.
HttpHandler = Callable[[str, str | None], HttpReply | None]
#: The first websockets version with the asyncio implementation (``websockets.asyncio``).
ASYNCIO_SINCE = 13
LEGACY = int(websockets_version.split(".")[0]) < ASYNCIO_SINCE

if TYPE_CHECKING or not LEGACY:
    from websockets.asyncio.server import Server, ServerConnection, broadcast, serve
    from websockets.datastructures import Headers
    from websockets.http11 import Request, Response

    def process_request(
        respond: HttpHandler,
    ) -> Callable[[ServerConnection, Request], Response | None]:
        """``respond`` as serve()'s ``process_request`` hook."""

        def hook(_: ServerConnection, request: Request) -> Response | None:
            reply = respond(request.path, request.headers.get("Origin"))
            if reply is None:
                return None
            status, headers, body = reply
            return Response(status.value, status.phrase, Headers(headers), body)

        return hook

else:
    from websockets.legacy.protocol import broadcast
    from websockets.legacy.server import serve

    def process_request(
        respond: HttpHandler,
    ) -> Callable[[str, object], Awaitable[HttpReply | None]]:
        """``respond`` as the legacy serve()'s ``process_request`` hook (a coroutine)."""

        async def hook(path: str, headers: Any) -> HttpReply | None:
            return respond(path, headers.get("Origin"))

        return hook


def loopback_origin(origin: str | None) -> bool:
    """Whether a WebSocket with this ``Origin`` header may read the view: none (a client that
    is not a browser's page) or an http(s) page on a loopback address of this host."""
    if origin is None:
        return True
    try:
        parts = urllib.parse.urlsplit(origin)
        host = parts.hostname
        parts.port  # noqa: B018 (raises for a port that is not a number)
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class WebAssetsError(VizError, RuntimeError):
    """The page's files or its vendored JavaScript packages are missing."""


def check_assets(root: Path = WEB_DIR) -> Path:
    """Return ``root`` if it holds the page and the vendored modules.

    Raises:
        WebAssetsError: naming the first missing file and the command that installs it.
    """
    for name in REQUIRED:
        if not (root / name).is_file():
            raise WebAssetsError(
                f"{root / name} is missing (three.js, urdf-loader for the web view): "
                + INSTALL_HINT
            )
    return root


def state_message(topic: str, msg: JointState) -> str | None:
    """The JSON text sent for one JointState, or None if it cannot be drawn.

    Args:
        topic: canonical topic name.
        msg: the message; its positions [rad] must be finite and match the names.
    """
    names, positions = list(msg.name), [float(x) for x in msg.position]
    if len(names) != len(positions) or not all(math.isfinite(x) for x in positions):
        return None
    stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
    return json.dumps({"topic": topic, "stamp": stamp, "name": names, "position": positions})


def deflection_message(topic: str, bends: LinkDeflections, msg: JointState) -> str | None:
    """The JSON text sent for one ``link_deflections`` message: each elastic link's bent
    centreline (F119), or None if the message is not this robot's elastic coordinates or
    not finite.

    Args:
        topic: canonical topic name.
        bends: the robot's elastic links.
        msg: the elastic coordinates by name [m or rad].
    """
    values = [float(x) for x in msg.position]
    if list(msg.name) != list(bends.names) or len(values) != len(bends.names):
        return None
    if not all(math.isfinite(x) for x in values):
        return None
    lines = bends.centrelines(np.array(values))
    stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
    links = {name: line.tolist() for name, line in zip(bends.links, lines, strict=True)}
    return json.dumps({"topic": topic, "stamp": stamp, "links": links})


def pose_message(topic: str, msg: Odometry | PoseStamped) -> str | None:
    """The JSON text sent for one base pose (an Odometry's or a PoseStamped's), or None if it
    cannot be drawn.

    Args:
        topic: canonical topic name.
        msg: the message; its position [m] and orientation must be finite, the orientation a
            unit quaternion to ``QUATERNION_TOLERANCE`` (sent normalised).
    """
    pose = msg.pose.pose if isinstance(msg, Odometry) else msg.pose
    p, o = pose.position, pose.orientation
    position = [float(p.x), float(p.y), float(p.z)]
    orientation = [float(o.x), float(o.y), float(o.z), float(o.w)]
    if not all(math.isfinite(x) for x in position + orientation):
        return None
    norm = math.sqrt(sum(x * x for x in orientation))
    if not abs(norm - 1.0) <= QUATERNION_TOLERANCE:
        return None
    stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
    return json.dumps(
        {
            "topic": topic,
            "stamp": stamp,
            "position": position,
            "orientation": [x / norm for x in orientation],
        }
    )


def http_reply(status: http.HTTPStatus, body: bytes, content_type: str) -> HttpReply:
    """An uncached HTTP response that closes the connection."""
    headers = [
        ("Date", email.utils.formatdate(usegmt=True)),
        ("Connection", "close"),
        ("Content-Length", str(len(body))),
        ("Content-Type", content_type),
        ("Cache-Control", "no-cache"),
    ]
    return status, headers, body


@dataclass
class Asset:
    """A file's bytes and content type, read once."""

    body: bytes
    content_type: str


class WebServer:
    """HTTP files and the state WebSocket on one port, in an asyncio loop thread."""

    def __init__(
        self,
        root: Path,
        urdf: str,
        port: int,
        rate: float,
        refused: Callable[[str], None] | None = None,
    ) -> None:
        """Serve ``root``'s page and ``urdf`` on ``port`` (0: a free one), each topic at most
        ``rate`` [Hz]; ``refused`` is told (in the loop thread) of each WebSocket refused for
        its ``Origin``, in one line."""
        self.root = root
        self.refused = refused
        self.period = 1.0 / rate
        self.assets: dict[str, Asset] = {
            "/robot.urdf": Asset(urdf.encode(), "application/xml; charset=utf-8")
        }
        self.lock = threading.Lock()
        self.pending: dict[str, str] = {}  # topic -> newest unsent message
        self.latest: dict[str, str] = {}  # topic -> newest message (for new clients)
        self.clients: set[ServerConnection] = set()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="web_viewer", daemon=True)
        self.thread.start()
        self.server: Server | None = None
        self.sender: asyncio.Task[None] | None = None
        try:
            future = asyncio.run_coroutine_threadsafe(self._start(port), self.loop)
            self.port: int = future.result(timeout=10.0)
        except BaseException:
            self.close()
            raise

    @property
    def url(self) -> str:
        """The page's address."""
        return f"http://{HOST}:{self.port}/"

    def publish(self, topic: str, text: str) -> None:
        """Queue ``text`` as the newest message of ``topic`` (any thread)."""
        with self.lock:
            self.pending[topic] = text
            self.latest[topic] = text

    def close(self) -> None:
        """Close the connections and the server, then stop the loop thread."""
        if self.loop.is_running():
            future = asyncio.run_coroutine_threadsafe(self._stop(), self.loop)
            with contextlib.suppress(concurrent.futures.TimeoutError, RuntimeError):
                future.result(timeout=5.0)
            self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5.0)
        if not self.thread.is_alive():
            self.loop.close()

    # ------------------------------------------------------------------ loop thread
    async def _start(self, port: int) -> int:
        self.server = await serve(
            self._client,
            HOST,
            port,
            process_request=process_request(self._http),
            server_header=None,
        )
        self.sender = asyncio.create_task(self._send_loop())
        return int(self.server.sockets[0].getsockname()[1])

    async def _stop(self) -> None:
        if self.sender is not None:
            self.sender.cancel()
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def _send_loop(self) -> None:
        while True:
            await asyncio.sleep(self.period)
            with self.lock:
                pending, self.pending = self.pending, {}
            for text in pending.values():
                broadcast(self.clients, text)

    async def _client(self, connection: ServerConnection) -> None:
        with self.lock:
            latest = list(self.latest.values())
        for text in latest:
            await connection.send(text)
        self.clients.add(connection)
        try:
            await connection.wait_closed()
        finally:
            self.clients.discard(connection)

    def _http(self, path: str, origin: str | None) -> HttpReply | None:
        """Serve a file, or return None to let ``/ws`` become a WebSocket (only for a
        :func:`loopback_origin`; 403 otherwise)."""
        path = path.split("?", 1)[0]
        if path == "/ws":
            if loopback_origin(origin):
                return None
            line = f"refused a WebSocket from the page {origin!r}: only pages on this host"
            if self.refused is not None:
                self.refused(line)
            return http_reply(http.HTTPStatus.FORBIDDEN, f"{line}\n".encode(), "text/plain")
        asset = self._asset(path)
        if asset is None:
            text = f"not found: {path}\n".encode()
            return http_reply(http.HTTPStatus.NOT_FOUND, text, "text/plain; charset=utf-8")
        return http_reply(http.HTTPStatus.OK, asset.body, asset.content_type)

    def _asset(self, path: str) -> Asset | None:
        """The file at ``path``: the page, or a vendored ``.js`` module; None otherwise."""
        if path in self.assets:
            return self.assets[path]
        if path in ("/", "/index.html"):
            file = self.root / "index.html"
        elif path == "/viewer.js":
            file = self.root / "viewer.js"
        else:
            parts = path.split("/")  # "", "vendor", package, rest...
            if len(parts) < 4 or parts[1] != "vendor" or parts[2] not in VENDOR:
                return None
            base = (self.root / "node_modules" / VENDOR[parts[2]]).resolve()
            file = base.joinpath(*parts[3:]).resolve()
            if not file.is_relative_to(base) or file.suffix != ".js":
                return None
        if not file.is_file():
            return None
        kind = "text/javascript" if file.suffix == ".js" else mimetypes.guess_type(file.name)[0]
        asset = Asset(file.read_bytes(), f"{kind or 'application/octet-stream'}; charset=utf-8")
        self.assets[path] = asset
        return asset


class WebViewerNode(Node):
    """The web view's bridge (see module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("web_viewer_node", **kwargs)
        config = declare_robot_config(self)
        port = declare_int(
            self, "port", DEFAULT_PORT, 0, 65535, "http/WebSocket port on 127.0.0.1; 0: free"
        )
        rate = declare_float(self, "rate", 30.0, 1.0, 200.0, "messages per second per topic [Hz]")
        root = check_assets()
        robot = load_robot(config)
        model = robot.model
        arm = elastic_arm(robot)  # None: every link rigid
        self.bends = None if arm is None else LinkDeflections(model, arm)
        self.monitor = InputMonitor(self)
        self.server = WebServer(
            root, to_urdf(model), port, rate, lambda line: self.monitor.reject("/ws (origin)", line)
        )
        qos = QoSProfile(depth=5, reliability=ReliabilityPolicy.BEST_EFFORT)  # any publisher
        for topic in TOPICS:
            self.create_subscription(
                JointState, topic, lambda msg, t=topic: self.on_state(t, msg), qos
            )
        for topic, kind in POSE_TOPICS.items():
            self.create_subscription(kind, topic, lambda msg, t=topic: self.on_pose(t, msg), qos)
        streamed = (*TOPICS, *POSE_TOPICS)
        if self.bends is not None:
            self.create_subscription(JointState, DEFLECTIONS_TOPIC, self.on_deflections, qos)
            streamed = (*streamed, DEFLECTIONS_TOPIC)
        self.get_logger().info(
            f"web view of {model.name} ({model.n_joints} joints): {self.url} "
            f"(streaming {', '.join(streamed)} at {rate:g} Hz)"
        )

    @property
    def url(self) -> str:
        """The page's address."""
        return self.server.url

    def on_state(self, topic: str, msg: JointState) -> None:
        """Forward a drawable message; reject the others (:class:`InputMonitor`)."""
        problem = "names and positions differ in length or are not finite"
        self._forward(topic, state_message(topic, msg), problem)

    def on_deflections(self, msg: JointState) -> None:
        """Forward the elastic links' centrelines; reject what is not this robot's."""
        assert self.bends is not None
        text = deflection_message(DEFLECTIONS_TOPIC, self.bends, msg)
        problem = "not this robot's elastic coordinates, finite"
        self._forward(DEFLECTIONS_TOPIC, text, problem)

    def on_pose(self, topic: str, msg: Odometry | PoseStamped) -> None:
        """Forward a drawable base pose; reject the others (:class:`InputMonitor`)."""
        problem = "pose not finite or orientation not a unit quaternion"
        self._forward(topic, pose_message(topic, msg), problem)

    def _forward(self, topic: str, text: str | None, problem: str) -> None:
        """Send ``text`` (a message of ``topic`` made drawable) to the pages and count it
        accepted, or count it rejected for ``problem`` when it is None."""
        if text is None:
            self.monitor.reject(topic, problem)
            return
        self.monitor.accept(topic)
        self.server.publish(topic, text)

    def destroy_node(self) -> None:
        """Close the server, then destroy the node."""
        if hasattr(self, "server"):
            self.server.close()
        super().destroy_node()


def main() -> None:
    """Entry point of the ``web_viewer_node`` executable."""
    sys.exit(run(WebViewerNode, "web_viewer_node"))


if __name__ == "__main__":
    main()
