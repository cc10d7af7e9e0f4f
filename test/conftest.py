"""Shared fixtures: a private ROS domain for every test module; random snakes that do not hide
index mix-ups (mixed masses, lengths, radii, a tail length different from the first link, full
inertia tensors); markers kept honest (a run that leaves out the tests that need ROS, the
firmware or a browser takes those away)."""

from __future__ import annotations

import fcntl
import functools
import importlib.abc
import itertools
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from _pytest.mark.expression import Expression  # -m's own parser (pytest is pinned)
from scipy.spatial.transform import Rotation

from snake_dynamics import SnakeModel
from snake_dynamics.floating.literal import FloatingState
from snake_dynamics.model import cylinder_inertia

GRAVITY = np.array([0.7, -1.3, -9.81])


def wait_for(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll ``condition`` until truthy (returned) or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def default_sigint() -> None:
    """``preexec_fn`` of a child a test interrupts as Ctrl-C does: SIGINT back to its default.
    A suite started in the background by a shell without job control inherits SIGINT
    ignored, and a Python child that starts with it ignored never raises KeyboardInterrupt
    (two fresh-clone runs failed the sweep's Ctrl-C test so)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wifi_link() -> ModuleType:
    """tools/wifi_link.py, imported as its script runs (tools/ is not a package: its folder
    goes on sys.path)."""
    tools = str(Path(__file__).resolve().parents[1] / "tools")
    if tools not in sys.path:
        sys.path.insert(0, tools)
    return importlib.import_module("wifi_link")


def netns_unavailable() -> str | None:
    """Why network namespaces cannot be made here (tools/wifi_link.py's two hosts), or None."""
    if os.geteuid() != 0:
        return "network namespaces need root (these tests run as root only)"
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2)"
    probe = f"wlprobe{os.getpid()}"
    done = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if done.returncode != 0:
        return f"`ip netns add` fails here: {done.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


@pytest.fixture(scope="module")
def netns() -> None:
    """Skips the module's tests, with the reason, where namespaces cannot be made."""
    reason = netns_unavailable()
    if reason:
        pytest.skip(reason)


def random_model(
    rng: np.random.Generator, n: int, gravity: bool = True, random_axes: bool = False
) -> SnakeModel:
    """A snake with every body different; inertias are cylinders turned by a random small
    rotation (full 3x3, still physical)."""
    masses = rng.uniform(0.05, 0.5, n + 1)
    lengths = rng.uniform(0.04, 0.2, n + 1)
    radii = rng.uniform(0.01, 0.05, n + 1)
    inertias = []
    for m, length, r in zip(masses, lengths, radii, strict=False):
        rot = Rotation.from_rotvec(rng.normal(scale=0.3, size=3)).as_matrix()
        inertias.append(rot @ cylinder_inertia(m, length, r) @ rot.T)
    if random_axes:
        axes = rng.normal(size=(n, 3))
        axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    else:
        axes = np.array([[1.0, 0.0, 0.0] if k % 2 == 0 else [0.0, 0.0, 1.0] for k in range(n)])
    return SnakeModel(
        masses=masses,
        lengths=lengths,
        radii=radii,
        axes=axes,
        inertias=np.array(inertias),
        gravity=GRAVITY if gravity else np.zeros(3),
        name=f"random{n}",
    )


def random_state(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q [rad], q_dot [rad/s], tau [N m] of moderate size."""
    return rng.uniform(-1.2, 1.2, n), rng.uniform(-1.5, 1.5, n), rng.uniform(-0.5, 0.5, n)


def random_floating_state(
    rng: np.random.Generator, model: SnakeModel, scale: float = 0.3, near_ground: bool = False
) -> FloatingState:
    """A random floating-base state: pose anywhere (``near_ground``: the tail's CM a few cm
    from the plane z = 0), base and joint rates of order ``scale``."""
    q, qd, _ = random_state(rng, model.n_joints)
    nu = np.concatenate([rng.normal(scale=scale, size=6), scale * qd])
    quat = Rotation.random(random_state=int(rng.integers(1 << 31))).as_quat()
    height = rng.uniform(-0.03, 0.08) if near_ground else rng.normal()
    return FloatingState(np.array([*rng.normal(size=2), height]), quat, q, nu)


def undulation(
    n: int, alpha: float, omega: float, delta: float
) -> Callable[[float], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """q_k = -alpha sin(omega t + (k-1) delta) with its rates: the planar reference's lateral
    undulation phi_k = theta_k - theta_{k+1} in our q_k = theta_{k+1} - theta_k (body k+1
    relative to body k)."""
    k = np.arange(n)

    def motion(t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        phase = omega * t + k * delta
        s, c = np.sin(phase), np.cos(phase)
        return -alpha * s, -alpha * omega * c, alpha * omega**2 * s

    return motion


def rel_err(a: np.ndarray, b: np.ndarray) -> float:
    """max |a - b| / max |b| (relative to the reference's scale)."""
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(np.max(np.abs(b)), 1e-300))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20191110)


# n = 5 and 20, gravity on and off, and one model with arbitrary joint axes.
MODEL_CASES = [
    (5, True, False),
    (5, False, False),
    (20, True, False),
    (20, False, False),
    (7, True, True),
]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[Any]:
    """On CI (CI=true) a skip is a failure: CI installs every tool, so a test that skips
    there (no simavr, Chromium, an uninstalled package) would hide a broken install step."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") == "true" and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped on CI, where every requirement is installed: {report.longrepr}"


#: ROS domain ids handed out to test modules: 1..101 (0 is everyone's default; above 101 the
#: DDS ports of a domain can meet Linux's ephemeral port range).
ROS_DOMAINS = range(1, 102)
#: Where the domain locks live: one file per id, shared by every test process on the machine.
DOMAIN_LOCKS = Path(tempfile.gettempdir()) / "mfm_snake-ros-domains"


def claim_ros_domain() -> tuple[int, int]:
    """A ROS domain id no other test module on this machine holds now, and the descriptor of
    its lock (held until closed: the kernel frees it if the process dies).

    Raises:
        RuntimeError: every id is taken (more than 101 test modules at once).
    """
    DOMAIN_LOCKS.mkdir(exist_ok=True)
    for domain in random.sample(ROS_DOMAINS, len(ROS_DOMAINS)):
        fd = os.open(DOMAIN_LOCKS / f"{domain}.lock", os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return domain, fd
    raise RuntimeError(f"all ROS domains {ROS_DOMAINS} are held by other test processes")


@pytest.fixture
def busy_cores() -> Iterator[Callable[[int], None]]:
    """``busy_cores(n)`` starts n busy-loop processes beside the test (a loaded machine: on 2
    cores, n = 2 takes both); they are killed when the test ends."""
    hogs: list[subprocess.Popen[bytes]] = []

    def start(n: int) -> None:
        hogs.extend(subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n))

    yield start
    for hog in hogs:
        hog.kill()
        hog.wait()


@pytest.fixture(scope="module", autouse=True)
def ros_domain() -> Iterator[int]:
    """Every test module runs on a ROS domain of its own (locked machine-wide, so concurrent
    test runs never share one), with discovery kept on this machine; the environment is set
    for this process and every child it starts, and restored afterwards."""
    domain, fd = claim_ros_domain()
    try:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("ROS_DOMAIN_ID", str(domain))
            env.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
            yield domain
    finally:
        os.close(fd)


@pytest.fixture
def private_ros_domain(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """A ROS domain for one test alone (for tests that start a whole graph each): nothing a
    test before it left running can reach it."""
    domain, fd = claim_ros_domain()
    try:
        monkeypatch.setenv("ROS_DOMAIN_ID", str(domain))
        yield domain
    finally:
        os.close(fd)


# ------------------------------------------------------------------ markers kept honest
#: The markers of what a test needs (registered in pyproject.toml).
NEEDS = ("ros", "simavr", "browser", "slow")
#: The programs a run without a marker's tests replaces by stand-ins that fail: every
#: firmware build and run (host or AVR, the emulator's too) starts with make.
BLOCKED_PROGRAMS = {
    "simavr": ("make", "avr-gcc", "simavr"),
    "browser": ("chromium", "chromium-browser", "google-chrome"),
}
#: RMW_IMPLEMENTATION of a run without the ros tests: rcl refuses it, so a node or any
#: process that imports rclpy exits at once (status 102, naming this value).
BLOCKED_RMW = "rmw_none_this_run_leaves_out_the_tests_marked_ros"


def _carries(marks: frozenset[str], name: str, /, **kwargs: object) -> bool:
    return not kwargs and name in marks


def leaves_out(markexpr: str, marker: str) -> bool:
    """Whether ``-m markexpr`` selects no test marked ``marker``, whatever other markers of
    NEEDS it carries too."""
    if not markexpr:
        return False
    expression = Expression.compile(markexpr)
    others = [m for m in NEEDS if m != marker]
    return not any(
        expression.evaluate(functools.partial(_carries, frozenset({marker, *extra})))
        for k in range(len(others) + 1)
        for extra in itertools.combinations(others, k)
    )


class NoRclpy(importlib.abc.MetaPathFinder):
    """Imports of rclpy fail, as on a machine without ROS 2: a test module that imports it
    with ``pytest.importorskip`` is skipped, any other use is an error naming the marker."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> None:
        if fullname.partition(".")[0] == "rclpy":
            raise ModuleNotFoundError(
                "rclpy is blocked: this run leaves out the tests marked ros (as if ROS 2 were "
                "not installed)",
                name=fullname,
            )


def stand_ins(folder: Path, marker: str) -> list[str]:
    """Failing stand-ins in ``folder`` for the programs of ``marker``'s tests; their names."""
    for program in BLOCKED_PROGRAMS[marker]:
        script = folder / program
        script.write_text(
            f"#!/bin/sh\necho '{program} is blocked: this run leaves out the tests marked "
            f"{marker}; mark a test that runs it @pytest.mark.{marker}' >&2\nexit 127\n"
        )
        script.chmod(0o755)
    return list(BLOCKED_PROGRAMS[marker])


#: What pytest_configure blocked, the environment it changed, its stand-ins' folder.
_BLOCKED = pytest.StashKey[tuple[list[str], dict[str, str | None], Path | None]]()


def pytest_configure(config: pytest.Config) -> None:
    """A run that leaves out the ros tests blocks rclpy here (if nothing imported it yet)
    and in every child process; one that leaves out simavr or browser tests puts failing
    stand-ins for their programs first on PATH. So a test that needs them but lacks the
    marker fails loudly in the quick run (`make unit`), not later on a machine without
    them. The environment is restored at the end."""
    markexpr = config.option.markexpr
    saved = {name: os.environ.get(name) for name in ("RMW_IMPLEMENTATION", "PATH")}
    blocked: list[str] = []
    if leaves_out(markexpr, "ros"):
        if "rclpy" not in sys.modules:
            sys.meta_path.insert(0, NoRclpy())
        os.environ["RMW_IMPLEMENTATION"] = BLOCKED_RMW
        blocked.append("rclpy")
    markers = [m for m in BLOCKED_PROGRAMS if leaves_out(markexpr, m)]
    folder = Path(tempfile.mkdtemp(prefix="mfm_snake-blocked-")) if markers else None
    if folder is not None:
        blocked += [p for marker in markers for p in stand_ins(folder, marker)]
        os.environ["PATH"] = f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"
    config.stash[_BLOCKED] = (blocked, saved, folder)


def pytest_report_header(config: pytest.Config) -> str | None:
    blocked, _, _ = config.stash.get(_BLOCKED, ([], {}, None))
    return f"blocked (their tests are left out): {', '.join(blocked)}" if blocked else None


def pytest_unconfigure(config: pytest.Config) -> None:
    _, saved, folder = config.stash.get(_BLOCKED, ([], {}, None))
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, NoRclpy)]
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
