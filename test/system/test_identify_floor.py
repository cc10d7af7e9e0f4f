"""The floor stage of ``snake identify`` without the firmware: the emulated pose sensor's
datagrams received (unreadable ones counted), the poses put on the robot's clock in the
crawl's bag and read back checked (rejected by reason, never fitted), which plant each
stage runs on, a plant drawn on a floor, and one-line refusals. The run through the ELF is
test_identify.py's random plant."""

from __future__ import annotations

import dataclasses
import socket
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml
from support.cli import snake
from support.waits import wait_for

from snake_bringup.identification.commands import default_robot
from snake_bringup.identification.experiment import IdentifyError, Take
from snake_bringup.identification.floor import crawl, stage_plants
from snake_bringup.identification.poses import PoseListener, crawl_recording
from snake_bringup.identification.recording import write_bag
from snake_driver.calibration import load_servo_map
from snake_driver.link import Measurement
from snake_driver.protocol import Counters, Flag
from snake_dynamics.model import SnakeModel
from snake_dynamics.sim.plant import (
    FLOOR_RANGES,
    MIN_ANISOTROPY,
    TABLE_WIDTH,
    load_plant,
    random_plant,
)
from snake_dynamics.sim.pose_sensor import DATAGRAM, PoseReading, encode
from snake_ros.paths import robot_config

ROBOT = robot_config("robot_feedback")
FLAT = np.array([0.0, 0.0, 0.0, 1.0])


def _reading(frame: int, t: float, x: float, quaternion: np.ndarray = FLAT) -> PoseReading:
    return PoseReading(frame, t, np.array([x, 0.5 * x, 0.03]), quaternion)


def test_the_listener_keeps_pose_datagrams_and_counts_the_others() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with (
        PoseListener(port) as listener,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as out,
    ):
        nan = DATAGRAM.pack(b"POSE", 3, 0.03, float("nan"), 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
        for data in (encode(_reading(1, 0.01, 0.1)), b"junk", nan, encode(_reading(2, 0.02, 0.2))):
            out.sendto(data, ("127.0.0.1", port))
        got: list[PoseReading] = []

        def two() -> bool:
            got.extend(listener.take())
            return len(got) == 2

        wait_for(two, 10.0, "two poses")
        wait_for(lambda: listener.unreadable == 2, 10.0, "two unreadable datagrams")
    assert [r.frame for r in got] == [1, 2] and got[1].position[0] == pytest.approx(0.2)


def _report(mcu_us: int, stamp: float | None, angle: float) -> Measurement:
    names = [f"joint_{k}" for k in range(1, 9)]
    return Measurement(
        stamp,
        mcu_us,
        dict.fromkeys(names, angle),
        dict.fromkeys(names, 1500),
        Flag(0),
        0,
        Counters(*([0] * len(dataclasses.fields(Counters)))),
    )


def test_poses_go_on_the_robot_clock_and_bad_ones_are_rejected(tmp_path: Path) -> None:
    """Reports every 20 ms of MCU time from 5.0 s, the host mapping stretched (an emulator
    falling behind); poses every 10 ms of the sensor's time: each pose lands at the robot
    clock's origin plus its sample time, whatever the host did. A pose with a quaternion
    that is not unit and one older than the last are rejected and counted; the orientation
    of the first pose is kept (a rolled robot)."""
    _, servos = load_servo_map(ROBOT)
    mcu = [5_000_000 + 20_000 * k for k in range(60)]
    reports = [_report(m, None if k == 0 else 100.0 + 0.03 * k, 0.0) for k, m in enumerate(mcu)]
    rolled = np.array([0.0, np.sin(0.3), 0.0, np.cos(0.3)])
    poses = [_reading(k, 5.035 + 0.01 * k, 0.001 * k, FLAT) for k in range(130)]
    poses[0] = poses[0]._replace(quaternion=rolled)
    poses.insert(40, _reading(999, 5.2, 9.0))  # older than the last: rejected
    poses.insert(70, _reading(998, 5.9, 9.0, np.array([0.0, 0.0, 0.0, 2.0])))  # not unit
    take = Take([], reports, poses)
    write_bag(tmp_path / "crawl_bag", take, servos)
    got = crawl_recording(tmp_path / "crawl_bag", servos.joint_names)
    rec = got.recording
    origin = 100.03 - 5.02  # robot time - MCU time of the first stamped report
    np.testing.assert_allclose(rec.t, origin + 1e-6 * np.array(mcu[1:]), atol=2e-9)
    assert rec.pose_t[0] == pytest.approx(origin + 5.035, abs=2e-9)
    assert rec.pose_t.size == 115 and got.outside == 15  # past the last report, 6.18 s
    assert got.rejected["not newer"] == 1 and got.rejected["not a unit quaternion"] == 1
    np.testing.assert_allclose(rec.xy[:, 1], 0.5 * rec.xy[:, 0])
    np.testing.assert_allclose(rec.orientation, rolled)
    few = Take([], reports, poses[::20])
    write_bag(tmp_path / "few_bag", few, servos)
    with pytest.raises(IdentifyError, match=r"usable poses .* is the marker tracked"):
        crawl_recording(tmp_path / "few_bag", servos.joint_names)


def test_the_servo_stage_holds_a_plant_on_a_floor(tmp_path: Path) -> None:
    names = SnakeModel.from_yaml(ROBOT).joint_names
    floor = robot_config("plant_floor")
    held, on_floor = stage_plants(None, floor, names, tmp_path)
    assert on_floor == floor and load_plant(held, names).ground is None
    assert load_plant(held, names).servo.joints == load_plant(floor, names).servo.joints
    assert stage_plants(False, floor, names, tmp_path)[1] is None
    fixed = robot_config("plant")
    assert stage_plants(None, fixed, names, tmp_path) == (fixed, None)
    with pytest.raises(IdentifyError, match="no ground"):
        stage_plants(True, fixed, names, tmp_path)
    blind = tmp_path / "blind.yaml"
    blind.write_text(yaml.safe_dump({"base": str(floor), "pose_sensor": None}))
    with pytest.raises(IdentifyError, match="without a pose_sensor"):
        stage_plants(None, blind, names, tmp_path)


def test_a_plant_on_a_floor_is_identified_with_the_table_robot(tmp_path: Path) -> None:
    """Unless told, ``snake identify`` predicts a plant on a floor with robot_table (its
    bodies' flat undersides, as the plant's); a fixed-tail plant or a real robot with
    robot_feedback."""
    assert default_robot(robot_config("plant_floor"), real=False) == "robot_table"
    assert default_robot(robot_config("plant"), real=False) == "robot_feedback"
    assert default_robot(None, real=False) == "robot_feedback"
    assert default_robot(robot_config("plant_floor"), real=True) == "robot_feedback"
    # an earlier run's bags: the robot that run used, from its overlay's base
    earlier = tmp_path / "identify-earlier"
    earlier.mkdir()
    assert default_robot(None, real=False, from_bags=earlier) == "robot_feedback"
    table_file = robot_config("robot_table")
    (earlier / "robot_identified.yaml").write_text(yaml.safe_dump({"base": str(table_file)}))
    assert default_robot(None, real=False, from_bags=earlier) == str(table_file)
    table = SnakeModel.from_yaml(robot_config("robot_table")).ground
    names = SnakeModel.from_yaml(ROBOT).joint_names
    plant = load_plant(robot_config("plant_floor"), names).ground
    assert table is not None and plant is not None and table.width == plant.width > 0.0


def test_a_crawl_starts_and_ends_at_rest() -> None:
    model = SnakeModel.from_yaml(ROBOT)
    gait = crawl(model, "serpenoid", {"amplitude": 0.8, "frequency": 0.6}, 3.0)
    assert np.all(gait.evaluate(0.0).q == 0.0) and np.all(gait.evaluate(3.0).q == 0.0)
    assert np.abs(gait.evaluate(1.5).q).max() > 0.5
    with pytest.raises(IdentifyError, match="--crawl-time"):
        crawl(model, "serpenoid", {}, 0.8)


def test_a_random_floor_lies_within_its_ranges_and_keeps_the_servo() -> None:
    for seed in range(200):
        doc = random_plant(np.random.default_rng(seed), floor=True)
        ground = doc["ground"]
        assert isinstance(ground, dict)
        along, across = ground["mu_along"], ground["mu_across"]
        assert FLOOR_RANGES["mu_along"][0] <= along <= FLOOR_RANGES["mu_along"][1]
        assert FLOOR_RANGES["mu_across"][0] <= across <= FLOOR_RANGES["mu_across"][1]
        assert across >= MIN_ANISOTROPY * along
        assert ground["width"] == TABLE_WIDTH  # the table robot's bodies
        assert doc["servo"] == random_plant(np.random.default_rng(seed))["servo"]


def _snake(*args: str) -> subprocess.CompletedProcess[str]:
    """``snake identify args...`` in this process's environment."""
    return snake("identify", *args, timeout=600, env=None)


def test_the_floor_stage_refuses_in_one_line(tmp_path: Path) -> None:
    """Before any robot starts: --floor on a real robot (its poses are not read yet), and
    a plant on a floor without a pose sensor."""
    done = _snake("--floor", "--port", "/dev/null", "-o", str(tmp_path / "a"))
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "emulated pose sensor only" in done.stderr
    blind = tmp_path / "blind.yaml"
    floor = str(robot_config("plant_floor"))
    blind.write_text(yaml.safe_dump({"base": floor, "pose_sensor": None}))
    done = _snake("--emulate", "--plant", str(blind), "-o", str(tmp_path / "b"))
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "without a pose_sensor" in done.stderr
