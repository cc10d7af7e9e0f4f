"""The oldest version of each Python package the ``snake`` command runs on, and the check of
the installed ones at its start (docs/setup.md, "Which versions").

The floors are Debian 12's packages, the oldest that ``rosdep install`` puts on the platforms
the README names (Ubuntu 24.04's are newer): test/distribution/test_debian_python.py runs the
commands on them with the system Python. package.xml declares the same floors
(``version_gte``) and requirements.txt pins versions at or above them
(test/distribution/test_versions.py). A version below its floor ends the command in one line
that names the package, the version found and the one needed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib import metadata
from typing import NamedTuple

from .errors import BringupError


class Floor(NamedTuple):
    """A Python package's distribution name, its rosdep key and its oldest version."""

    distribution: str
    key: str
    version: str


#: Every Python package the command imports, at Debian 12's version (bookworm, 2026-12).
FLOORS = {
    f.distribution: f
    for f in (
        Floor("numpy", "python3-numpy", "1.24.2"),
        Floor("scipy", "python3-scipy", "1.10.1"),
        Floor("PyYAML", "python3-yaml", "6.0"),
        Floor("numba", "python3-numba", "0.56.4"),
        Floor("matplotlib", "python3-matplotlib", "3.6.3"),
        Floor("pyserial", "python3-serial", "3.5"),
        Floor("websockets", "python3-websockets", "10.4"),
        Floor("rosbags", "python3-rosbags-pip", "0.11.9"),  # pip: the newest; this one tested
        Floor("dask", "python3-dask", "2022.12.1"),
        Floor("distributed", "python3-distributed", "2022.12.1"),
        Floor("optuna", "python3-optuna", "3.1.0"),
        Floor("cmaes", "python3-cmaes", "0.9.1"),
        Floor("SQLAlchemy", "python3-sqlalchemy", "1.4.46"),
        Floor("cryptography", "python3-cryptography", "38.0.4"),
        Floor("mujoco", "python3-mujoco-pip", "4.0.0"),  # pip: the tested one (engine: mujoco)
    )
}
#: What every subcommand imports (the numerics, the plots, the bags).
COMMON = ("numpy", "scipy", "PyYAML", "numba", "matplotlib", "rosbags")
#: What a subcommand needs beyond :data:`COMMON`.
NEEDS = {
    "sweep": ("dask", "distributed"),
    "optimize": ("dask", "distributed", "optuna", "cmaes", "SQLAlchemy"),
    "hardware": ("pyserial",),
    "view": ("websockets",),
    "cluster-certs": ("cryptography",),
}


class VersionError(BringupError):
    """An installed Python package older than the command needs, or one missing."""


def release(version: str) -> tuple[int, ...]:
    """The release numbers of a version string: ``"2022.12.1+dfsg"`` -> ``(2022, 12, 1)``
    (a Debian suffix or a pre-release tag is not compared)."""
    found = re.match(r"\d+(\.\d+)*", version)
    if found is None:
        raise ValueError(f"not a version: {version!r}")
    return tuple(int(part) for part in found.group(0).split("."))


def check(command: str, distributions: Iterable[str] | None = None) -> None:
    """Refuse to run ``snake COMMAND`` on a package older than its floor, or without it.

    Args:
        command: the subcommand (it picks :data:`NEEDS`).
        distributions: the packages to check instead (default: :data:`COMMON` and the
            command's :data:`NEEDS`).

    Raises:
        VersionError: the first package missing or below its floor, with the fix.
    """
    names = distributions or (*COMMON, *NEEDS.get(command, ()))
    for name in names:
        floor = FLOORS[name]
        try:
            found = metadata.version(name)
        except metadata.PackageNotFoundError:
            raise VersionError(
                f"{name} is not installed; snake {command} needs {name} >= {floor.version} "
                f"(rosdep key {floor.key}; docs/setup.md)"
            ) from None
        if release(found) < release(floor.version):
            raise VersionError(
                f"{name} {found} is installed; snake {command} needs {name} >= {floor.version} "
                f"(upgrade {floor.key}, or pip install '{name}>={floor.version}'; docs/setup.md)"
            )
