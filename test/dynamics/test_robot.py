"""The Robot read once (snake_dynamics.robot): the same body, ground and servos as the
per-section loaders (SnakeModel.from_yaml, ServoModel.from_yaml), each of which reads the
file again, for every robot config shipped; one read of the file and its bases; an invalid
servo: section refused only when the servos are asked for."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

import snake_dynamics.model
from snake_dynamics import ModelError, SnakeModel
from snake_dynamics.robot import Robot
from snake_dynamics.servo import ServoModel

ROOT = Path(__file__).resolve().parents[2]
ROBOTS = sorted((ROOT / "config").glob("robot*.yaml"))


@pytest.mark.parametrize("path", ROBOTS, ids=lambda p: p.stem)
def test_the_robot_is_what_the_section_loaders_read(path: Path) -> None:
    """Model (with its ground), servo model and name equal the per-section loaders'."""
    robot = Robot.load(path)
    model = SnakeModel.from_yaml(path)
    assert robot.model.name == model.name
    for name in (
        "masses", "lengths", "radii", "axes", "inertias", "gravity", "joint_limits", "armature",
    ):  # fmt: skip
        np.testing.assert_array_equal(getattr(robot.model, name), getattr(model, name))
    assert (robot.model.base, robot.ground, robot.model.wheels) == (
        model.base,
        model.ground,
        model.wheels,
    )
    servo = ServoModel.from_yaml(path, model.joint_names)
    assert robot.servo.digest == servo.digest
    assert robot.joint_names == tuple(model.joint_names)


def test_a_robot_and_its_bases_are_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """robot_feedback.yaml (base: robot.yaml): two files read, whatever is asked after."""
    read: list[str] = []
    read_yaml = snake_dynamics.model.read_yaml

    def counting(path: Path, what: str) -> object:
        read.append(path.name)
        return read_yaml(path, what)

    monkeypatch.setattr(snake_dynamics.model, "read_yaml", counting)
    robot = Robot.load(ROOT / "config" / "robot_feedback.yaml")
    _ = robot.model, robot.servo, robot.ground, robot.section("servos")
    assert read == ["robot_feedback.yaml", "robot.yaml"]


def test_a_bad_servo_section_is_refused_when_the_servos_are_asked_for(tmp_path: Path) -> None:
    """A body-only command (snake urdf) still reads a robot whose servo: is wrong; asking
    for the servos raises the loader's one line, naming the file and the key."""
    path = tmp_path / "typo.yaml"
    path.write_text(
        yaml.safe_dump(
            {"base": str(ROOT / "config" / "robot.yaml"), "servo": {"defaults": {"stifness": 1}}}
        )
    )
    robot = Robot.load(path)
    assert robot.model.n_joints > 0
    with pytest.raises(ModelError, match=r"typo\.yaml.*stifness"):
        _ = robot.servo


def _overlay(tmp_path: Path, servo: object, base: str = "robot.yaml") -> Path:
    path = tmp_path / "rotor.yaml"
    path.write_text(yaml.safe_dump({"base": str(ROOT / "config" / base), "servo": servo}))
    return path


def test_the_servos_armature_is_the_bodys(tmp_path: Path) -> None:
    """servo.defaults.armature for every joint, servo.joints.<name>.armature over it
    (eq. 471, SnakeModel.armature); the servo law's six parameters do not change, and a
    robot without the key has zeros and the same body as before."""
    plain = Robot.load(ROOT / "config" / "robot.yaml")
    assert not np.any(plain.model.armature) and plain.model.armature.shape == (8,)
    path = _overlay(
        tmp_path, {"defaults": {"armature": 0.003}, "joints": {"joint_8": {"armature": 0.001}}}
    )
    robot = Robot.load(path)
    np.testing.assert_array_equal(robot.model.armature, [0.003] * 7 + [0.001])
    assert robot.servo.joints == plain.servo.joints
    mstar = snake_dynamics.mass_matrix
    q = np.linspace(-0.5, 0.5, 8)
    np.testing.assert_allclose(
        np.diag(mstar(robot.model, q) - mstar(plain.model, q)), robot.model.armature, atol=1e-15
    )


@pytest.mark.parametrize(
    ("servo", "key"),
    [
        ({"defaults": {"armature": -0.001}}, "servo.defaults.armature"),
        ({"joints": {"joint_2": {"armature": "heavy"}}}, "servo.joints.joint_2.armature"),
        ({"defaults": {"armature": float("nan")}}, "servo.defaults.armature"),
    ],
)
def test_a_bad_armature_is_one_line_naming_the_file_and_key(
    tmp_path: Path, servo: object, key: str
) -> None:
    """The armature is the body's, so a bad one stops the robot's load (not only its servos)."""
    with pytest.raises(ModelError) as error:
        Robot.load(_overlay(tmp_path, servo))
    message = str(error.value)
    assert "\n" not in message and message.startswith(str(tmp_path / "rotor.yaml"))
    assert f"{key} must be a number >= 0 kg m^2" in message


def test_a_wheeled_snake_refuses_an_armature(tmp_path: Path) -> None:
    """The wheeled model (snake_dynamics.sim.wheeled) has no armature: one line."""
    path = _overlay(tmp_path, {"defaults": {"armature": 0.003}}, base="robot_wheels.yaml")
    with pytest.raises(ModelError, match=r"rotor\.yaml: ground: wheels has no armature"):
        Robot.load(path)
