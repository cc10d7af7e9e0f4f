"""The WebGL view in headless Chromium, driven over the DevTools protocol.

web_viewer_node runs as a real process on a private ROS_DOMAIN_ID; this process publishes
both joint-state topics (a travelling wave, measured = sim - OFFSET) and the base poses
(/sim/odom, /measured/pose) on demand, and drives the page. References trusted: the known
offset (the readout must show measured - simulated = -OFFSET in degrees, the sign of
compare_node), the centres of mass of snake_dynamics' link_poses (the page computes its own
from the URDF's inertials), the poses sent, mapped by hand from ROS's z-up world to three.js's
y-up one (ROS_TO_THREE), the node's own counts on /diagnostics, pixels of the canvas (a still
scene renders the same twice, a moving one does not; each robot alone changes pixels against
an empty scene), the browser's own console.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import importlib.metadata
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

#: Every test here needs ROS 2 installed: the module imports rclpy and the nodes.
pytestmark = [pytest.mark.ros, pytest.mark.parallel]
rclpy = pytest.importorskip("rclpy")
Image = pytest.importorskip("PIL.Image")
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.signals import SignalHandlerOptions  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from support.waits import wait_for  # noqa: E402
from websockets.exceptions import InvalidHandshake  # noqa: E402
from websockets.sync.client import ClientConnection, connect  # noqa: E402

from snake_dynamics import SnakeModel  # noqa: E402
from snake_ros.paths import robot_config  # noqa: E402
from snake_viz.compare import trace_points  # noqa: E402
from snake_viz.web_viewer import (  # noqa: E402
    WebAssetsError,
    WebServer,
    check_assets,
    loopback_origin,
    pose_message,
    state_message,
)

ROOT = Path(__file__).resolve().parents[2]
JOINTS = [f"joint_{k}" for k in range(1, 9)]  # config/robot.yaml
OFFSET = 0.05  # measured = sim - OFFSET [rad]
#: ROS world (z up) -> three.js world (y up, the grid's plane y = 0 is ROS's z = 0).
ROS_TO_THREE = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])
#: The node's input account on /diagnostics (InputMonitor).
VIEWER_STATUS = "/web_viewer_node: input"
CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)
CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--use-angle=swiftshader",  # software WebGL
    "--enable-unsafe-swiftshader",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1000,700",
    "--remote-debugging-port=0",
]

try:
    check_assets()
    MISSING = ""
except WebAssetsError as exc:
    MISSING = str(exc)


def skip_without_browser() -> None:
    """The browser tests need Chromium and the vendored modules (not the server tests)."""
    if CHROMIUM is None:
        pytest.skip("no chromium (apt install chromium)")
    if MISSING:
        pytest.skip(MISSING)


class Gait:
    """Publishes /sim/joint_states (a travelling wave) and /measured/joint_states at 50 Hz.

    While ``moving`` is clear, time stands still: the same angles keep being published.
    """

    def __init__(self) -> None:
        self.context = Context()
        rclpy.init(
            context=self.context,
            domain_id=int(os.environ["ROS_DOMAIN_ID"]),
            signal_handler_options=SignalHandlerOptions.NO,
        )
        self.node = Node("test_web_gait", context=self.context)
        self.sim = self.node.create_publisher(JointState, "/sim/joint_states", 10)
        self.measured = self.node.create_publisher(JointState, "/measured/joint_states", 10)
        self.odom = self.node.create_publisher(Odometry, "/sim/odom", 10)
        self.pose = self.node.create_publisher(PoseStamped, "/measured/pose", 10)
        self.lock = threading.Lock()
        self.diagnostics: dict[str, dict[str, str]] = {}  # status name -> its values
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self.on_diagnostics, 10)
        self.moving = threading.Event()
        self.t = 0.0
        self.node.create_timer(0.02, self.tick)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def angles(self) -> list[float]:
        """The simulated joint angles now [rad]; the measured ones are OFFSET less."""
        return [0.6 * math.sin(2 * math.pi * 0.5 * self.t - 0.9 * k) for k in range(len(JOINTS))]

    def tick(self) -> None:
        if self.moving.is_set():
            self.t += 0.02
        q = self.angles()
        stamp = self.node.get_clock().now().to_msg()
        for pub, values in ((self.sim, q), (self.measured, [x - OFFSET for x in q])):
            msg = JointState(name=JOINTS, position=values)
            msg.header.stamp = stamp
            pub.publish(msg)

    def on_diagnostics(self, msg: DiagnosticArray) -> None:
        with self.lock:
            for status in msg.status:
                self.diagnostics[status.name] = {kv.key: kv.value for kv in status.values}

    def count(self, key: str) -> int:
        """The viewer node's latest published count ``key`` (0 before any)."""
        with self.lock:
            return int(self.diagnostics.get(VIEWER_STATUS, {}).get(key, 0))

    def close(self) -> None:
        self.executor.shutdown()
        self.thread.join(timeout=5)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


class Page:
    """One Chromium tab over the DevTools protocol; collects console errors as they come."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.next_id = 0
        self.errors: list[str] = []
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable")

    def _event(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            args = [str(a.get("value", a.get("description", ""))) for a in params["args"]]
            self.errors.append("console: " + " ".join(args))
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description", details.get("text"))
            self.errors.append(f"exception: {text}")
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            entry = params["entry"]
            self.errors.append(f"log: {entry['text']} {entry.get('url', '')}")

    def call(self, method: str, timeout: float = 15.0, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(self.ws.recv(timeout=max(deadline - time.monotonic(), 0.01)))
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))
            self._event(message)

    def evaluate(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def next_frames(self) -> None:
        """Wait until the page has rendered two more frames."""
        self.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")

    def canvas(self) -> np.ndarray:
        """The canvas's pixels now, RGB, shape (h, w, 3)."""
        rect = self.evaluate(
            "(() => { const r = document.querySelector('#view canvas').getBoundingClientRect();"
            " return {x: r.x, y: r.y, width: r.width, height: r.height, scale: 1}; })()"
        )
        shot = self.call("Page.captureScreenshot", format="png", clip=rect)
        image = Image.open(io.BytesIO(base64.b64decode(shot["data"]))).convert("RGB")
        return np.asarray(image, dtype=np.int16)


def shown(page: Page, gait: Gait) -> None:
    """Wait until the page has drawn messages (of both robots) sent after now."""
    now = gait.node.get_clock().now().nanoseconds * 1e-9
    wait_for(
        lambda: min(page.evaluate("Object.values(window.snakeViewer.stamps)")) > now,
        30.0,
        "messages sent after now on the page",
    )
    page.next_frames()


def settle(page: Page, gait: Gait) -> None:
    """Stop the gait and wait until the page has drawn a message sent after the stop."""
    gait.moving.clear()
    shown(page, gait)


def changed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Mask of the pixels that differ by more than a little (antialiasing noise)."""
    return np.asarray(np.abs(a - b).max(axis=2) > 8)


@pytest.fixture(scope="module")
def gait() -> Iterator[Gait]:
    g = Gait()
    yield g
    g.close()


@pytest.fixture(scope="module")
def viewer_url(
    gait: Gait, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[str]:
    """web_viewer_node of the robot config the test module names as ``VIEWER_ROBOT``
    (default: robot, whose joints :class:`Gait` moves)."""
    skip_without_browser()
    robot = getattr(request.module, "VIEWER_ROBOT", "robot")
    command = [sys.executable, "-m", "snake_viz.web_viewer", "--ros-args", "-p", "port:=0"]
    tmp = tmp_path_factory.mktemp("web")
    log = tmp / "web_viewer.log"
    env = {
        **os.environ,
        "ROS_LOG_DIR": str(tmp / "ros_log"),
        "AMENT_PREFIX_PATH": sys.prefix,
        "PYTHONPATH": str(ROOT),
    }
    with log.open("w") as sink:
        proc = subprocess.Popen(
            [*command, "-p", f"robot_config:={robot}"],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:

        def url() -> str | None:
            assert proc.poll() is None, f"web_viewer_node exited: {log.read_text()}"
            words = log.read_text().split()
            return next((w for w in words if w.startswith("http://127.0.0.1:")), None)

        yield str(wait_for(url, 20.0, "the viewer's URL in its log"))
    finally:
        proc.terminate()
        try:
            assert proc.wait(timeout=10) == 0, log.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=5)


@pytest.fixture(scope="module")
def page(viewer_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    assert CHROMIUM is not None
    profile = tmp_path_factory.mktemp("chromium")
    with (profile / "chromium.log").open("w") as sink:
        browser = subprocess.Popen(
            [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        port_file = profile / "DevToolsActivePort"
        wait_for(lambda: port_file.is_file() and port_file.read_text().strip(), 20.0, "Chromium")
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as response:
            targets = json.load(response)
        ws_url = next(t for t in targets if t["type"] == "page")["webSocketDebuggerUrl"]
        with connect(ws_url, max_size=None, open_timeout=10) as ws:
            tab = Page(ws)
            tab.call("Page.navigate", url=viewer_url)
            ready = (
                "(() => { const v = window.snakeViewer; return !!v && v.robots === 2"
                " && v.messages.sim > 0 && v.messages.measured > 0; })()"
            )
            wait_for(lambda: tab.evaluate(ready), 20.0, "both robots and messages")
            yield tab
    finally:
        browser.terminate()
        try:
            browser.wait(timeout=10)
        except subprocess.TimeoutExpired:
            browser.kill()
            browser.wait(timeout=5)


# ------------------------------------------------------------------ the server alone
def web_root(tmp_path: Path) -> Path:
    """A page, a module and a vendored package's files in ``tmp_path/web``; a secret beside."""
    root = tmp_path / "web"
    for name in ("index.html", "viewer.js", "node_modules/three/build/three.module.js"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"// {name}")
    (root / "node_modules/three/package.json").write_text("{}")
    (tmp_path / "secret.js").write_text("secret")
    return root


@pytest.fixture
def server(tmp_path: Path) -> Iterator[WebServer]:
    s = WebServer(web_root(tmp_path), "<robot/>", 0, rate=10.0)
    yield s
    s.close()
    assert not s.thread.is_alive()


def get(port: int, path: str) -> tuple[int, str, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)  # sent as is: no client-side normalisation of ".."
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type", ""), response.read()
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("names", "positions"),
    [
        (["a", "b"], [0.1]),  # fewer positions than names
        (["a"], [0.1, 0.2]),  # more
        (["a", "b"], [0.1, math.nan]),
        (["a"], [math.inf]),
        (["a"], [-math.inf]),
    ],
)
def test_what_cannot_be_drawn_is_rejected_not_sent(
    names: list[str], positions: list[float]
) -> None:
    """web_viewer_node's input check (issue 11: no message kills a node): mismatched lengths
    and non-finite angles give None (the node counts and warns), a drawable state its JSON."""
    msg = JointState(name=names, position=positions)
    assert state_message("/sim/joint_states", msg) is None
    good = JointState(name=["a", "b"], position=[0.1, -1e300])  # huge but finite: drawable
    good.header.stamp.sec, good.header.stamp.nanosec = 3, 500_000_000
    assert json.loads(state_message("/sim/joint_states", good) or "null") == {
        "topic": "/sim/joint_states",
        "stamp": 3.5,
        "name": ["a", "b"],
        "position": [0.1, -1e300],
    }


def odometry(
    position: list[float], orientation: list[float], stamp: tuple[int, int] = (0, 0)
) -> Odometry:
    """An Odometry with the pose (position [m], quaternion x, y, z, w) and header stamp."""
    msg = Odometry()
    msg.header.frame_id, msg.child_frame_id = "world", "sim/base_link"
    msg.header.stamp.sec, msg.header.stamp.nanosec = stamp
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    p.x, p.y, p.z = position
    o.x, o.y, o.z, o.w = orientation
    return msg


def pose_stamped(
    position: list[float], orientation: list[float], stamp: tuple[int, int] = (0, 0)
) -> PoseStamped:
    """A PoseStamped (a mocap driver's) with the pose of :func:`odometry`'s message."""
    odom = odometry(position, orientation, stamp)
    return PoseStamped(header=odom.header, pose=odom.pose.pose)


#: Odometry poses that cannot be drawn: non-finite, or not a unit quaternion (|q| - 1 > 1e-3).
BAD_POSES = [
    ([math.nan, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]),
    ([0.0, math.inf, 0.0], [0.0, 0.0, 0.0, 1.0]),
    ([0.0, 0.0, 0.0], [0.0, 0.0, -math.inf, 1.0]),
    ([0.0, 0.0, 0.0], [0.0, math.nan, 0.0, 1.0]),
    ([0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]),
    ([0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 2.0]),
    ([0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.002]),
]


@pytest.mark.parametrize(("position", "orientation"), BAD_POSES)
def test_odom_that_cannot_be_drawn_is_rejected_not_sent(
    position: list[float], orientation: list[float]
) -> None:
    """The odom input check: non-finite poses and quaternions off unit length by more than the
    tolerance give None (counted and warned by the node); a drawable pose its JSON, the
    quaternion normalised (|q| = 1 + 5e-4 is within the tolerance)."""
    assert pose_message("/sim/odom", odometry(position, orientation)) is None
    assert pose_message("/measured/pose", pose_stamped(position, orientation)) is None
    q = [0.1, -0.2, 0.3, 0.9]
    q = [x * (1 + 5e-4) / math.sqrt(sum(y * y for y in q)) for x in q]
    for topic, make in (("/sim/odom", odometry), ("/measured/pose", pose_stamped)):
        good = pose_message(topic, make([1.5, -2.0, 1e3], q, (7, 250_000_000)))
        sent = json.loads(good or "null")
        assert sent.pop("orientation") == pytest.approx([x / (1 + 5e-4) for x in q], abs=1e-15)
        assert sent == {"topic": topic, "stamp": 7.25, "position": [1.5, -2.0, 1e3]}


def test_http_serves_the_page_the_urdf_and_vendored_modules_only(server: WebServer) -> None:
    assert get(server.port, "/")[::2] == (200, b"// index.html")
    assert get(server.port, "/robot.urdf") == (200, "application/xml; charset=utf-8", b"<robot/>")
    status, kind, body = get(server.port, "/vendor/three/build/three.module.js")
    assert (status, kind.split(";")[0], body) == (
        200,
        "text/javascript",
        b"// node_modules/three/build/three.module.js",
    )
    for path in (
        "/vendor/three/package.json",  # not a module
        "/vendor/three/../../../secret.js",  # outside the package
        "/vendor/other/x.js",  # not vendored
        "/node_modules/three/build/three.module.js",
        "/nothing",
    ):
        assert get(server.port, path)[0] == 404, path


def test_websocket_sends_only_the_newest_message_of_each_period(server: WebServer) -> None:
    """Bursts of 20 messages, far quicker than the 10 Hz stream: each burst reaches the client
    as its newest message (and at most a few before it, never an older burst's), in order."""
    url = f"ws://127.0.0.1:{server.port}/ws"
    received: list[list[int]] = []
    with connect(url, open_timeout=5) as ws:
        wait_for(lambda: len(server.clients) == 1, 10.0, "the client to be registered")
        for burst in range(5):
            last = 20 * (burst + 1)
            for n in range(last - 19, last + 1):
                server.publish("/sim/joint_states", json.dumps({"n": n}))
            got: list[int] = []
            while not got or got[-1] != last:
                got.append(json.loads(ws.recv(timeout=10))["n"])
            received.append(got)
        with contextlib.suppress(TimeoutError):  # nothing more: the newest was sent once
            extra = ws.recv(timeout=3 * server.period)
            pytest.fail(f"sent again: {extra}")
    for burst, got in enumerate(received):
        assert got == sorted(set(got)), got
        assert all(20 * burst < n <= 20 * (burst + 1) for n in got), (burst, got)
        assert len(got) < 20, f"burst {burst}: nothing dropped: {got}"
    with connect(url, open_timeout=5) as late:  # a new client starts from the newest
        assert json.loads(late.recv(timeout=10))["n"] == 100


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        (None, True),  # no page: a program on this host, as the tests here
        ("http://127.0.0.1:8765", True),
        ("http://localhost:8080", True),  # the view through ssh -L 8080:localhost:8765
        ("http://[::1]:8765", True),
        ("http://127.0.0.2", True),
        ("https://evil.example", False),
        ("http://127.0.0.1.evil.example:8765", False),  # a look-alike name
        ("http://192.168.1.20:8765", False),  # another host's page
        ("null", False),  # a file:// page or a sandboxed frame
        ("file://", False),
        ("http://127.0.0.1:port", False),
        ("", False),
    ],
)
def test_only_pages_on_this_host_may_open_the_websocket(origin: str | None, allowed: bool) -> None:
    assert loopback_origin(origin) is allowed


def test_a_websocket_from_a_foreign_page_is_refused_and_counted(tmp_path: Path) -> None:
    """The campaign's page on another site read the view; now its upgrade gets 403 and one
    line to ``refused`` (the node counts it); the view's own page and a page-less client are
    served. Reference: the handshake's outcome in this process's websockets client."""
    refused: list[str] = []
    server = WebServer(web_root(tmp_path), "<robot/>", 0, rate=10.0, refused=refused.append)
    try:
        url = f"ws://127.0.0.1:{server.port}/ws"
        server.publish("/sim/joint_states", json.dumps({"n": 1}))
        for origin in (f"http://127.0.0.1:{server.port}", "http://localhost:8080", None):
            with connect(url, open_timeout=5, origin=origin) as ws:  # type: ignore[arg-type]
                assert json.loads(ws.recv(timeout=10)) == {"n": 1}
        for origin in ("https://evil.example", "null"):
            with pytest.raises(InvalidHandshake, match="403"):
                connect(url, open_timeout=5, origin=origin)  # type: ignore[arg-type]
        assert refused == [
            "refused a WebSocket from the page 'https://evil.example': only pages on this host",
            "refused a WebSocket from the page 'null': only pages on this host",
        ]
    finally:
        server.close()


#: The oldest websockets the viewer supports: python3-websockets of Debian 12 and Ubuntu 24.04
#: (rosdep's), the legacy implementation; installed into build/ by ``oldest_websockets``.
OLDEST_WEBSOCKETS = "10.4"
#: A WebServer for the tree in argv[1] that prints the websockets version and its port, then
#: publishes each line of stdin on /sim/joint_states and closes at end of input.
SERVE = """
import sys, websockets
from pathlib import Path
from snake_viz.web_viewer import WebServer
server = WebServer(Path(sys.argv[1]), "<robot/>", 0, rate=10.0)
print("websockets", websockets.__version__, "port", server.port, flush=True)
for line in sys.stdin:
    server.publish("/sim/joint_states", line.strip())
server.close()
assert not server.thread.is_alive()
"""


@pytest.fixture(scope="module")
def oldest_websockets() -> Path:
    """A folder holding websockets OLDEST_WEBSOCKETS alone (installed once, kept in build/).

    Skips (a failure on CI) when pip cannot install it.
    """
    target = ROOT / "build" / f"websockets-{OLDEST_WEBSOCKETS}"
    if not (target / "websockets").is_dir():
        target.parent.mkdir(exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f"{target.name}-", dir=target.parent))
        pip = subprocess.run(
            [
                *(sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"),
                *("--no-deps", "--no-warn-conflicts", "--target", str(staging)),
                f"websockets=={OLDEST_WEBSOCKETS}",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if pip.returncode == 0:
            with contextlib.suppress(OSError):  # a concurrent test run installed it first
                staging.rename(target)
        shutil.rmtree(staging, ignore_errors=True)
        if pip.returncode != 0:
            pytest.skip(f"pip cannot install websockets=={OLDEST_WEBSOCKETS}: {pip.stderr}")
    return target


# ros: the server's process imports snake_viz.web_viewer, hence rclpy; the oldest websockets
# is pip-installed into build/ on its first run: slow
@pytest.mark.ros
@pytest.mark.parametrize(
    "oldest", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["installed", "oldest"]
)
def test_server_works_with_the_installed_and_the_oldest_websockets(
    oldest: bool, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The server in a subprocess on the installed websockets or on OLDEST_WEBSOCKETS first on
    PYTHONPATH (the legacy implementation), DeprecationWarnings raised as errors; the client is
    this process's websockets. References: the version the subprocess reports, the files' bytes,
    the message published there and received here."""
    version = OLDEST_WEBSOCKETS if oldest else importlib.metadata.version("websockets")
    folders = [request.getfixturevalue("oldest_websockets")] if oldest else []
    command = [sys.executable, "-W", "error::DeprecationWarning", "-c", SERVE]
    log = tmp_path / "server.log"
    with log.open("w") as sink:
        proc = subprocess.Popen(
            [*command, str(web_root(tmp_path))],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, [*folders, ROOT]))},
            stdin=subprocess.PIPE,
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
        )
    assert proc.stdin is not None
    try:

        def banner() -> list[str] | None:
            assert proc.poll() is None, f"the server exited: {log.read_text()}"
            words = log.read_text().split()
            return words[:4] if len(words) >= 4 else None

        words = wait_for(banner, 20.0, "the server's version and port")
        assert words[:2] == ["websockets", version], log.read_text()
        port = int(words[3])
        assert get(port, "/")[::2] == (200, b"// index.html")
        assert get(port, "/robot.urdf") == (200, "application/xml; charset=utf-8", b"<robot/>")
        assert get(port, "/nothing")[0] == 404
        with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=5) as ws:
            for n in (1, 2):  # 1: on connecting or broadcast, 2: broadcast (registered by then)
                proc.stdin.write(json.dumps({"n": n}) + "\n")
                proc.stdin.flush()
                assert json.loads(ws.recv(timeout=10)) == {"n": n}
        with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=5) as late:
            assert json.loads(late.recv(timeout=10)) == {"n": 2}  # the newest, to a new client
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)


# ------------------------------------------------------------------ the page in Chromium
@pytest.mark.ros
@pytest.mark.browser
def test_both_robots_are_built_from_the_urdf(page: Page) -> None:
    state = page.evaluate("window.snakeViewer")
    assert state["robots"] == 2
    assert state["joints"] == len(JOINTS)
    assert state["meshes"] == 2 * (len(JOINTS) + 1)  # one cylinder per link, twice
    assert state["unknownJoints"] == 0
    assert state["connected"]


@pytest.mark.ros
@pytest.mark.browser
def test_screenshots_differ_while_the_gait_runs_and_not_when_it_stops(
    page: Page, gait: Gait
) -> None:
    gait.moving.set()
    shown(page, gait)
    first = page.canvas()
    start = gait.t
    wait_for(lambda: gait.t >= start + 0.5, 30.0, "0.5 s of gait time")
    shown(page, gait)
    second = page.canvas()
    if os.environ.get("SNAKE_WEB_SCREENSHOT"):  # for a person: what the test sees
        shot = page.call("Page.captureScreenshot", format="png")
        Path(os.environ["SNAKE_WEB_SCREENSHOT"]).write_bytes(base64.b64decode(shot["data"]))
    moved = changed(first, second).mean()
    assert moved > 0.002, f"only {moved:.4%} of the canvas changed in 0.5 s of gait"

    settle(page, gait)  # the same angles keep coming: only motion may change pixels
    still = page.canvas()
    shown(page, gait)  # newer messages (with the same angles) drawn
    assert changed(still, page.canvas()).mean() == 0.0


@pytest.mark.ros
@pytest.mark.browser
def test_each_robot_draws_and_the_measured_one_is_a_ghost(page: Page, gait: Gait) -> None:
    settle(page, gait)
    shots = {}
    for name, sim, measured in (
        ("none", False, False),
        ("sim", True, False),
        ("measured", False, True),
    ):
        page.evaluate(f"snakeViewer.show('sim', {str(sim).lower()})")
        page.evaluate(f"snakeViewer.show('measured', {str(measured).lower()})")
        page.next_frames()
        shots[name] = page.canvas()
    page.evaluate("snakeViewer.show('sim', true); snakeViewer.show('measured', true)")
    for role in ("sim", "measured"):
        drawn = changed(shots[role], shots["none"])
        assert drawn.mean() > 0.005, f"the {role} robot covers {drawn.mean():.3%} of the canvas"
    ghost = shots["measured"][changed(shots["measured"], shots["none"])]
    red, _, blue = ghost.mean(axis=0)
    assert blue > red + 20, f"the ghost should be tinted blue, mean RGB {ghost.mean(axis=0)}"


@pytest.mark.ros
@pytest.mark.browser
def test_error_readout_is_measured_minus_simulated_in_degrees(page: Page, gait: Gait) -> None:
    """The sign of compare_node and /compare/error: measured = sim - OFFSET reads -OFFSET."""
    settle(page, gait)
    errors = page.evaluate("window.snakeViewer.errorDeg")
    assert sorted(errors) == sorted(JOINTS)
    for name in JOINTS:
        assert errors[name] == pytest.approx(-math.degrees(OFFSET), abs=1e-9), name
    cells = page.evaluate(
        "[...document.querySelectorAll('#errors tr')].map(r => r.children[3].textContent)"
    )
    assert cells == [f"{-math.degrees(OFFSET):.2f}"] * len(JOINTS)
    caption = page.evaluate(
        "document.querySelector('#errors').closest('table').caption.textContent"
    )
    assert "measured − simulated" in caption


@pytest.mark.ros
@pytest.mark.browser
def test_centres_of_mass_match_link_poses(page: Page, gait: Gait) -> None:
    """Each robot's centre of mass, which the page computes from the URDF's link poses and
    inertials, is trace_points' (snake_dynamics.link_poses, body frames at the CMs) at the
    angles sent. Both compose ~10 double-precision transforms of ~0.1 m: 1e-12 m."""
    settle(page, gait)
    model = SnakeModel.from_yaml(robot_config("robot"))
    q = np.array(gait.angles())
    com = page.evaluate("window.snakeViewer.com")
    for role, angles in (("sim", q), ("measured", q - OFFSET)):
        np.testing.assert_allclose(com[role], trace_points(model, angles)[1], rtol=0, atol=1e-12)
    assert np.linalg.norm(np.subtract(com["sim"], com["measured"])) > 1e-3  # told apart


def base_pose(page: Page, role: str = "sim") -> tuple[np.ndarray, Rotation]:
    """A robot's root in three.js's world, as the page reads it back."""
    base = page.evaluate(f"snakeViewer.base('{role}')")
    return np.array(base["position"]), Rotation.from_quat(base["quaternion"])


def assert_base_at(page: Page, position: np.ndarray, rotation: Rotation, role: str = "sim") -> None:
    """A robot's root is at the ROS world pose, mapped to three.js, to 1e-6."""
    at, turned = base_pose(page, role)
    np.testing.assert_allclose(at, ROS_TO_THREE @ position, rtol=0, atol=1e-6)
    expected = ROS_TO_THREE @ rotation.as_matrix()
    np.testing.assert_allclose(turned.as_matrix(), expected, rtol=0, atol=1e-6)


@pytest.mark.ros
@pytest.mark.browser
def test_without_odom_the_sim_robot_stays_at_the_origin(page: Page, gait: Gait) -> None:
    """The fixed-tail robots (no poses yet): roots at the world's origin, unturned; no trails."""
    settle(page, gait)
    for role in ("sim", "measured"):
        assert page.evaluate(f"snakeViewer.poses.{role}.messages") == 0
        assert_base_at(page, np.zeros(3), Rotation.identity(), role)
        assert page.evaluate(f"snakeViewer.trail('{role}')") == []


#: The bound of the trail in the odom tests (?trail=...), and the poses sent: more than it.
TRAIL = 12
N_POSES = 20


def send_pose(
    page: Page, gait: Gait, position: np.ndarray, rotation: Rotation, role: str = "sim"
) -> float:
    """Publish the pose (stamped now; sim: /sim/odom, measured: /measured/pose) until the page
    has applied it; its stamp [s]."""
    now = gait.node.get_clock().now()
    make, publisher = (odometry, gait.odom) if role == "sim" else (pose_stamped, gait.pose)
    msg = make(list(position), list(rotation.as_quat()), now.seconds_nanoseconds())
    stamp = now.nanoseconds * 1e-9

    def applied() -> bool:
        publisher.publish(msg)  # again until seen: best-effort, and a period keeps the newest
        return bool(page.evaluate(f"snakeViewer.poses.{role}.stamp") >= stamp - 1e-6)

    wait_for(applied, 30.0, f"the {role} pose at {position} on the page")
    return stamp


@pytest.mark.ros
@pytest.mark.browser
def test_odom_places_the_sim_root_and_draws_a_bounded_trail(
    page: Page, gait: Gait, viewer_url: str
) -> None:
    """Poses on /sim/odom (ROS world: z up) put the sim robot's root there in three.js's y-up
    world (ROS_TO_THREE), one at a time; the trail keeps the last TRAIL base positions in the
    order sent; the camera's target follows the base (its offset to the base is kept)."""
    page.call("Page.navigate", url=f"{viewer_url}?trail={TRAIL}")
    ready = (
        "(() => { const v = window.snakeViewer; return !!v && v.robots === 2"
        " && v.messages.sim > 0 && v.messages.measured > 0; })()"
    )
    wait_for(lambda: page.evaluate(ready), 20.0, "the page reloaded with ?trail")
    assert page.evaluate("snakeViewer.trailLimit") == TRAIL
    rng = np.random.default_rng(239)
    # a path on and above the ground, steps of 2 - 5 cm (more than the trail's 0.5 mm step)
    steps = rng.uniform(0.02, 0.05, N_POSES)[:, None] * Rotation.random(N_POSES, rng).apply(
        [1.0, 0.0, 0.0]
    )
    positions = np.array([0.3, -0.7, 0.05]) + np.cumsum(steps, axis=0)
    rotations = Rotation.random(N_POSES, rng)
    offset = None
    for position, rotation in zip(positions, rotations, strict=True):
        stamp = send_pose(page, gait, position, rotation)
        odom = page.evaluate("snakeViewer.poses.sim")
        assert odom["stamp"] == pytest.approx(stamp, abs=1e-6)
        np.testing.assert_allclose(odom["position"], position, rtol=0, atol=1e-12)
        assert_base_at(page, position, rotation)
        at = base_pose(page)[0]
        target_offset = np.subtract(page.evaluate("snakeViewer.target()"), at)
        if offset is None:
            offset = target_offset
        np.testing.assert_allclose(target_offset, offset, rtol=0, atol=1e-9)
    trail = np.array(page.evaluate("snakeViewer.trail()"))
    assert trail.shape == (TRAIL, 3)  # bounded: the oldest dropped
    np.testing.assert_allclose(trail, positions[-TRAIL:] @ ROS_TO_THREE.T, rtol=0, atol=1e-6)
    assert gait.count("/sim/odom rejected") == 0


@pytest.mark.ros
@pytest.mark.browser
def test_bad_odom_is_rejected_counted_and_does_not_move_the_robot(page: Page, gait: Gait) -> None:
    """Each pose of BAD_POSES: the node counts it rejected on /diagnostics and keeps running;
    a joint state sent after the counts grew (so after any forwarded odom, on one WebSocket)
    is drawn while the sim robot stays at the last good pose."""
    odom = page.evaluate("snakeViewer.poses.sim")
    assert odom["messages"] > 0, "runs after test_odom_places_the_sim_root..."
    good = np.array(odom["position"]), Rotation.from_quat(odom["orientation"])
    trail = page.evaluate("snakeViewer.trail()")
    before = gait.count("/sim/odom rejected")
    bad = [odometry(p, q, (1, 0)) for p, q in BAD_POSES]

    def counted() -> bool:
        for msg in bad:  # again until counted: best-effort
            gait.odom.publish(msg)
        return gait.count("/sim/odom rejected") >= before + len(bad)

    wait_for(counted, 30.0, "the bad odom counted on /diagnostics")
    shown(page, gait)
    assert page.evaluate("snakeViewer.poses.sim.stamp") == odom["stamp"]
    assert_base_at(page, *good)
    assert page.evaluate("snakeViewer.trail()") == trail


@pytest.mark.ros
@pytest.mark.browser
def test_measured_pose_places_the_ghost_with_a_trail_of_its_own(page: Page, gait: Gait) -> None:
    """Poses on /measured/pose put the measured robot's (the ghost's) root there and draw its
    own trail, in the order sent; the sim robot stays where its odometry put it, with its
    trail unchanged."""
    sim = base_pose(page, "sim")
    sim_trail = page.evaluate("snakeViewer.trail('sim')")
    rng = np.random.default_rng(240)
    positions = np.array([-0.4, 0.2, 0.03]) + np.cumsum(rng.uniform(0.02, 0.05, (5, 3)), axis=0)
    rotations = Rotation.random(5, rng)
    for position, rotation in zip(positions, rotations, strict=True):
        send_pose(page, gait, position, rotation, "measured")
        assert_base_at(page, position, rotation, "measured")
    trail = np.array(page.evaluate("snakeViewer.trail('measured')"))
    np.testing.assert_allclose(trail[-5:], positions @ ROS_TO_THREE.T, rtol=0, atol=1e-6)
    np.testing.assert_allclose(base_pose(page, "sim")[0], sim[0], rtol=0, atol=1e-12)
    assert page.evaluate("snakeViewer.trail('sim')") == sim_trail
    assert gait.count("/measured/pose rejected") == 0


@pytest.mark.ros
@pytest.mark.browser
def test_no_console_errors(page: Page) -> None:
    page.next_frames()
    assert page.errors == []
