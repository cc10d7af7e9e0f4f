"""``rosdep install`` on a ROS 2 workstation: every key package.xml declares that is not a ROS
package resolves on Debian 12 and Ubuntu 24.04, through ROS's rosdep database or through
``rosdep/mfm_snake.yaml`` (the rules that database lacks). The real ``rosdep`` resolves the
file, offline: its sources are this file alone and its distribution index is empty."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "rosdep" / "mfm_snake.yaml"
#: Keys ROS's rosdep database defines for both platforms (ros/rosdistro rosdep/python.yaml,
#: commit 000730dc5f916eb05b15d3f183bd1c17bf1b4722, read 2026-11-27): package.xml's other
#: ``python3-*`` keys need a rule in rosdep/mfm_snake.yaml.
UPSTREAM = {
    "python3-numpy",
    "python3-scipy",
    "python3-yaml",
    "python3-serial",
    "python3-matplotlib",
    "python3-websockets",
    "python3-sqlalchemy",
    "python3-pytest",
    "python3-hypothesis",
}
#: Where it resolves: rosdep's ``--os`` names (ROS 2 Jazzy and Kilted run on Ubuntu noble).
PLATFORMS = ("debian:bookworm", "ubuntu:noble")


def declared_keys() -> set[str]:
    """package.xml's run and test dependencies that are system packages, not ROS packages."""
    root = ET.parse(ROOT / "package.xml").getroot()
    names = {e.text or "" for tag in ("exec_depend", "test_depend") for e in root.findall(tag)}
    return {name for name in names if name.startswith("python3-")}


@pytest.fixture(scope="module")
def rosdep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A rosdep cache built from rosdep/mfm_snake.yaml alone; returns its ROS_HOME."""
    home = tmp_path_factory.mktemp("ros_home")
    sources = home / "sources.list.d"
    sources.mkdir()
    (sources / "10-mfm_snake.list").write_text(f"yaml {RULES.as_uri()}\n")
    index = home / "index-v4.yaml"
    index.write_text("%YAML 1.1\n---\ndistributions: {}\ntype: index\nversion: 4\n")
    run_rosdep(home, "update")
    return home


def run_rosdep(home: Path, *args: str) -> str:
    env = {
        **os.environ,
        "ROS_HOME": str(home),
        "ROSDEP_SOURCE_PATH": str(home / "sources.list.d"),
        "ROSDISTRO_INDEX_URL": (home / "index-v4.yaml").as_uri(),
        "ROS_DISTRO": "kilted",
    }
    command = [str(Path(sys.executable).with_name("rosdep")), *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"rosdep {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout


def test_every_system_key_is_upstream_s_or_has_a_rule_here() -> None:
    rules = yaml.safe_load(RULES.read_text())
    keys = declared_keys()
    assert keys >= UPSTREAM | {"python3-optuna", "python3-rosbags-pip"}  # the scan sees them
    assert keys - UPSTREAM <= set(rules), sorted(keys - UPSTREAM - set(rules))
    assert set(rules) <= keys, sorted(set(rules) - keys)  # no rule for a key not declared


@pytest.mark.parametrize("platform", PLATFORMS)
def test_each_rule_resolves_to_an_apt_package_or_pip(rosdep: Path, platform: str) -> None:
    rules = yaml.safe_load(RULES.read_text())
    out = run_rosdep(rosdep, "resolve", *sorted(rules), f"--os={platform}")
    resolved: dict[str, tuple[str, str]] = {}
    lines = iter(out.splitlines())
    for key_line in lines:
        installer, packages = next(lines), next(lines)
        resolved[key_line.removeprefix("#ROSDEP[").removesuffix("]")] = (installer, packages)
    assert set(resolved) == set(rules)
    assert resolved["python3-rosbags-pip"] == ("#pip", "rosbags")
    assert resolved["python3-mujoco-pip"] == ("#pip", "mujoco")
    pip = {"python3-rosbags-pip", "python3-mujoco-pip"}
    if platform == "ubuntu:noble":  # no python3-numba in Ubuntu 24.04 (docs/setup.md)
        assert resolved["python3-numba"] == ("#pip", "numba")
        pip.add("python3-numba")
    for key in set(rules) - pip:
        assert resolved[key] == ("#apt", key), key
