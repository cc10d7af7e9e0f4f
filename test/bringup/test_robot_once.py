"""A command reads its robot once and hands the object down (snake_dynamics.robot.Robot):
the reference is a count of the robot files read while a command runs in-process, and the
source of the modules below the CLI, which name no loader of a robot file."""

from __future__ import annotations

import collections
import re
from pathlib import Path
from typing import Any

import pytest

import snake_dynamics.model
from snake_bringup.cli import main

ROOT = Path(__file__).resolve().parents[2]

#: The loaders that take a robot file by name.
LOADERS = re.compile(
    r"\b(SnakeModel\.from_yaml|ServoModel\.from_yaml|load_servo_map|Robot\.load|load_robot)\("
)
#: Modules below the CLI that take their robot as an object, never as a name.
HANDED_DOWN = ["snake_bringup/identification", "snake_viz/compare_report.py"]


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
