"""End to end: the emulated robot on the table (config/plant_floor.yaml) crawls under the real
ATmega2560 ELF in simavr, and its pose sensor's readings reach the graph as
geometry_msgs/PoseStamped on /measured/pose (`snake hardware --emulate --plant plant_floor`:
plant process -> UDP -> pose_sensor_node).

Counts are held against the sensor's own statistics over an interval of the robot's clock
(the graph's, which the messages are stamped on), never against the wall clock.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from snake_bringup.process import ROBOT_RT_PRIORITY
from snake_dynamics.sim import load_plant
from snake_ros.paths import robot_config

rclpy = pytest.importorskip("rclpy")
from geometry_msgs.msg import PoseStamped  # noqa: E402
from support.nodes import Observer  # noqa: E402

pytestmark = [
    pytest.mark.ros,
    pytest.mark.simavr,
    pytest.mark.skipif(not shutil.which("avr-gcc"), reason="needs gcc-avr and simavr"),
]

JOINTS = [f"joint_{k}" for k in range(1, 9)]


def stamp(msg: PoseStamped) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def test_the_crawling_robot_s_pose_arrives_at_the_sensor_s_rate(
    tmp_path: Path, private_ros_domain: int
) -> None:
    sensor = load_plant(robot_config("plant_floor"), JOINTS).pose_sensor
    assert sensor is not None
    snake = Path(sys.executable).parent / "snake"
    if not snake.exists():
        pytest.skip("the package is not installed in this environment (make test installs it)")
    env = {
        **os.environ,
        "ROS_LOG_DIR": str(tmp_path / "log"),
        "AMENT_PREFIX_PATH": sys.prefix,
        "SNAKE_ROBOT_PRIORITY": "raised",  # the default, whatever the caller's environment
    }
    args = ["hardware", "--emulate", "--plant", "plant_floor", "--gait", "serpenoid"]
    args += ["--no-rviz", "-q", "--duration", "40", "-o", str(tmp_path / "run")]
    proc = subprocess.Popen(
        [str(snake), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    wanted = round(6.0 * sensor.rate)  # 6 s of the robot's clock, the gait ramping in first
    try:
        with Observer("pose_observer") as observer:
            poses = observer.received(PoseStamped, "/measured/pose")
            observer.spin_while_up(
                proc,
                lambda: len(poses) >= wanted,
                time.monotonic() + 120.0,
                lambda: f"{len(poses)} poses on /measured/pose",
            )
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert {m.header.frame_id for m in poses} == {"world"}
    t = np.array([stamp(m) for m in poses])
    assert np.all(np.diff(t) > 0.0)
    # stamped at their sample times plus the least delay seen, slewed down half a sample
    # spacing per reading when a lower one turns up: consecutive stamps lie whole sensor
    # periods apart, or half-whole while slewing (after a late start: the first readings
    # wait in the socket while the node starts), whatever the arrivals' jitter (stamps on
    # arrival would scatter by milliseconds); only the step that ends a slew falls between
    periods = np.diff(t) * sensor.rate
    on_grid = np.abs(2.0 * periods - np.round(2.0 * periods)) < 2e-3
    assert on_grid.mean() > 0.95, periods[~on_grid]
    # a lower least delay is taken at most half a sample spacing per reading: never closer
    assert np.all(periods > 0.5 - 1e-3), periods[periods <= 0.5 - 1e-3]
    # samples taken in the stamps' span: rate x span x (1 - dropout), give or take the
    # dropout chain's 5 sigma and one sample at either end (stamps follow arrivals)
    span = t[-1] - t[0]
    d, big_l = sensor.dropout, sensor.dropout_burst
    lam = 1.0 - sensor.enter_dropout - 1.0 / big_l
    samples = sensor.rate * span
    sd = math.sqrt(samples * d * (1 - d) * (1 + lam) / (1 - lam))
    expected = samples * (1 - d)
    print(f"{len(poses)} poses over {span:.3f} s of the robot's clock, expected {expected:.1f}")
    assert abs(len(poses) - expected) < 5 * sd + 2
    xyz = np.array([[m.pose.position.x, m.pose.position.y, m.pose.position.z] for m in poses])
    # the marker on the tail's CM, lying on the table (radius 35 mm) and carried forward
    assert np.abs(xyz[:, 2] - 0.035).max() < 0.003 + 5 * sensor.position_noise
    travel = xyz[-20:, :2].mean(axis=0) - xyz[:20, :2].mean(axis=0)
    print(f"the tail travelled {np.linalg.norm(travel) * 1e3:.1f} mm; plant: {out.strip()[-200:]}")
    assert np.linalg.norm(travel) > 0.005
    q = np.array([[m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z,
                   m.pose.orientation.w] for m in poses])  # fmt: skip
    assert np.abs(np.linalg.norm(q, axis=1) - 1.0).max() < 1e-9
    # the emulated robot took the CPU first where the user may (root here and in CI), as a
    # real robot has a processor of its own (test_demo's robot keeps the normal priority)
    assert "PLANT end" in out, out[-2000:]
    if os.geteuid() == 0:
        assert f"priority=rr:{ROBOT_RT_PRIORITY}" in out, out[-2000:]
