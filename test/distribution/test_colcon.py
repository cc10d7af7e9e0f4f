"""The package builds with colcon in a ROS 2 workspace (the workstation path of README)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Not the package's: the venv, build output, and the caches tests and tools write meanwhile
#: (another test, in a parallel run, adds and deletes hypothesis's files while this copies).
SKIP = shutil.ignore_patterns(
    ".venv",
    ".git",
    "build",
    "install",
    "log",
    "runs",
    "__pycache__",
    "*.egg-info",
    ".hypothesis",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
)


def test_colcon_build_installs_executables_data_and_the_ament_marker(tmp_path) -> None:
    pytest.importorskip("colcon_ros", reason="colcon is installed by requirements-dev.txt")
    shutil.copytree(ROOT, tmp_path / "src" / "mfm_snake", ignore=SKIP)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "colcon",
            "--log-base",
            "log",
            "build",
            "--packages-select",
            "mfm_snake",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    install = tmp_path / "install" / "mfm_snake"
    assert (install / "lib" / "mfm_snake" / "snake").is_file()  # where `ros2 run` looks
    share = install / "share" / "mfm_snake"
    assert (share / "package.xml").is_file()
    assert (share / "config" / "robot.yaml").is_file()
    assert (
        install / "share" / "ament_index" / "resource_index" / "packages" / "mfm_snake"
    ).is_file()
