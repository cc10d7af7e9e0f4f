"""The checked-in URDF: generated from config/robot.yaml, parseable by an independent URDF
library (yourdfpy), and its forward kinematics equal link_poses for random joint angles."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import snake_dynamics as sd
from snake_dynamics.urdf import to_urdf

ROOT = Path(__file__).resolve().parents[2]
URDF = ROOT / "urdf" / "snake.urdf"


def test_checked_in_urdf_is_up_to_date() -> None:
    model = sd.SnakeModel.from_yaml(ROOT / "config/robot.yaml")
    assert URDF.read_text() == to_urdf(model), (
        "urdf/snake.urdf is out of date: run "
        "`snake urdf --robot config/robot.yaml -o urdf/snake.urdf`"
    )


def test_urdf_forward_kinematics_equal_link_poses() -> None:
    yourdfpy = pytest.importorskip("yourdfpy")
    robot = yourdfpy.URDF.load(str(URDF), build_scene_graph=True, load_meshes=False)
    assert robot.validate()
    model = sd.SnakeModel.from_yaml(ROOT / "config/robot.yaml")
    assert [j for j in robot.actuated_joint_names] == model.joint_names
    rng = np.random.default_rng(48)
    for _ in range(5):
        q = rng.uniform(-1.5, 1.5, model.n_joints)
        robot.update_cfg(q)
        poses = sd.link_poses(model, q)
        for k, link in enumerate(model.link_names):
            frame = robot.get_transform(frame_to=link, frame_from="base_link")
            cm = frame @ np.append(robot.link_map[link].inertial.origin[:3, 3], 1.0)
            np.testing.assert_allclose(frame[:3, :3], poses[k, :3, :3], atol=1e-12)
            np.testing.assert_allclose(cm[:3], poses[k, :3, 3], atol=1e-12)


def test_every_link_collides_as_the_cylinder_it_shows() -> None:
    """Each link has a collision cylinder, the same as its visual (radius, length, pose), so
    planners and contact simulators see the body RViz shows; joint efforts are a hobby
    servo's stall torque."""
    yourdfpy = pytest.importorskip("yourdfpy")
    robot = yourdfpy.URDF.load(str(URDF), build_scene_graph=False, load_meshes=False)
    model = sd.SnakeModel.from_yaml(ROOT / "config/robot.yaml")
    for b, name in enumerate(model.link_names):
        link = robot.link_map[name]
        (visual,), (collision,) = link.visuals, link.collisions
        cylinder = collision.geometry.cylinder
        assert (cylinder.radius, cylinder.length) == (model.radii[b], model.lengths[b])
        assert visual.geometry.cylinder == cylinder
        np.testing.assert_array_equal(collision.origin, visual.origin)
    assert {j.limit.effort for j in robot.robot.joints if j.limit is not None} == {1.0}
