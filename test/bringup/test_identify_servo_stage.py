"""The servo stage of ``snake identify`` as it runs beside the floor stage's takes
(snake_bringup/identification/commands.py), and the floor fit beside the validation crawl
(floor.py): each stops at its next prediction once the takes beside it failed, and each fit
ends with one line of its predictions and times, which bench/identify.py reads."""

from __future__ import annotations

import dataclasses
import re
import threading
from pathlib import Path

import numpy as np
import pytest

from snake_bringup.identification import floor
from snake_bringup.identification.commands import clocked, fit_servos, fit_start
from snake_bringup.identification.experiment import IdentifyError
from snake_bringup.identification.poses import Crawl
from snake_dynamics.robot import Robot
from snake_dynamics.servo import NOMINAL, ServoModel
from snake_dynamics.sim.floor_identification import PathRecording
from snake_dynamics.sim.identification import Recording
from snake_ros.paths import robot_config


def test_the_servo_stage_stops_at_its_first_prediction_once_told() -> None:
    """A stop set before the fit (the crawls beside it failed): the first prediction's
    progress raises, in one line, and no progress line was said."""
    model = Robot.load(robot_config("robot_feedback")).model
    names = model.joint_names
    t = np.arange(0.0, 0.2, 0.02)
    still = np.zeros((t.size, len(names)))
    take = Recording(t, still, still, tuple(names))
    said: list[str] = []
    stop = threading.Event()
    stop.set()
    with pytest.raises(IdentifyError, match="the servo fit stopped") as raised:
        fit_servos(model, take, NOMINAL, "shared", said.append, stop)
    assert "\n" not in str(raised.value) and said == []
    servo = ServoModel.uniform(NOMINAL, len(names))
    with pytest.raises(IdentifyError, match="the servo start fit stopped"):
        fit_start(model, take, servo, said.append, stop)
    assert said == []


def test_a_start_fit_that_fails_leaves_the_config_s_servo_in_one_line() -> None:
    """The start fit on the experiment's steps (while the rest plays) is only a start: where
    it cannot fit (here a recording of other joints) it says so in one line and gives None,
    and the servo fit starts from the config's servo."""
    model = Robot.load(robot_config("robot_feedback")).model
    t = np.arange(0.0, 0.2, 0.02)
    still = np.zeros((t.size, 2))
    said: list[str] = []
    servo = ServoModel.uniform(NOMINAL, model.n_joints)
    got = fit_start(
        model, Recording(t, still, still, ("a", "b")), servo, said.append, stop=threading.Event()
    )
    assert got is None and len(said) == 1
    assert said[0].startswith("start fit: ") and "config's servo" in said[0]


def test_a_fit_ends_with_one_line_of_its_predictions_and_times() -> None:
    """``clocked`` returns the work's result and says its predictions, wall and CPU
    seconds in the form bench/identify.py parses."""
    said: list[str] = []
    result = clocked(said.append, "floor fit", lambda: [1, 2, 3], len)
    assert result == [1, 2, 3] and len(said) == 1
    found = re.fullmatch(r"floor fit done: 3 predictions in ([\d.]+) s, ([\d.]+) s CPU", said[0])
    assert found is not None, said


def test_the_floor_fit_stops_at_its_next_prediction_once_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stop set while the floor fit computes beside the validation crawl (the crawl
    failed): the fit raises at the first prediction it reports, in one line, having said
    only its opening line; the crawls' bags are stood in for by the table robot at rest."""
    robot = Robot.load(robot_config("robot_table"))
    body = dataclasses.replace(robot.model, gravity=np.zeros(3))
    n = body.n_joints
    t = np.arange(0.0, 0.3, 0.02)
    still = np.zeros((t.size, n))
    pose_t = t[1:-1]
    take = PathRecording(t, still, pose_t, np.zeros((pose_t.size, 2)), np.zeros(pose_t.size))
    read: list[Path] = []

    def crawl_recording(path: Path, names: object) -> Crawl:
        read.append(path)
        return Crawl(take, {}, 0)

    monkeypatch.setattr(floor, "crawl_recording", crawl_recording)
    said: list[str] = []
    stop = threading.Event()
    stop.set()
    bags = Path("bags")
    with pytest.raises(IdentifyError, match="the floor fit stopped") as raised:
        floor.fit_floor(
            model=body,
            servo=robot.servo,
            bags=bags,
            fitted=("mu_along",),
            say=said.append,
            stop=stop,
        )
    assert "\n" not in str(raised.value) and len(said) == 1 and said[0].startswith("fitting")
    # it reads the fitted crawls' bags alone: the validation crawl may still be playing
    assert read == [bags / f"{label}_bag" for label, *_ in floor.CRAWLS]
