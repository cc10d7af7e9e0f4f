"""The ament_python package: manifest, license, data files, install layout."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import runpy
import shutil
import sys
import sysconfig
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import setuptools

ROOT = Path(__file__).resolve().parents[1]
RUN_DEPENDS = {
    "rclpy",
    "std_msgs",
    "sensor_msgs",
    "geometry_msgs",
    "visualization_msgs",
    "diagnostic_msgs",
    "std_srvs",
    "robot_state_publisher",
    "rviz2",
    "python3-numpy",
    "python3-scipy",
    "python3-serial",
    "python3-yaml",
}


def test_package_xml_is_format_3_apache_with_all_run_dependencies() -> None:
    root = ET.parse(ROOT / "package.xml").getroot()
    assert root.tag == "package" and root.get("format") == "3"
    assert root.findtext("name") == "mfm_snake"
    assert root.findtext("license") == "Apache-2.0"
    assert root.findtext("export/build_type") == "ament_python"
    declared = {e.text for e in root.findall("exec_depend")}
    assert declared >= RUN_DEPENDS, RUN_DEPENDS - declared
    assert "Apache License" in (ROOT / "LICENSE").read_text()[:200]


def test_package_xml_validates_as_format_3() -> None:
    """catkin_pkg (what rosdep and colcon read manifests with) parses and validates it with no
    warning; every dependency is a valid key name, none declared twice."""
    from catkin_pkg.package import parse_package

    warnings: list[str] = []
    package = parse_package(str(ROOT / "package.xml"), warnings=warnings)
    assert warnings == []
    assert package.package_format == 3 and package.name == "mfm_snake"
    names = [d.name for d in package.exec_depends + package.test_depends]
    assert len(names) == len(set(names)), names
    assert {"python3-rosbags-pip", "python3-hypothesis"} <= set(names)


#: Python modules the package imports -> their rosdep keys (None: no key, installed with pip
#: as README's workstation section says).
PYTHON_DEPENDS = {
    "numpy": "python3-numpy",
    "scipy": "python3-scipy",
    "yaml": "python3-yaml",
    "serial": "python3-serial",
    "matplotlib": "python3-matplotlib",
    "numba": "python3-numba",
    "websockets": "python3-websockets",
    "rosbags": "python3-rosbags-pip",
}
OWN = {"snake_dynamics", "snake_driver", "snake_viz", "snake_bringup"}


def imported_modules() -> set[str]:
    """Top-level modules imported anywhere in the package and its launch files."""
    found: set[str] = set()
    for folder in (*OWN, "launch"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    found |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - OWN


def test_every_imported_module_is_a_declared_dependency() -> None:
    root = ET.parse(ROOT / "package.xml").getroot()
    declared = {e.text for e in root.findall("exec_depend")}
    imported = imported_modules()
    assert imported >= {"rclpy", "numpy", "rosbags"}  # the scan sees the package
    unknown = imported - set(PYTHON_DEPENDS)
    # ROS packages: the Python module is the package name
    assert unknown <= declared, sorted(unknown - declared)
    keys = {PYTHON_DEPENDS[m] for m in imported & set(PYTHON_DEPENDS)}
    assert keys - {None} <= declared, sorted(keys - {None} - declared)
    assert "pip install rosbags" in (ROOT / "README.md").read_text()


def test_ros2_pkg_create_layout() -> None:
    assert (ROOT / "resource" / "mfm_snake").is_file()
    cfg = (ROOT / "setup.cfg").read_text()
    assert "script_dir=$base/lib/mfm_snake" in cfg and "install_scripts=$base/lib/mfm_snake" in cfg
    for pkg in ("snake_dynamics", "snake_driver", "snake_viz"):
        assert (ROOT / pkg / "__init__.py").is_file()


def test_core_library_imports_no_ros() -> None:
    for path in (ROOT / "snake_dynamics").glob("*.py"):
        text = path.read_text()
        assert "rclpy" not in text and "sensor_msgs" not in text, path


def test_installed_share_files_are_found_through_the_ament_index(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ament = pytest.importorskip("ament_index_python.packages")
    monkeypatch.setenv(
        "AMENT_PREFIX_PATH",
        os.pathsep.join(
            [sys.prefix]
            + [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
        ),
    )
    try:
        share = Path(ament.get_package_share_directory("mfm_snake"))
    except LookupError:
        pytest.skip("mfm_snake is not installed in this environment (make test installs it)")
    assert (share / "package.xml").is_file()
    assert (share / "config" / "robot.yaml").is_file() and (
        share / "config" / "snake20.yaml"
    ).is_file()
    for name in ("simulation", "hardware", "replay"):
        assert (share / "launch" / f"{name}.launch.py").is_file()
    assert (share / "urdf" / "snake.urdf").is_file() and (share / "rviz" / "snake.rviz").is_file()
    # the firmware sources (snake emulate builds them), without a checkout's build output
    firmware = share / "firmware"
    for source in ("Makefile", "PROTOCOL.md", "core/protocol.c", "hal/avr/main.c"):
        assert (firmware / source).is_file(), source
    assert (firmware / "tools" / "simavr_runner.c").is_file()
    # ... and no build output among the installed files (the folder may hold one since: the
    # emulator builds beside installed sources it may write to)
    (dist,) = importlib.metadata.distributions(
        name="mfm_snake", path=[sysconfig.get_path("purelib")]
    )
    installed = [str(f) for f in dist.files or ()]
    assert any("share/mfm_snake/firmware/core/app.c" in f for f in installed)
    assert not [f for f in installed if "share/mfm_snake/firmware/build/" in f]


def test_data_files_skip_stray_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """colcon copies each data_files entry as a file: a folder among them (a __pycache__ left
    under launch/ by a launch run) failed the build. setup.py lists files only."""
    for name in ("setup.py", "package.xml", "resource", "launch", "urdf", "rviz", "config"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, tmp_path / name)
    (tmp_path / "firmware" / "core").mkdir(parents=True)
    (tmp_path / "firmware" / "core" / "app.c").write_text("")
    (tmp_path / "launch" / "__pycache__").mkdir()
    (tmp_path / "launch" / "__pycache__" / "simulation.launch.cpython-311.pyc").write_bytes(b"")
    seen: dict[str, Any] = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kwargs: seen.update(kwargs))
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(tmp_path / "setup.py"))
    files = [f for _, group in seen["data_files"] for f in group]
    assert "launch/simulation.launch.py" in files and "firmware/core/app.c" in files
    assert [f for f in files if not (tmp_path / f).is_file()] == []
