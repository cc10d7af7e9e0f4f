"""End to end: `snake hardware --emulate` (gait_node -> driver_node -> the real ATmega2560
ELF in simavr -> /measured/joint_states) over the pty, and over TCP and UDP through socat.

The measured joints must follow the commands with the lag the servo path predicts: the
driver sends the newest command every 20 ms and the firmware moves to it linearly over
one 20 ms period (PROTOCOL.md), so a command sampled at a random phase is reached 20 to
40 ms after it was published, plus a few ms of transport; the gait (0.5 rad at 0.5 Hz,
at most 90 deg/s) stays far below the servo model's 600 deg/s, so slew adds nothing.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")
from sensor_msgs.msg import JointState  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("avr-gcc", "socat")), reason="needs gcc-avr and socat"
)


def stamp(msg: JointState) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def best_lag(commands: list[JointState], measured: list[JointState]) -> tuple[float, float]:
    """The delay [s] that best aligns measured with commanded joint_2 (a yaw joint), and the
    RMS error [rad] at that delay."""
    tc = np.array([stamp(m) for m in commands])
    qc = np.array([m.position[1] for m in commands])
    tm = np.array([stamp(m) for m in measured])
    qm = np.array([m.position[1] for m in measured])
    inside = (tm > tc[0] + 0.2) & (tm < tc[-1])
    lags = np.arange(0.0, 0.15, 0.001)
    rms = [
        np.sqrt(np.mean((qm[inside] - np.interp(tm[inside] - lag, tc, qc)) ** 2)) for lag in lags
    ]
    i = int(np.argmin(rms))
    return float(lags[i]), float(rms[i])


@pytest.mark.parametrize("transport", ["serial", "tcp", "udp"])
def test_measured_joints_follow_the_gait_with_the_predicted_servo_lag(
    transport: str, tmp_path: Path, private_ros_domain: int
) -> None:
    env = {
        **os.environ,
        "ROS_LOG_DIR": str(tmp_path / "log"),
        "AMENT_PREFIX_PATH": sys.prefix,
    }
    snake = Path(sys.executable).parent / "snake"
    if not snake.exists():
        pytest.skip("the package is not installed in this environment (make test installs it)")
    proc = subprocess.Popen(
        [
            str(snake),
            "hardware",
            "--emulate",
            "--transport",
            transport,
            "--gait",
            "serpenoid",
            "--no-rviz",
            "-q",
            "--duration",
            "40",
            "-o",
            str(tmp_path / "run"),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("e2e_observer", context=context)
    commands: list[JointState] = []
    measured: list[JointState] = []
    node.create_subscription(JointState, "/joint_commands", commands.append, 100)
    node.create_subscription(JointState, "/measured/joint_states", measured.append, 100)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        deadline = time.monotonic() + 40.0
        while time.monotonic() < deadline and len(measured) < 50:  # started and connected
            executor.spin_once(timeout_sec=0.05)
        measured.clear()
        commands.clear()
        end = time.monotonic() + 5.0
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert len(measured) > 150, f"{len(measured)} measurements in 5 s over {transport}\n{out}"
    lag, rms = best_lag(commands, measured)
    print(
        f"{transport}: lag {lag * 1e3:.0f} ms, RMS {np.degrees(rms):.3f} deg, {len(measured)} msgs"
    )
    assert 0.015 <= lag <= 0.060, f"lag {lag * 1e3:.0f} ms over {transport}"
    assert rms < np.radians(1.0), f"RMS {np.degrees(rms):.2f} deg after the lag over {transport}"
    assert "exit status 0" in out and "Traceback" not in out, out
    # the parameter files (an auth_key may be among them) are the owner's alone
    params = list((tmp_path / "run" / "params").glob("*.yaml"))
    assert params and all(f.stat().st_mode & 0o077 == 0 for f in params), params
