"""What the web view is sent to bend robot_elastic's links: each elastic link's centreline
(docs/flexible.md, "Elastic snake links"; snake_viz.web_viewer.deflection_message).

References: the tip deflections of the elastic coordinates (every mode shape is 1 at the
tip, F117), mapped by hand into the links' URDF frames (link 5 after a pitch joint: its
xy flexure is vertical, body e3; link 6 after a yaw joint: its xz flexure is), the clamp at
the joint (no displacement there), and the names the message must carry.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytestmark = [pytest.mark.ros, pytest.mark.parallel]
pytest.importorskip("rclpy")
from sensor_msgs.msg import JointState  # noqa: E402
from support.waits import wait_for  # noqa: E402

from snake_dynamics.flexible.snake import LinkDeflections, elastic_arm, tip_deflections  # noqa: E402
from snake_dynamics.robot import Robot  # noqa: E402
from snake_viz.web_viewer import DEFLECTIONS_TOPIC, deflection_message  # noqa: E402

from .test_web_viewer import Gait, Page, gait, page, viewer_url  # noqa: E402, F401

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bends() -> LinkDeflections:
    robot = Robot.load(ROOT / "config" / "robot_elastic.yaml")
    arm = elastic_arm(robot)
    assert arm is not None
    return LinkDeflections(robot.model, arm)


def message(bends: LinkDeflections, modal: np.ndarray) -> JointState:
    msg = JointState(name=list(bends.names), position=modal.tolist())
    msg.header.stamp.sec, msg.header.stamp.nanosec = 12, 500_000_000
    return msg


def test_the_view_gets_each_link_bent_as_its_coordinates_say(bends: LinkDeflections) -> None:
    nj = bends.arm.n_joints
    full = bends.model.static_deflection(np.zeros(nj))
    modal = full[nj:]
    text = deflection_message(DEFLECTIONS_TOPIC, bends, message(bends, modal))
    assert text is not None
    sent = json.loads(text)
    assert sent["topic"] == "/sim/link_deflections" and sent["stamp"] == 12.5
    assert sorted(sent["links"]) == ["link_5", "link_6"]
    tips = tip_deflections(bends.arm, full)[0]  # (twist, y, z) in each link's frame
    link5, link6 = (np.array(sent["links"][name]) for name in ("link_5", "link_6"))
    assert link5.shape == link6.shape == (9, 3)
    assert np.array_equal(link5[0], [0.0, 0.0, 0.0]) and np.array_equal(link6[0], [0.0, 0.0, 0.0])
    # along the body (e2) to the next joint, 150 mm; down by the sag, up being body e3
    assert link5[-1] == pytest.approx([0.0, 0.150, tips[0, 1]], abs=1e-15)
    assert link6[-1] == pytest.approx([0.0, 0.150, tips[1, 2]], abs=1e-15)
    assert link5[-1, 2] < -2e-3 and link6[-1, 2] < -5e-4  # 2.4 and 1.1 mm down
    assert np.all(np.diff(link5[:, 2]) < 0)  # a cantilever's sag grows to the tip


@pytest.mark.parametrize("change", ["names", "nan", "short"])
def test_what_is_not_this_robots_deflections_is_not_sent(
    bends: LinkDeflections, change: str
) -> None:
    msg = message(bends, np.zeros(len(bends.names)))
    if change == "names":
        msg.name = [f"other/{n}" for n in bends.names]
    elif change == "nan":
        msg.position = [float("nan")] * len(bends.names)
    else:
        msg.position = [0.0] * (len(bends.names) - 1)
    assert deflection_message(DEFLECTIONS_TOPIC, bends, msg) is None


# ------------------------------------------------------------------ the page in Chromium
#: The robot the shared viewer fixture of test_web_viewer starts (same joints as robot).
VIEWER_ROBOT = "robot_elastic"


@pytest.mark.browser
def test_the_page_bends_the_elastic_links(
    page: Page,  # noqa: F811
    gait: Gait,  # noqa: F811
    bends: LinkDeflections,
) -> None:
    nj = bends.arm.n_joints
    modal = bends.model.static_deflection(np.zeros(nj))[nj:]
    publisher = gait.node.create_publisher(JointState, DEFLECTIONS_TOPIC, 10)
    wait_for(lambda: publisher.get_subscription_count() > 0, 20.0, "the viewer's subscription")

    def drawn() -> bool:
        msg = message(bends, modal)
        msg.header.stamp = gait.node.get_clock().now().to_msg()
        publisher.publish(msg)
        return bool(page.evaluate("window.snakeViewer.deflections.messages > 0"))

    wait_for(drawn, 20.0, "deflections drawn on the page")
    state = page.evaluate("window.snakeViewer")
    scale = state["bend"]
    assert scale == 10
    lines = bends.centrelines(modal)
    for name, line in zip(bends.links, lines, strict=True):
        expected = line * [scale, 1.0, scale]  # the deflection scaled, not the length
        assert np.allclose(state["deflections"]["links"][name], expected, rtol=1e-12, atol=1e-15)
    assert page.errors == []
