"""The markers say what a test needs (pyproject.toml), and a run that leaves a marker's tests
out takes that away (test/conftest.py), so an unmarked test that needs ROS or the firmware
fails in the quick run (`make unit`) instead of on a machine without them.

References: the markers pytest registered from pyproject.toml, pytest's own reading of a
``-m`` expression (which tests it selects), and a pytest run of unmarked tests in a child
process, one of which needs nothing (it must pass)."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _pytest.mark import MarkMatcher  # -m's own matcher (pytest is pinned)
from _pytest.mark.expression import Expression
from support.markers import BLOCKED_PROGRAMS, NEEDS, SCHEDULING, leaves_out

ROOT = Path(__file__).resolve().parents[2]


def test_the_markers_kept_honest_are_the_registered_ones(pytestconfig: pytest.Config) -> None:
    registered = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    assert set(NEEDS) | set(SCHEDULING) <= registered
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
        # make test's live runs: a scheduling marker leaves out no need
        ("not (not ros and not simavr and not browser) and parallel", set()),
        ("not (not ros and not simavr and not browser) and not parallel", set()),
        ("parallel and not browser", {"browser"}),
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
    """A pytest plugin that keeps the tests its session selected."""

    def __init__(self) -> None:
        self.items: list[pytest.Item] = []

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.items = list(session.items)


def make_test_runs() -> list[str]:
    """The ``-m`` of each pytest run of `make test`, in order, read from the Makefile."""
    makefile = (ROOT / "Makefile").read_text()
    quick = re.search(r"^QUICK := (.+)$", makefile, re.MULTILINE)
    recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert quick is not None and recipe is not None, "the Makefile has no QUICK or test target"
    runs = re.findall(r'pytest .*-m "([^"]+)"', recipe[1])
    return [run.replace("$(QUICK)", quick[1]) for run in runs]


def selects(markexpr: str, item: pytest.Item) -> bool:
    """Whether ``pytest -m markexpr`` selects ``item`` (pytest's own reading of ``-m``)."""
    return Expression.compile(markexpr).evaluate(MarkMatcher.from_markers(item.iter_markers()))


@pytest.mark.ros  # its reference collection imports rclpy
@pytest.mark.parallel
def test_make_test_s_runs_together_collect_every_test_once() -> None:
    """`make test` runs the tests that need no ROS, firmware or browser on both cores, the
    live ones marked ``parallel`` on both cores, then the rest one at a time: every test in
    exactly one run. The first run blocks rclpy, so a module that skips itself without rclpy
    would hide its unmarked tests from every run: they must be marked ``ros``. Reference:
    pytest's collection of the whole suite in this process (nothing left out, rclpy
    available) and its reading of each run's ``-m`` from the Makefile, against the first
    run's collection in a child process, where rclpy is blocked."""
    runs = make_test_runs()
    assert len(runs) == 3, runs
    assert leaves_out(runs[0], "ros") and not any(leaves_out(run, "ros") for run in runs[1:])
    options = ["-p", "no:cacheprovider", "--co", "-q"]
    out = subprocess.run(
        [sys.executable, "-m", "pytest", *options, "-m", runs[0], "test"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    everything = _Selected()
    with pytest.MonkeyPatch.context() as env:
        env.chdir(ROOT)
        status = pytest.main([*options, "test"], plugins=[everything])
    assert status == pytest.ExitCode.OK
    assert len(everything.items) > 1000
    chosen = [[item.nodeid for item in everything.items if selects(run, item)] for run in runs]
    assert [line for line in out.stdout.splitlines() if "::" in line] == chosen[0]
    assert all(chosen), [len(ids) for ids in chosen]
    assert sorted(itertools.chain(*chosen)) == sorted(item.nodeid for item in everything.items)
