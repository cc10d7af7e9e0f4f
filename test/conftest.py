"""Shared fixtures and hooks: a private ROS domain for every test module (and one for a test
alone), a seeded generator, busy cores, network namespaces or a skip; a skip counted as a
failure on CI; markers kept honest (a run that leaves out the tests that need ROS, the
firmware or a browser takes those away). The helpers tests import are in test/support/."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.load import BusyCores
from support.markers import BLOCKED_PROGRAMS, BLOCKED_RMW, NoRclpy, leaves_out, stand_ins
from support.namespaces import netns_unavailable
from support.processes import reap_children, running_children
from support.ros_domains import claim_ros_domain


@pytest.fixture(scope="module")
def netns() -> None:
    """Skips the module's tests, with the reason, where namespaces cannot be made."""
    reason = netns_unavailable()
    if reason:
        pytest.skip(reason)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20191110)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[Any]:
    """On CI (CI=true) a skip is a failure: CI installs every tool, so a test that skips
    there (no simavr, Chromium, an uninstalled package) would hide a broken install step."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") == "true" and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped on CI, where every requirement is installed: {report.longrepr}"


@pytest.fixture
def busy_cores() -> Iterator[BusyCores]:
    """``busy_cores(n)`` starts n busy-loop processes beside the test (a loaded machine: on 2
    cores, n = 2 takes both; ``pause()`` stops them); killed when the test ends."""
    hogs = BusyCores()
    try:
        yield hogs
    finally:
        hogs.close()


@pytest.fixture(scope="module", autouse=True)
def ros_domain() -> Iterator[int]:
    """Every test module runs on a ROS domain of its own (locked machine-wide, so concurrent
    test runs never share one), with discovery kept on this machine; the environment is set
    for this process and every child it starts, and restored afterwards. What the module
    left running is killed (with a warning) before the domain is released."""
    domain, fd = claim_ros_domain()
    before = running_children()
    try:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("ROS_DOMAIN_ID", str(domain))
            env.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
            yield domain
    finally:
        # what the module's tests left running dies before its domain is handed on
        left = reap_children(before)
        os.close(fd)
        if left:
            warnings.warn(f"left running by the module, killed: {left}", stacklevel=1)


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
