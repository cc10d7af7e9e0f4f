"""A snake whose links bend: the robot config's ``elastic:`` section (docs/flexible.md,
"Elastic snake links").

References: the rigid body each elastic link replaces (its mass, centre of mass and
inertia, from the config's model: section); Euler-Bernoulli's tip deflection of a uniform
cantilever under its own weight, w = q L^4 / (8 E I); the rigid MFM snake
(snake_dynamics.mfm.integrators.simulate_gait) under the same gait and servo gains, which
the elastic snake must follow as its links grow stiff.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from snake_bringup.cli import main
from snake_dynamics import SnakeModel, make_gait
from snake_dynamics.errors import ModelError
from snake_dynamics.flexible import FlexibleModel
from snake_dynamics.flexible.model import PLA, ElasticLink, rigid_arm_inertias
from snake_dynamics.flexible.snake import (
    LinkDeflections,
    arm_from_snake,
    elastic_arm,
    link_axes,
    simulate_elastic,
    tip_deflections,
)
from snake_dynamics.mfm.integrators import simulate_gait
from snake_dynamics.robot import Robot

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "config" / "robot_elastic.yaml"
#: The servo gains of snake simulate's hint (snake_bringup.cli.simulate.SERVO_HINT).
KP, KD = 2.0, 0.05


def overlay(tmp_path: Path, **sections: Any) -> Robot:
    """robot_elastic.yaml with ``sections`` laid over it, as a file of its own."""
    path = tmp_path / "elastic.yaml"
    path.write_text(yaml.safe_dump({"base": str(CONFIG), **sections}), encoding="utf-8")
    return Robot.load(path)


def test_the_config_bends_links_5_and_6_and_keeps_each_body() -> None:
    robot = Robot.load(CONFIG)
    arm = elastic_arm(robot)
    assert arm is not None
    kinds = [type(link).__name__ for link in arm.links]
    assert kinds == ["RigidLink"] * 4 + ["ElasticLink"] * 2 + ["RigidLink"] * 2
    assert arm.n == 8 + 2 * 5
    model = robot.model
    for k, (mass, com, inertia) in enumerate(rigid_arm_inertias(arm), start=1):
        c = link_axes(model.axes[k - 1])
        assert mass == pytest.approx(model.masses[k], rel=1e-12)
        assert np.allclose(com, [model.lengths[k] / 2, 0.0, 0.0], rtol=0, atol=1e-15)
        assert np.allclose(inertia, c.T @ model.inertias[k] @ c, rtol=0, atol=1e-15)
    link = arm.links[4]
    assert isinstance(link, ElasticLink)
    assert link.material == PLA
    assert link.mass == pytest.approx(1240.0 * 0.024 * 0.008 * 0.150)  # the spine, 35.7 g


def test_the_rigid_configs_have_no_elastic_links() -> None:
    for name in ("robot", "paper_3d", "snake20"):
        assert elastic_arm(Robot.load(ROOT / "config" / f"{name}.yaml")) is None


LINK_5 = {"material": "PLA", "section": {"width": 0.024, "height": 0.008}}


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"link_5": {**LINK_5, "material": {"young": -3.5e9, "shear": 1.3e9, "density": 1240}}},
         "elastic.link_5.material.young must be a finite number > 0 Pa, got -3500000000.0"),
        ({"link_5": {**LINK_5, "modes": {"xy": 0}}},
         "elastic.link_5.modes.xy must be a whole number of modes >= 1, got 0"),
        ({"link_5": {**LINK_5, "boundary": "pinned-free"}},
         "elastic.link_5.boundary must be one of clamped-free, clamped-mass, got 'pinned-free'"),
        ({"link_9": LINK_5}, "elastic.link_9: no such body (the links are link_1 .. link_8"),
        ({"tail": LINK_5}, "elastic.tail: no such body"),
        ({"link_5": {**LINK_5, "material": "steel"}},
         "elastic.link_5.material must be one of aluminium, PLA or a mapping"),
        ({"link_4": {**LINK_5, "section": {"width": 0.024}}},
         "elastic.link_4.section must be {width, height} (a rectangle) or {outer_diameter, wall}"),
        ({"link_5": {**LINK_5, "section": {"width": 0.1, "height": 0.02}}},
         "elastic.link_5: the beam (0.372 kg) is heavier than the body (0.11 kg)"),
        ({"link_5": {**LINK_5, "modes": {"bending": 2}}},
         "elastic.link_5.modes: unknown kind 'bending'"),
        ({"link_5": {**LINK_5, "colour": "red"}}, "elastic.link_5: unknown key 'colour'"),
    ],
)  # fmt: skip
def test_a_bad_entry_is_one_line_naming_the_file_and_the_key(
    tmp_path: Path, entry: dict[str, Any], says: str
) -> None:
    robot = overlay(tmp_path, elastic=entry)
    with pytest.raises(ModelError) as info:
        elastic_arm(robot)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{robot.path}: ")
    assert says in message


def test_a_floating_snake_with_elastic_links_is_refused_in_one_line(tmp_path: Path) -> None:
    robot = overlay(tmp_path, model={"base": "floating"})
    with pytest.raises(ModelError, match=r"elastic\.yaml: elastic: .* not supported yet$"):
        elastic_arm(robot)


@pytest.mark.parametrize(("modes", "within"), [(1, 2e-2), (3, 5e-4)])
def test_a_cantilever_snake_sags_as_euler_bernoulli_says(modes: int, within: float) -> None:
    # one 0.3 m PLA strip on a fixed tail, its joint pitching (e1), under gravity; its
    # body's mass is the strip's alone (no payload): w = rho A g L^4 / (8 E I)
    length, width, height = 0.3, 0.024, 0.008
    mass = PLA.density * (height * width) * length
    snake = SnakeModel(
        masses=np.array([1.0, mass]),
        lengths=np.array([0.1, length]),
        radii=np.array([0.03, 0.02]),
        axes=np.array([[1.0, 0.0, 0.0]]),
        gravity=np.array([0.0, 0.0, -9.81]),
    )
    beam = {"material": "PLA", "section": {"width": width, "height": height},
            "modes": {"torsion": 1, "xy": modes, "xz": 1}}  # fmt: skip
    arm = arm_from_snake(snake, {"link_1": beam}, "cantilever.yaml")
    q = FlexibleModel(arm).static_deflection(np.zeros(1))
    twist, up, across = tip_deflections(arm, q)[0, 0]
    second_moment = width * height**3 / 12.0
    expected = PLA.density * width * height * 9.81 * length**4 / (8 * PLA.young * second_moment)
    assert expected == pytest.approx(0.66e-3, rel=0.01)  # 0.66 mm
    assert abs(-up / expected - 1.0) < within
    assert twist == 0.0 and across == 0.0
    # one mode is off by 0.9 %, three by 1.6e-4, as Rayleigh-Ritz converges
    assert abs(-up / expected - 1.0) > within / 100
    # the shape a view draws (F119), and the quasi-static deflection at rest (F118)
    bends = LinkDeflections(snake, arm)
    modal = bends.quasi_static(np.zeros(1), np.zeros(1), np.zeros(1))
    assert np.allclose(modal, q[1:], rtol=1e-6, atol=0.0)
    shape = bends.shapes(modal)[0]
    x = shape[:, 0]
    curve = -expected * x**2 * (6 * length**2 - 4 * length * x + x**2) / (3 * length**4)
    assert np.abs(shape[:, 2] - curve).max() < 2 * within * expected
    assert shape[-1, 2] == pytest.approx(up, rel=1e-12)


def stiffer(scale: float) -> dict[str, Any]:
    material = {"young": PLA.young * scale, "shear": PLA.shear * scale, "density": PLA.density}
    return {name: {**LINK_5, "material": material} for name in ("link_5", "link_6")}


def test_stiff_links_move_as_the_rigid_snake(tmp_path: Path) -> None:
    # E and G x 100: the elastic frequencies x 10, the static deflections / 100
    duration, dt = 0.2, 0.001
    robot = Robot.load(CONFIG)
    gait = make_gait("cobra", robot.model)
    rigid = simulate_gait(robot.model, gait, duration, dt, stiffness=KP, damping=KD)
    gaps = []
    for scale in (1.0, 100.0):
        arm = elastic_arm(overlay(tmp_path, elastic=stiffer(scale)))
        assert arm is not None
        run = simulate_elastic(robot.model, arm, gait, duration, dt, stiffness=KP, damping=KD)
        assert run.joints.q.shape == rigid.q.shape
        gaps.append(float(np.abs(run.joints.q - rigid.q).max()))
    # measured: 2.9e-3 rad at PLA's stiffness, 4.0e-5 rad at 100 x (3.2e-4 at 10 x,
    # 3.0e-6 at 1000 x: about as 1/E)
    assert gaps[1] < 1e-4 < 1e-3 < gaps[0]


def test_snake_simulate_writes_the_deflections(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    status = main([
        "simulate", "--robot", str(CONFIG), "--gait", "cobra", "--duration", "0.1",
        "--servo-stiffness", str(KP), "--servo-damping", str(KD), "--no-plots", "-q",
        "-o", str(out),
    ])  # fmt: skip
    assert status == 0
    printed = capsys.readouterr().out
    assert "link_5: tip deflection up to" in printed and "link_6: tip deflection" in printed
    data = np.load(out / "deflections.npz")
    assert data["tip_names"].tolist() == ["link_5", "link_6"]
    assert data["modal_names"].tolist()[:5] == [
        "link_5/torsion_1", "link_5/xy_1", "link_5/xy_2", "link_5/xz_1", "link_5/xz_2",
    ]  # fmt: skip
    assert data["tips"].shape == (101, 2, 3) and data["modal"].shape == (101, 10)
    # the cobra's lifted links sag under the head: millimetres, not microns or metres
    sag = np.abs(data["tips"][:, 0, 1]).max()
    assert 1e-4 < sag < 1e-2
    assert np.load(out / "run.npz")["q"].shape == (101, 8)


def test_snake_simulate_refuses_a_floating_elastic_snake(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    robot = overlay(tmp_path, model={"base": "floating"})
    status = main(["simulate", "--robot", str(robot.path), "--duration", "0.01", "-q",
                   "--no-plots", "-o", str(tmp_path / "run")])  # fmt: skip
    assert status != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not supported yet" in err[0] and "elastic.yaml" in err[0]
