"""The held-out crawls' judge (snake_bringup/identification/heldout.py): a crawl the model
itself made is predicted with no error by that model and with a path and travel error by
one on another floor; the report's table and fit.json's entry hold what was computed."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from snake_bringup.identification.floor import crawl
from snake_bringup.identification.heldout import (
    Model,
    Prediction,
    judged_json,
    predict_take,
    report_section,
)
from snake_dynamics.ground import Ground
from snake_dynamics.robot import Robot
from snake_dynamics.sim.floor_identification import PathRecording, predict_crawl
from snake_ros.paths import robot_config


def _own_crawl(model: Model) -> PathRecording:
    """A 3 s serpenoid crawl as ``model`` predicts it: its joints measured, its path posed
    at 100 Hz."""
    gait = crawl(model.body, "serpenoid", {"amplitude": 0.7, "frequency": 0.8}, 3.0)
    t = np.arange(0.0, 3.0, 0.02)
    reference = np.array([gait.evaluate(x).q for x in t])
    pose_t = np.arange(0.0, t[-1], 0.01)
    start = np.zeros((pose_t.size, 2))
    take = PathRecording(t, reference, pose_t, start, np.zeros(pose_t.size))
    got = predict_crawl(model.body, model.servo, model.ground, take)
    return dataclasses.replace(take, xy=got.xy, measured=got.q + 0.01)  # a pot offset


def test_a_crawl_is_predicted_exactly_by_its_own_model_and_not_on_another_floor() -> None:
    robot = Robot.load(robot_config("robot_table"))
    body = dataclasses.replace(robot.model, gravity=np.zeros(3))
    ground = robot.model.ground or Ground()
    own = Model("own", body, robot.servo, ground)
    take = _own_crawl(own)
    measured = float(np.hypot(*(take.xy[-1] - take.xy[0])))
    assert measured > 0.02  # it crawled
    same = predict_take(own, take)
    assert same.joint_rms == pytest.approx(0.0, abs=1e-9)  # the offset removed (eq. 209)
    assert same.path_rms == pytest.approx(0.0, abs=1e-9)
    assert same.travel == pytest.approx(measured, rel=1e-9)
    slippery = dataclasses.replace(ground, mu_across=0.5 * ground.mu_across)
    other = predict_take(Model("slippery", body, robot.servo, slippery), take)
    assert other.path_rms > 1e-3 and abs(other.travel - measured) > 1e-3
    judged: dict[str, dict[str, Prediction | float]] = {
        "crawl": {"measured_travel": measured, "own": same, "slippery": other}
    }
    text = report_section(judged)
    assert "| crawl | own | 0.00 |" in text and f"{other.path_rms * 1e3:.1f} |" in text
    assert f"{(other.travel - measured) / measured:+.1%}" in text
    entry = judged_json(judged)["crawl"]
    assert isinstance(entry, dict)
    assert entry["slippery"]["path_rms"] == other.path_rms
    assert math.isclose(entry["measured_travel"], measured)
