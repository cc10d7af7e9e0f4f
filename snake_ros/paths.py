"""Where the package's data files (config/, urdf/, launch/, rviz/) are, and the robot a
command or node names (:func:`load_robot`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from snake_dynamics.robot import Robot

PACKAGE = "mfm_snake"


def share_dir() -> Path:
    """The package's share folder: the installed one (ament index or the venv's ``share/``),
    or the source checkout when running from it.
    """
    source = Path(__file__).resolve().parents[1]
    if (source / "package.xml").is_file() and (source / "config").is_dir():
        return source
    try:
        from ament_index_python.packages import get_package_share_directory

        return Path(get_package_share_directory(PACKAGE))
    except (ImportError, LookupError, ValueError, OSError):  # OSError: AMENT_PREFIX_PATH unset
        return Path(sys.prefix) / "share" / PACKAGE


def robot_config(spec: str) -> Path:
    """Resolve ``--robot``: an existing file, or a name in the package's config folder
    (``robot`` -> config/robot.yaml). Returns the path even if missing (the loader reports it).
    """
    path = Path(spec)
    if path.is_file():
        return path
    for candidate in (
        share_dir() / spec,
        share_dir() / "config" / spec,
        share_dir() / "config" / f"{spec}.yaml",
    ):
        if candidate.is_file():
            return candidate
    return path


def load_robot(spec: str | Path) -> Robot:
    """Read the robot ``--robot`` (or a node's ``robot_config``) names, once
    (:func:`robot_config`, :meth:`Robot.load`): the object a command or node hands down.

    Raises:
        snake_dynamics.errors.ModelError: a missing or invalid file, naming it.
    """
    return Robot.load(robot_config(str(spec)))


def state_dir() -> Path:
    """The package's folder for what outlives a run (comparison reports, the emulated MCU's
    EEPROM): ``$ROS_HOME/mfm_snake``, ``ROS_HOME`` being ROS 2's own home for logs (``~/.ros``
    when unset), never the folder a command was started in."""
    return Path(os.environ.get("ROS_HOME") or Path.home() / ".ros") / PACKAGE
