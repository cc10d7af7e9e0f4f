"""The library examples of README run as a user runs them, and print what Pinocchio computes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from snake_dynamics import SnakeModel
from snake_dynamics.urdf import to_urdf

ROOT = Path(__file__).resolve().parents[2]


def run_example(name: str, *args: str) -> str:
    """Runs ``examples/<name>`` from another folder (as a user would), returns its output."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("robot", ["robot.yaml", "snake20.yaml", "robot_ground.yaml"])
def test_inverse_dynamics_example_prints_pinocchios_torques(robot: str) -> None:
    """The torques it prints are Pinocchio's RNEA on the URDF of the same robot, at the
    example's state (to its 5 printed decimals; with gravity on robot_ground.yaml), and its
    own checks report agreement."""
    pin = pytest.importorskip("pinocchio")
    text = run_example("inverse_dynamics.py", str(ROOT / "config" / robot))
    model = SnakeModel.from_yaml(ROOT / "config" / robot)
    n = model.n_joints
    printed = dict(re.findall(r"^(joint_\d+): tau = ([+-]\d+\.\d+) N m$", text, re.M))
    assert list(printed) == model.joint_names
    pm = pin.buildModelFromXML(to_urdf(model))
    pm.gravity.linear[:] = model.gravity
    q, q_dot, q_ddot = np.linspace(-0.4, 0.4, n), np.full(n, 0.5), np.ones(n)
    want = pin.rnea(pm, pm.createData(), q, q_dot, q_ddot)
    got = np.array([float(printed[name]) for name in model.joint_names])
    np.testing.assert_allclose(got, want, rtol=0, atol=5.1e-6)
    back = float(re.search(r"q_ddot back to (\S+) rad/s\^2", text).group(1))  # type: ignore[union-attr]
    agree = float(re.search(r"recursion agrees to (\S+) N m", text).group(1))  # type: ignore[union-attr]
    assert back < 1e-9 and agree < 1e-9
