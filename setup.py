"""ament_python package mfm_snake: builds with colcon, installs with pip into a venv."""

from pathlib import Path

from setuptools import find_packages, setup

PACKAGE = "mfm_snake"


def tree(folder: str) -> list[tuple[str, list[str]]]:
    """Every file below ``folder`` (not its build output), folder by folder."""
    files: dict[str, list[str]] = {}
    for path in sorted(Path(folder).rglob("*")):
        if path.is_file() and "build" not in path.parts:
            files.setdefault(f"share/{PACKAGE}/{path.parent}", []).append(str(path))
    return list(files.items())


def data(folder: str) -> tuple[str, list[str]]:
    """The files directly in ``folder`` (not its subfolders, e.g. a ``__pycache__``)."""
    return (
        f"share/{PACKAGE}/{folder}",
        sorted(str(p) for p in Path(folder).iterdir() if p.is_file() and not p.name.endswith("~")),
    )


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(
        include=["snake_dynamics*", "snake_ros*", "snake_driver*", "snake_viz*", "snake_bringup*"]
    ),
    # the WebGL view's page and its vendored three.js / urdf-loader (make web installs them)
    package_data={
        "snake_viz": [
            "web/index.html",
            "web/*.js",
            "web/package.json",
            "web/package-lock.json",
            "web/node_modules/three/LICENSE",
            "web/node_modules/three/build/three.module.js",
            "web/node_modules/three/build/three.core.js",
            "web/node_modules/three/examples/jsm/controls/OrbitControls.js",
            "web/node_modules/three/examples/jsm/loaders/*.js",
            "web/node_modules/three/examples/jsm/loaders/collada/*.js",
            "web/node_modules/urdf-loader/package.json",
            "web/node_modules/urdf-loader/src/*.js",
        ]
    },
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        data("launch"),
        data("urdf"),
        data("rviz"),
        data("config"),
        # the firmware sources: snake emulate / demo / hardware --emulate build them anywhere
        *tree("firmware"),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="mfm_snake developers",
    maintainer_email="dev@mfm-snake.invalid",
    description="MFM dynamics, gaits, servo driver and visualisation for a multi-link snake robot",
    license="Apache-2.0",
    python_requires=">=3.10",
    entry_points={
        "console_scripts": [
            "snake = snake_bringup.cli:console",
            "driver_node = snake_driver.driver_node:main",
            "compare_node = snake_viz.compare_node:main",
            "web_viewer_node = snake_viz.web_viewer:main",
            "recorder_node = snake_viz.recorder:main",
            "replay_node = snake_viz.replayer:main",
            "gait_node = snake_ros.gait_node:main",
            "dynamics_node = snake_ros.dynamics_node:main",
            "pose_sensor_node = snake_ros.pose_sensor_node:main",
            "operator_node = snake_ros.operator_node:main",
        ],
    },
)
