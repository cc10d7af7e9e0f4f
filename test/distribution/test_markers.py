"""The markers say what a test needs (pyproject.toml), and a run that leaves a marker's tests
out takes that away (test/conftest.py), so an unmarked test that needs ROS or the firmware
fails in the quick run (`make unit`) instead of on a machine without them.

References: the markers pytest registered from pyproject.toml, pytest's own reading of a
``-m`` expression (which tests it selects), and a pytest run of unmarked tests in a child
process, one of which needs nothing (it must pass)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.markers import BLOCKED_PROGRAMS, NEEDS, leaves_out

ROOT = Path(__file__).resolve().parents[2]


def test_the_markers_kept_honest_are_the_registered_ones(pytestconfig: pytest.Config) -> None:
    registered = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    assert set(NEEDS) <= registered
    assert set(BLOCKED_PROGRAMS) <= set(NEEDS)


@pytest.mark.parametrize(
    ("markexpr", "left_out"),
    [
        ("", set()),
        ("not ros", {"ros"}),
        ("not ros and not simavr and not browser and not slow", set(NEEDS)),
        ("not (ros or simavr)", {"ros", "simavr"}),
        ("not slow", {"slow"}),
        ("simavr", set()),  # selects the tests marked ros and simavr too
        ("ros or not ros", set()),
        ("slow and not ros", {"ros"}),
    ],
)
def test_a_run_leaves_out_a_marker_when_it_selects_no_test_that_carries_it(
    markexpr: str, left_out: set[str]
) -> None:
    assert {m for m in NEEDS if leaves_out(markexpr, m)} == left_out


UNMARKED = """
import subprocess, sys

def test_imports_rclpy():
    import rclpy

def test_starts_a_process_that_imports_rclpy():
    subprocess.run([sys.executable, "-c", "import rclpy"], check=True)

def test_builds_the_firmware():
    subprocess.run(["make", "--version"], check=True)

def test_needs_nothing():
    pass
"""


def test_an_unmarked_test_that_needs_ros_or_the_firmware_fails_in_the_quick_run(
    tmp_path: Path,
) -> None:
    """Unmarked tests run by pytest with test/conftest.py as a plugin and the quick run's
    ``-m``: the one that needs nothing passes, the others fail, saying what was blocked."""
    (tmp_path / "test_unmarked.py").write_text(UNMARKED)
    markexpr = "not ros and not simavr and not browser and not slow"
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-m", markexpr, "test_unmarked.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT / "test")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert "3 failed, 1 passed" in out.stdout, out.stdout
    assert "rclpy is blocked: this run leaves out the tests marked ros" in out.stdout
    assert "make is blocked: this run leaves out the tests marked simavr" in out.stdout


class _Selected:
    """A pytest plugin that keeps the node ids of the tests its session selected."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.ids = [item.nodeid for item in session.items]


@pytest.mark.ros  # its reference collection imports rclpy
def test_make_test_s_two_runs_together_collect_every_test() -> None:
    """`make test` runs the tests that need no ROS, firmware or browser on both cores, then the
    rest one at a time. The first run blocks rclpy, so a module that skips itself without rclpy
    would hide its unmarked tests from both runs: they must be marked ``ros``. Reference:
    pytest's collection of the same selection with rclpy available, in this process (whose
    own collection imported the test modules already), against the first run's in a child
    process, where rclpy is blocked."""
    quick = "not ros and not simavr and not browser"
    # the same selection, written so that no marker is left out (nothing gets blocked)
    unblocked = f"({quick}) or (ros and simavr and browser and slow)"
    options = ["-p", "no:cacheprovider", "--co", "-q"]
    out = subprocess.run(
        [sys.executable, "-m", "pytest", *options, "-m", quick, "test"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    blocked = [line for line in out.stdout.splitlines() if "::" in line]
    reference = _Selected()
    with pytest.MonkeyPatch.context() as env:
        env.chdir(ROOT)
        status = pytest.main([*options, "-m", unblocked, "test"], plugins=[reference])
    assert status == pytest.ExitCode.OK
    assert len(reference.ids) > 700
    assert blocked == reference.ids
