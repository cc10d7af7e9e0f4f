"""A command reads its robot once and hands the object down (snake_dynamics.robot.Robot):
the reference is a count of the robot files read while a command runs in-process, and the
source of the modules below the CLI, which name no loader of a robot file."""

from __future__ import annotations

import collections
import contextlib
import pickle
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import snake_bringup.optimization
import snake_bringup.sweep
import snake_dynamics.model
from snake_bringup.cli import main
from snake_bringup.cluster import ClusterOptions, Counts, Finished, Job

ROOT = Path(__file__).resolve().parents[2]

#: The loaders that take a robot file by name.
LOADERS = re.compile(
    r"\b(SnakeModel\.from_yaml|ServoModel\.from_yaml|load_servo_map|Robot\.load|load_robot)\("
)
#: Modules below the CLI that take their robot as an object, never as a name.
HANDED_DOWN = [
    "snake_bringup/identification",
    "snake_viz/compare_report.py",
    "snake_bringup/sweep.py",
    "snake_bringup/optimization.py",
    "snake_bringup/locomotion.py",
    "snake_bringup/feasibility.py",
]


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[str]:
    """Every YAML file read through snake_dynamics.model.read_yaml, by file name."""
    counts: collections.Counter[str] = collections.Counter()
    read_yaml = snake_dynamics.model.read_yaml

    def counting(path: Path, what: str) -> Any:
        counts[Path(path).name] += 1
        return read_yaml(path, what)

    monkeypatch.setattr(snake_dynamics.model, "read_yaml", counting)
    return counts


def test_identify_reads_its_robot_once(tmp_path: Path, reads: collections.Counter[str]) -> None:
    """``snake identify --from-bags`` reads robot_feedback.yaml and its base robot.yaml once
    each before it reads the bags (an empty folder: it stops there, with the robot, its servo
    map and its servo model built)."""
    (tmp_path / "bags").mkdir()
    argv = ["identify", "--from-bags", str(tmp_path / "bags"), "-q", "-o", str(tmp_path / "o")]
    assert main(argv) == 1  # no experiment_bag: one line, after the robot
    assert reads == {"robot_feedback.yaml": 1, "robot.yaml": 1}


@pytest.mark.parametrize("folder", HANDED_DOWN)
def test_no_module_below_the_cli_loads_a_robot_by_name(folder: str) -> None:
    """The modules of ``folder`` take the robot the command read; none calls a loader."""
    place = ROOT / folder
    paths = [place] if place.is_file() else sorted(place.rglob("*.py"))
    assert paths, folder
    offenders = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in paths
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if LOADERS.search(line)
    ]
    assert not offenders, "\n".join(offenders)


def test_simulate_on_wheels_reads_its_robot_once(
    tmp_path: Path, reads: collections.Counter[str]
) -> None:
    """``snake simulate`` on wheels takes the body and the servos from one reading of
    robot_wheels.yaml (and its base paper_planar.yaml): twice each before the Robot."""
    argv = ["simulate", "--robot", "robot_wheels", "--duration", "0.05"]
    assert main([*argv, "--no-plots", "-q", "-o", str(tmp_path / "run")]) == 0
    assert reads == {"robot_wheels.yaml": 1, "paper_planar.yaml": 1}


@pytest.mark.parametrize("command", ["sim", "hardware"])
def test_a_graph_command_reads_its_robot_once(
    command: str, tmp_path: Path, reads: collections.Counter[str]
) -> None:
    """``snake sim`` and ``snake hardware`` (``--dry-run``) check the robot's sections, its
    servos against the gait and build the graph's URDF from one reading of robot.yaml (six
    and eight before the Robot)."""
    assert main([command, "--dry-run", "-o", str(tmp_path / "run")]) == 0
    assert reads == {"robot.yaml": 1}


@pytest.fixture
def jobs_here(monkeypatch: pytest.MonkeyPatch) -> list[Job[Any]]:
    """The studies' Dask jobs run in this process, each one's function and arguments through
    pickle as a worker gets them (so their reads are counted); returns the jobs run."""
    ran: list[Job[Any]] = []

    def run_jobs(
        client: Any, jobs: Sequence[Job[Any]], on_progress: Any, counts: Counts, **kw: Any
    ) -> Iterator[Any]:
        for job in jobs:
            function, arguments = pickle.loads(pickle.dumps((job.function, job.args)))
            ran.append(job)
            counts.done += 1
            yield Finished(job.key, function(*arguments))

    def client(self: ClusterOptions, security: Any, most: int | None = None) -> Any:
        return contextlib.nullcontext(object())

    monkeypatch.setattr(ClusterOptions, "client", client)
    for module in (snake_bringup.sweep, snake_bringup.optimization):
        monkeypatch.setattr(module, "run_jobs", run_jobs)
        monkeypatch.setattr(module, "threads", lambda client: 1)
    return ran


#: A short run on the ground: ten 1 ms steps, the joints on the gait.
SHORT = ["--duration", "0.01", "--ideal-servos", "--no-plots", "-q"]


def test_sweep_reads_its_robot_once_and_its_points_none(
    tmp_path: Path, reads: collections.Counter[str], jobs_here: list[Job[Any]]
) -> None:
    """``snake sweep`` reads robot.yaml once; its points (on the workers) get the robot
    pickled and read no file."""
    argv = ["sweep", "--x", "amplitude=0.3:0.5:2", "--y", "frequency=0.5:1:1", *SHORT]
    assert main([*argv, "-o", str(tmp_path / "sweep")]) == 0
    assert len(jobs_here) == 2
    assert reads == {"robot.yaml": 1}


def test_optimize_reads_its_robot_once_and_its_trials_none(
    tmp_path: Path, reads: collections.Counter[str], jobs_here: list[Job[Any]]
) -> None:
    """``snake optimize`` reads robot.yaml once; its trials get the robot pickled."""
    argv = ["optimize", "--param", "amplitude=0.3:0.5", "--trials", "2", *SHORT]
    assert main([*argv, "-o", str(tmp_path / "optimize")]) == 0
    assert len(jobs_here) == 2
    assert reads == {"robot.yaml": 1}
