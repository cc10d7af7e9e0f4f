"""SnakeModel: construction, YAML loading and errors that name the field."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import snake_dynamics as sd
from snake_dynamics.model import cylinder_inertia

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_configs_load() -> None:
    robot = sd.SnakeModel.from_yaml(ROOT / "config/robot.yaml")
    assert robot.n_joints == 8 and robot.name == "mfm_snake_8"
    assert robot.masses[-1] == pytest.approx(0.085) and robot.lengths[-1] == pytest.approx(0.09)
    np.testing.assert_allclose(robot.joint_limits, [[-1.5708, 1.5708]] * 8)
    snake20 = sd.SnakeModel.from_yaml(ROOT / "config/snake20.yaml")
    assert snake20.n_joints == 20
    np.testing.assert_array_equal(snake20.axes[0], [1, 0, 0])
    np.testing.assert_array_equal(snake20.axes[1], [0, 0, 1])


def test_uniform_model() -> None:
    m = sd.SnakeModel.uniform(5, 0.2, 0.1, 0.02, axes="xz", tail_length=0.3)
    assert m.lengths.tolist() == [0.3, 0.1, 0.1, 0.1, 0.1, 0.1]
    np.testing.assert_allclose(m.inertias[1], cylinder_inertia(0.2, 0.1, 0.02))
    assert m.joint_names == [f"joint_{k}" for k in range(1, 6)]
    assert m.link_names[0] == "base_link" and m.link_names[-1] == "link_5"
    assert m.block_mass_matrix.shape == (30, 30)


def test_cylinder_inertia_about_the_long_axis() -> None:
    j = cylinder_inertia(2.0, 0.3, 0.05)
    assert j[1, 1] == pytest.approx(0.5 * 2.0 * 0.05**2)
    assert j[0, 0] == pytest.approx(2.0 * (3 * 0.05**2 + 0.3**2) / 12)


def base() -> dict[str, object]:
    return dict(
        masses=[1.0, 1.0, 1.0],
        lengths=[0.1, 0.1, 0.1],
        radii=[0.01] * 3,
        axes=[[1, 0, 0], [0, 0, 1]],
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"masses": [1.0, -1.0, 1.0]}, r"links\[0\].mass must be a finite number > 0 kg"),
        ({"masses": [1.0, 1.0, math.nan]}, r"links\[1\].mass"),
        ({"lengths": [0.0, 0.1, 0.1]}, r"tail.length must be a finite number > 0 m"),
        ({"lengths": [0.1, 0.1]}, r"lengths needs 3 entries"),
        ({"axes": [[1, 0, 0]]}, r"axes must give one axis .* for each of the 2 joints"),
        ({"axes": 5}, r"axes must give one axis"),
        ({"masses": [1.0, -1.0, 1.0]}, r"got -1.0$"),
        ({"inertias": "heavy"}, r"inertias must be numbers"),
        ({"gravity": ["down", 0, 0]}, r"gravity must be numbers"),
        ({"axes": [[0, 0, 0], [0, 0, 1]]}, r"links\[0\].axis"),
        (
            {"inertias": np.stack([np.eye(3), np.eye(3), -np.eye(3)])},
            r"links\[1\].inertia must be positive definite",
        ),
        (
            {"inertias": np.stack([np.eye(3), np.eye(3), [[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]])},
            r"links\[1\].inertia must be a symmetric",
        ),
        (
            {"inertias": np.stack([np.eye(3), np.eye(3), np.diag([1.0, 1.0, 3.0])])},
            "triangle inequality",
        ),
        ({"gravity": [0, 0]}, "gravity must be a finite 3-vector"),
        ({"joint_limits": [[1.0, -1.0], [0, 1]]}, r"links\[0\].limits"),
    ],
)
def test_invalid_models_raise_model_errors_naming_the_field(change, message) -> None:
    with pytest.raises(sd.ModelError, match=message):
        sd.SnakeModel(**{**base(), **change})  # type: ignore[arg-type]


def test_axes_by_name() -> None:
    named = sd.SnakeModel(**{**base(), "axes": ["x", "z"]})  # type: ignore[arg-type]
    np.testing.assert_array_equal(named.axes, sd.SnakeModel(**base()).axes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((3, -1.0, 0.1, 0.02), r"^mass must be a finite number > 0 kg, got -1.0"),
        ((3, 0.1, "long", 0.02), r"^length must be a number, got 'long'"),
        ((3, 0.1, 0.1, math.inf), r"^radius must be a finite number > 0 m"),
    ],
)
def test_uniform_errors_name_the_argument(args, message) -> None:
    with pytest.raises(sd.ModelError, match=message):
        sd.SnakeModel.uniform(*args)
    with pytest.raises(sd.ModelError, match=r"^tail_length must be a finite number > 0 m"):
        sd.SnakeModel.uniform(3, 0.1, 0.1, 0.02, tail_length=0.0)


def test_unknown_axis_name() -> None:
    with pytest.raises(sd.ModelError, match="unknown axis 'w'"):
        sd.SnakeModel.from_dict(
            {"tail": {"mass": 1, "length": 0.1}, "links": [{"mass": 1, "length": 0.1, "axis": "w"}]}
        )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("model: [", "not valid YAML"),
        ("links: []", "expected a mapping with a 'model:' section"),
        (
            "model: {tail: {mass: 1, length: 0.1}, links: []}",
            "model.links must be a non-empty list",
        ),
        (
            "model: {tail: {mass: 1, length: 0.1}, links: [{length: 0.1}]}",
            r"links\[0\].mass is missing",
        ),
        (
            "model: {tail: {mass: 1, length: 0.1}, links: [{mass: x, length: 0.1}]}",
            r"links\[0\].mass must be a number",
        ),
        (
            "model: {tail: {mass: 1, length: 0.1}, links: [{mass: 1, length: 0.1, colour: red}]}",
            r"unknown keys \['colour'\]",
        ),
        (
            "model: {tail: {mass: 1, length: 0.1}, links: [{mass: 1, length: 0.1}], gravty: 0}",
            r"unknown keys \['gravty'\]",
        ),
        ("model: {tail: {mass: 1, length: 0.1}, links: [5]}", r"links\[0\] must be a mapping"),
        ("model: {tail: [1, 0.1], links: [{}]}", r"model.tail must be a mapping"),
        ("model: {tail: {}, link_defaults: 3, links: [{}]}", r"model.link_defaults must be"),
        (
            "model: {tail: {mass: 1, length: 0.1}, links: [{mass: 1, length: 0.1, limits: [1]}]}",
            r"links\[0\].limits must be \[lower, upper\] in rad",
        ),
    ],
)
def test_bad_yaml_files_raise_model_errors_naming_the_file(tmp_path, text, message) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(sd.ModelError, match=message) as info:
        sd.SnakeModel.from_yaml(path)
    assert str(path) in str(info.value)


def test_missing_file() -> None:
    with pytest.raises(sd.ModelError, match="cannot read robot file"):
        sd.SnakeModel.from_yaml("/nonexistent/robot.yaml")


def test_a_robot_config_overlay_lays_its_sections_over_its_base(tmp_path: Path) -> None:
    """``base:`` loads another robot file and merges this one's mappings over it, for every
    reader of robot files (body, servo model, channel map); cycles and bad bases are one
    line naming the file."""
    from snake_driver.calibration import load_servo_map
    from snake_dynamics.servo import NOMINAL, ServoModel

    base = ROOT / "config/robot_feedback.yaml"  # itself an overlay on robot.yaml
    overlay = tmp_path / "tuned.yaml"
    overlay.write_text(f"base: {base}\nservo:\n  defaults: {{dead_time: 0.02}}\n")
    model = sd.SnakeModel.from_yaml(overlay)
    plain = sd.SnakeModel.from_yaml(ROOT / "config/robot.yaml")
    assert np.array_equal(model.masses, plain.masses) and model.name == plain.name
    servo = ServoModel.from_yaml(overlay, model.joint_names)
    assert servo.joints[0].dead_time == 0.02
    assert servo.joints[0].stall_torque == NOMINAL.stall_torque  # kept from the base
    _, servos = load_servo_map(overlay)
    assert [c.channel for c in servos.channels] == list(range(8))  # robot.yaml's map
    assert all(c.feedback is not None for c in servos.channels)  # robot_feedback's pots
    # a relative base is found beside the overlay
    (tmp_path / "copy.yaml").write_text((ROOT / "config/robot.yaml").read_text())
    (tmp_path / "relative.yaml").write_text("base: copy.yaml\nmodel: {name: other}\n")
    relative = sd.SnakeModel.from_yaml(tmp_path / "relative.yaml")
    assert relative.name == "other" and np.array_equal(relative.masses, plain.masses)
    (tmp_path / "a.yaml").write_text("base: b.yaml\n")
    (tmp_path / "b.yaml").write_text("base: a.yaml\n")
    with pytest.raises(sd.ModelError, match="nested base"):
        sd.SnakeModel.from_yaml(tmp_path / "a.yaml")
    (tmp_path / "bad.yaml").write_text("base: 3\n")
    with pytest.raises(sd.ModelError, match=r"bad\.yaml: base must be the path"):
        sd.SnakeModel.from_yaml(tmp_path / "bad.yaml")
    (tmp_path / "gone.yaml").write_text("base: nowhere.yaml\n")
    with pytest.raises(sd.ModelError, match=r"nowhere\.yaml: cannot read robot file"):
        sd.SnakeModel.from_yaml(tmp_path / "gone.yaml")
