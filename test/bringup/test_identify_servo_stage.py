"""The servo stage of ``snake identify`` as it runs beside the floor stage's takes
(snake_bringup/identification/commands.py): it stops at its next prediction once the takes
beside it failed, and each fit ends with one line of its predictions and times, which
bench/identify.py reads."""

from __future__ import annotations

import re
import threading

import numpy as np
import pytest

from snake_bringup.identification.commands import clocked, fit_servos
from snake_bringup.identification.experiment import IdentifyError
from snake_dynamics.robot import Robot
from snake_dynamics.servo import NOMINAL, ServoModel
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
    servo = ServoModel.uniform(NOMINAL, len(names))
    with pytest.raises(IdentifyError, match="the servo fit stopped") as raised:
        fit_servos(model, take, servo, "shared", said.append, stop)
    assert "\n" not in str(raised.value) and said == []


def test_a_fit_ends_with_one_line_of_its_predictions_and_times() -> None:
    """``clocked`` returns the work's result and says its predictions, wall and CPU
    seconds in the form bench/identify.py parses."""
    said: list[str] = []
    result = clocked(said.append, "floor fit", lambda: [1, 2, 3], len)
    assert result == [1, 2, 3] and len(said) == 1
    found = re.fullmatch(r"floor fit done: 3 predictions in ([\d.]+) s, ([\d.]+) s CPU", said[0])
    assert found is not None, said
