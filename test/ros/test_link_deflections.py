"""dynamics_node publishes the elastic links' deflections of a robot config with
``elastic:`` links (docs/ros.md; docs/flexible.md, "Elastic snake links").

Reference: the same snake's static sag at the straight pose
(:meth:`FlexibleModel.static_deflection`), which the quasi-static deflections of a snake
held straight by its servos must approach; the names of the elastic coordinates.
"""

from __future__ import annotations

import signal
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rclpy")
from sensor_msgs.msg import JointState

from snake_dynamics.flexible.snake import LinkDeflections, elastic_arm, tips_of_named
from snake_dynamics.robot import Robot

from .test_node_inputs import RELIABLE, Graph, graph  # noqa: F401

pytestmark = [pytest.mark.ros, pytest.mark.parallel]

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config" / "robot_elastic.yaml"


def test_dynamics_node_publishes_the_link_deflections(
    graph: Graph,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the node of this checkout, not an install
    robot = Robot.load(CONFIG)
    arm = elastic_arm(robot)
    assert arm is not None
    bends = LinkDeflections(robot.model, arm)
    sag = bends.model.static_deflection(np.zeros(arm.n_joints))[arm.n_joints :]
    ns = "/elastic"
    args = ["-r", f"__ns:={ns}", "-p", "use_sim_time:=true", "-p", f"robot_config:={CONFIG}"]
    graph.start("dynamics_node", args)
    heard: list[JointState] = []
    graph.node.create_subscription(JointState, f"{ns}/link_deflections", heard.append, RELIABLE)
    graph.until(lambda: len(heard) >= 200, "200 deflections")  # 2 s of a snake held straight
    last = heard[-1]
    assert list(last.name) == list(bends.names)
    assert len(last.name) == 10 and last.name[1] == "link_5/xy_1"
    modal = np.array(last.position)
    assert np.all(np.isfinite([m.position for m in heard]))
    # link 5's vertical sag: the servos hold the snake a little below straight (joint 1 at
    # -0.085 rad, the Simulator alone): 2.375 mm against 2.421 mm straight
    assert modal[1] + modal[2] == pytest.approx(sag[1] + sag[2], rel=0.05)
    assert sag[1] + sag[2] < -2e-3
    # what snake compare makes of a bag of them: the same names, each link's tip (F117)
    links, tips = tips_of_named(list(last.name), np.array([m.position for m in heard]))
    assert links == ("link_5", "link_6") and tips[-1, 0, 1] == modal[1] + modal[2]
    assert graph.process is not None and graph.log is not None
    graph.process.send_signal(signal.SIGINT)
    assert graph.process.wait(timeout=30) == 0, graph.log.read_text()
