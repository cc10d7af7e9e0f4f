"""The ament_python package: manifest, license, data files, install layout."""

from __future__ import annotations

import ast
import builtins
import importlib
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

ROOT = Path(__file__).resolve().parents[2]
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
    "dask": "python3-dask",
    "distributed": "python3-distributed",
    "optuna": "python3-optuna",
    "sqlalchemy": "python3-sqlalchemy",
    "cryptography": "python3-cryptography",
    "mujoco": "python3-mujoco-pip",
}
OWN = {"snake_dynamics", "snake_ros", "snake_driver", "snake_viz", "snake_bringup"}


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
    for pkg in sorted(OWN):
        assert (ROOT / pkg / "__init__.py").is_file()


#: What each package may import of the others: ROS-free cores at the bottom, the one ROS helper
#: layer (snake_ros) above the dynamics core, the driver and viz packages (their nodes use
#: snake_ros), bringup (graphs, runner, CLI) on top.
ALLOWED = {
    "snake_dynamics": set(),
    "snake_ros": {"snake_dynamics"},
    "snake_driver": {"snake_dynamics", "snake_ros"},
    "snake_viz": {"snake_dynamics", "snake_ros"},
    "snake_bringup": {"snake_dynamics", "snake_ros", "snake_driver", "snake_viz"},
}
#: The ROS-free cores: no rclpy, no message packages (the nodes beside them are the adapters).
ROS_FREE = [
    "snake_dynamics",
    "snake_driver/protocol",
    "snake_driver/transport.py",
    "snake_driver/link.py",
    "snake_driver/clock.py",
    "snake_driver/calibration.py",
    "snake_viz/compare.py",
    "snake_viz/compare_report.py",
    "snake_viz/bag.py",
    "snake_viz/bag_series.py",
    "snake_viz/offline.py",
    "snake_viz/defaults.py",
]


def module_imports() -> dict[str, set[str]]:
    """Module -> the package modules it imports, at run time or for typing only (absolute
    names; relative ones resolved; ``from . import fast`` is the module ``fast``, not the
    package)."""
    files = {}
    for package in OWN:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        found = graph.setdefault(module, set())
        base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.split(".")[0] in OWN}
                continue
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                up = base[: len(base) - node.level + 1]
                target = ".".join([*up, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] in OWN:
                subs = {f"{target}.{a.name}" for a in node.names} & set(files)
                found |= subs or {target}
    return graph


def test_imports_point_one_way_with_no_cycle() -> None:
    """Packages import only the layers below them, and no module imports itself round a
    cycle, not even for typing only (checked on the modules, so a cycle inside one package
    counts too)."""
    graph = module_imports()
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if target.split(".")[0] != module.split(".")[0]
        and target.split(".")[0] not in ALLOWED[module.split(".")[0]]
    )
    assert upward == []
    # modules only (a package's __init__ importing its own submodules is no cycle)
    edges = {
        m: {t for t in ts if t in graph and not m.startswith(t + ".") and t != m}
        for m, ts in graph.items()
    }
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(edges[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert cycles == []


#: The dynamics core's floors, bottom first: the robot description, ground, servos, gaits and
#: errors at the top level of the package, then one subpackage per model family.
DYNAMICS_FLOORS = ("", "mfm", "floating", "planar", "flexible", "sim")


def test_the_dynamics_families_import_down_only() -> None:
    """Inside snake_dynamics a module imports its own floor and those below it: the fixed-tail
    MFM knows nothing of the floating base, the model families nothing of the simulators."""

    def floor(module: str) -> int:
        parts = module.split(".")
        # a subpackage's face (its __init__, named as the package) is on its own floor
        family = parts[1] if len(parts) > 1 and parts[1] in DYNAMICS_FLOORS else ""
        return DYNAMICS_FLOORS.index(family)

    graph = module_imports()
    dynamics = {m for m in graph if m.startswith("snake_dynamics.")}
    assert {m.split(".")[1] for m in dynamics} >= set(DYNAMICS_FLOORS[1:])
    upward = sorted(
        f"{module} -> {target}"
        for module in dynamics
        if not module.endswith("__init__") and module.count(".") > 0
        for target in graph[module]
        if target.startswith("snake_dynamics.")
        and target != module
        and target not in ("snake_dynamics",)
        and floor(target) > floor(module)
    )
    assert upward == []


def test_every_dynamics_subpackage_names_its_face() -> None:
    """Each subpackage of snake_dynamics names its public API in ``__all__`` (what code
    outside it imports), and every name there resolves, imported at once or on first use."""
    faces = sorted((ROOT / "snake_dynamics").glob("*/__init__.py"))
    assert {p.parent.name for p in faces} >= {*DYNAMICS_FLOORS[1:], "ground"}
    for path in faces:
        module = importlib.import_module(f"snake_dynamics.{path.parent.name}")
        names = getattr(module, "__all__", [])
        assert names, f"{path.relative_to(ROOT)} names no public API (__all__)"
        assert [n for n in names if getattr(module, n, None) is None] == [], path


def test_no_module_takes_a_private_name_from_another() -> None:
    """What one module takes from another is public: no ``from x import _name`` across the
    package's modules."""
    private = sorted(
        f"{path.relative_to(ROOT)}:{node.lineno} imports {alias.name}"
        for package in OWN
        for path in (ROOT / package).rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom)
        and (node.level or (node.module or "").split(".")[0] in OWN)
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    )
    assert private == []


def test_the_cores_import_no_ros() -> None:
    for core in ROS_FREE:
        paths = [ROOT / core] if core.endswith(".py") else list((ROOT / core).rglob("*.py"))
        assert paths, core
        for path in paths:
            for node in ast.walk(ast.parse(path.read_text())):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom) and node.level == 0
                    else []
                )
                for name in names:
                    top = name.split(".")[0]
                    assert top not in {"rclpy", "snake_ros"} and not top.endswith("_msgs"), (
                        f"{path.relative_to(ROOT)} imports {name}"
                    )


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


def _class_bases() -> dict[str, set[str]]:
    """Every class defined in the package -> the names of its bases (``a.B`` as ``B``)."""
    bases: dict[str, set[str]] = {}
    for package in OWN:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef):
                    names = {
                        b.id if isinstance(b, ast.Name) else b.attr
                        for b in node.bases
                        if isinstance(b, ast.Name | ast.Attribute)
                    }
                    where = f"{path.relative_to(ROOT)}:{node.lineno}"
                    assert node.name not in bases or not node.name.endswith("Error"), (
                        f"{where}: a second class {node.name}"
                    )
                    bases.setdefault(node.name, set()).update(names)
    return bases


def test_every_error_derives_from_the_one_base() -> None:
    """Every exception class of the package (named ``...Error``, or deriving from a built-in
    exception) is a SnakeError, directly or through its package's base, so that the ``snake``
    command and the nodes catch that one type at their boundary."""
    bases = _class_bases()
    builtin = {
        n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, Exception)
    }
    exceptions = {
        name for name, names in bases.items() if name.endswith("Error") or names & builtin
    }

    def is_snake_error(name: str, seen: frozenset[str] = frozenset()) -> bool:
        if name == "SnakeError":
            return True
        return any(
            is_snake_error(base, seen | {name})
            for base in bases.get(name, ())
            if base in bases and base not in seen
        )

    assert {"SnakeError", "CalibrationError", "BagError", "RunError", "UsageError"} <= exceptions
    assert sorted(e for e in exceptions if not is_snake_error(e)) == []


def test_the_snake_command_catches_the_one_base_and_no_list() -> None:
    """``snake``'s entry point catches SnakeError (and the operating system's OSError, and
    Ctrl-C), each by itself: no tuple of error classes to keep up to date by hand."""
    tree = ast.parse((ROOT / "snake_bringup" / "cli" / "__init__.py").read_text())
    (main,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"]
    caught = [h.type for t in ast.walk(main) if isinstance(t, ast.Try) for h in t.handlers]
    assert all(isinstance(c, ast.Name) for c in caught), "a tuple of classes in an except"
    assert [c.id for c in caught if isinstance(c, ast.Name)] == [
        "SnakeError",
        "OSError",
        "KeyboardInterrupt",
    ]
