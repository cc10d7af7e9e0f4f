"""The `snake` command: offline simulation output, one-line errors, the console script."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def snake(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "snake_bringup.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": tempfile.gettempdir()},
    )


def test_simulate_writes_data_plots_and_a_summary(tmp_path) -> None:
    out = tmp_path / "run"
    proc = snake(
        "simulate",
        "--robot",
        "config/robot.yaml",
        "--gait",
        "serpenoid",
        "--duration",
        "0.5",
        "-o",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    assert "tracking error commanded vs simulated" in proc.stdout
    assert "simulating 0.5 s: 100%" in proc.stderr  # progress, one line per 10% off a terminal
    names = {p.name for p in out.iterdir()}
    assert {
        "run.npz",
        "run.csv",
        "summary.json",
        "joint_angles.png",
        "torques.png",
        "energy.png",
    } <= names
    data = np.load(out / "run.npz")
    assert data["q"].shape == (501, 8) and data["t"][-1] == pytest.approx(0.5)
    commanded = np.load(out / "commanded_q.npy")
    assert np.max(np.abs(data["q"] - commanded)) < 1e-6  # the paper's loop closes
    summary = json.loads((out / "summary.json").read_text())
    assert summary["summary"]["steps"] == 500 and summary["config"]["gait"] == "serpenoid"
    header = (out / "run.csv").read_text().splitlines()[0].split(",")
    assert header[:2] == ["t", "q_joint_1"] and header[-1] == "energy"
    assert (out / "joint_angles.png").read_bytes()[:4] == b"\x89PNG"


def test_simulate_with_servo_and_gait_parameters(tmp_path) -> None:
    out = tmp_path / "run"
    proc = snake(
        "simulate",
        "--robot",
        "snake20",
        "--gait",
        "sidewinding",
        "--duration",
        "0.2",
        "--set",
        "amplitude=0.3",
        "--servo-stiffness",
        "2",
        "--servo-damping",
        "0.05",
        "--no-plots",
        "-q",
        "-o",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    config = json.loads((out / "summary.json").read_text())["config"]
    assert (
        config["gait_parameters"]["amplitude"] == 0.3
        and config["servo_stiffness_nm_per_rad"] == 2.0
    )
    assert not list(out.glob("*.png"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["simulate", "--robot", "missing.yaml"], "missing.yaml: cannot read robot file"),
        (["simulate", "--set", "amplitude=9"], "serpenoid.amplitude must be in [0, 1.5] rad"),
        (["simulate", "--set", "amplitude"], "--set expects NAME=VALUE"),
        (["simulate", "--set", "wiggle=1"], "has no parameter(s) ['wiggle']"),
        (["simulate", "--duration", "0.0105"], "whole number of --dt"),
        (["simulate", "--duration", "-1"], "expected a finite number > 0"),
        (["simulate", "--gait", "slither"], "invalid choice: 'slither'"),
    ],
)
def test_bad_arguments_give_one_line_errors_not_tracebacks(tmp_path, args, message) -> None:
    proc = (
        snake(*args, "-o", str(tmp_path / "x"), cwd=tmp_path)
        if args[0] == "simulate"
        else snake(*args)
    )
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    error_lines = [line for line in proc.stderr.splitlines() if "error" in line]
    assert len(error_lines) == 1


def test_gaits_and_urdf_commands(tmp_path) -> None:
    proc = snake("gaits")
    assert proc.returncode == 0 and "sidewinding" in proc.stdout and "phase_lag" in proc.stdout
    urdf = tmp_path / "snake.urdf"
    assert snake("urdf", "--robot", "robot", "-o", str(urdf)).returncode == 0
    assert urdf.read_text().count("<joint ") == 8


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "snake"
    if not script.exists():
        pytest.skip(
            "package not installed in this interpreter's environment (make test installs it)"
        )
    proc = subprocess.run([str(script), "gaits"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "serpenoid" in proc.stdout
