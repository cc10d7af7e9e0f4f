"""End to end: `snake hardware --emulate` (gait_node -> driver_node -> the real ATmega2560
ELF in simavr -> /measured/joint_states) over the pty, and over UDP through socat. TCP takes
the same path through `snake hardware` (the emulator's bridge is the transport's name);
DriverLink over each socat bridge is test_emulator.py's, driver_node over TCP
test_driver_node.py's.

The measured joints must follow the commands: the same shape and amplitude, late by at
least the servo path's interpolation (the driver sends the newest command every 20 ms and
the firmware moves to it linearly over one 20 ms period, PROTOCOL.md: a command is reached
20 to 40 ms after it was published, plus transport). How late exactly depends on how busy
the machine is: that figure is a benchmark (bench/driver.py), not an assertion here.
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
from support.nodes import Observer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.ros,
    pytest.mark.simavr,
    pytest.mark.skipif(
        not all(shutil.which(t) for t in ("avr-gcc", "socat")), reason="needs gcc-avr and socat"
    ),
]


def stamp(msg: JointState) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def best_lag(commands: list[JointState], measured: list[JointState]) -> tuple[float, float, float]:
    """The delay [s] that best aligns measured with commanded joint_2 (a yaw joint), the
    RMS error [rad] and the correlation of the two at that delay."""
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
    late = np.interp(tm[inside] - lags[i], tc, qc)
    return float(lags[i]), float(rms[i]), float(np.corrcoef(qm[inside], late)[0, 1])


@pytest.mark.parametrize("transport", ["serial", "udp"])
def test_measured_joints_follow_the_gait_with_the_predicted_servo_lag(
    transport: str, tmp_path: Path, private_ros_domain: int
) -> None:
    """Over the pty the run also writes nothing outside its output folder (with
    ``--dynamics``, started in an empty folder with an empty home): the logs, compare_node's
    report and the nodes' ROS log files are under it; outside it only the emulated robot's
    EEPROM (``$ROS_HOME/mfm_snake``: the robot's own memory across runs, its boot counter,
    as a real robot keeps its EEPROM) and matplotlib's caches. One bring-up checks both."""
    isolated = transport == "serial"
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    if isolated:
        unset = ("ROS_LOG_DIR", "ROS_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "MPLCONFIGDIR")
        env = {k: v for k, v in os.environ.items() if k not in unset}
        env |= {"HOME": str(home), "AMENT_PREFIX_PATH": sys.prefix}
    else:
        env = {**os.environ, "ROS_LOG_DIR": str(tmp_path / "log"), "AMENT_PREFIX_PATH": sys.prefix}
    snake = Path(sys.executable).parent / "snake"
    if not snake.exists():
        pytest.skip("the package is not installed in this environment (make test installs it)")
    out_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [
            str(snake),
            "hardware",
            "--emulate",
            "--transport",
            transport,
            "--gait",
            "serpenoid",
            *(["--dynamics"] if isolated else []),
            "--no-rviz",
            "-q",
            "--duration",
            "40",
            "-o",
            str(out_dir),
        ],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        with Observer("e2e_observer") as observer:
            commands = observer.received(JointState, "/joint_commands")
            measured = observer.received(JointState, "/measured/joint_states")
            deadline = time.monotonic() + 120.0
            for wanted in (50, 400):  # started and connected; then 4 s of 100 Hz telemetry
                if wanted == 400:
                    measured.clear()
                    commands.clear()
                observer.spin_while_up(
                    proc,
                    lambda n=wanted: len(measured) >= n,
                    deadline,
                    lambda: f"{len(measured)} measurements over {transport}",
                )
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    lag, rms, corr = best_lag(commands, measured)
    print(f"{transport}: lag {lag * 1e3:.0f} ms, RMS {np.degrees(rms):.3f} deg, r = {corr:.5f}")
    # causal and at least the interpolation; a real minimum (not the end of the search)
    assert 0.015 <= lag < 0.149, f"lag {lag * 1e3:.0f} ms over {transport}"
    assert corr > 0.99, f"measured vs commanded shape: r = {corr} over {transport}"
    q_commanded = np.array([m.position[1] for m in commands])
    q_measured = np.array([m.position[1] for m in measured])
    assert np.ptp(q_measured) == pytest.approx(np.ptp(q_commanded), rel=0.05)
    assert "exit status 0" in out and "Traceback" not in out, out
    # the parameter files (an auth_key may be among them) are the owner's alone
    params = list((out_dir / "params").glob("*.yaml"))
    assert params and all(f.stat().st_mode & 0o077 == 0 for f in params), params
    if isolated:
        assert (out_dir / "compare" / "summary.md").is_file(), sorted(out_dir.rglob("*"))
        assert list((out_dir / "ros_log").glob("*.log")) and (out_dir / "driver_node.log").is_file()
        written = sorted(
            str(p.relative_to(tmp_path))
            for folder in (home, cwd)
            for p in folder.rglob("*")
            if not p.is_dir()
        )
        allowed = {"home/.ros/mfm_snake/emulator_eeprom.bin"}
        assert [p for p in written if p not in allowed and "/matplotlib/" not in p] == []
