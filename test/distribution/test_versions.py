"""The oldest versions the ``snake`` command runs on live in snake_bringup/versions.py:
package.xml declares the same (``version_gte``), requirements.txt pins versions at or above
them, and a command started on an older or a missing package ends in one line that names it,
the version found and the one needed (test_debian_python.py runs the commands on the floors)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path

import pytest

from snake_bringup import versions
from snake_bringup.cli import main
from snake_bringup.versions import COMMON, FLOORS, NEEDS, release

ROOT = Path(__file__).resolve().parents[2]


def declared_floors() -> dict[str, str | None]:
    """package.xml's ``python3-*`` run dependencies -> their ``version_gte`` (or None)."""
    root = ET.parse(ROOT / "package.xml").getroot()
    return {
        e.text or "": e.get("version_gte")
        for e in root.findall("exec_depend")
        if (e.text or "").startswith("python3-")
    }


def pins() -> dict[str, str]:
    """requirements.txt's ``name==version`` lines, by lower-case name."""
    found = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        name, sep, version = line.split("#")[0].strip().partition("==")
        if sep:
            found[name.lower()] = version
    return found


def test_package_xml_declares_each_floor_and_no_other() -> None:
    declared = declared_floors()
    assert {f.key: f.version for f in FLOORS.values()} == {
        key: floor for key, floor in declared.items() if floor is not None
    }
    # the run dependencies of the non-ROS features have their floors
    assert {"python3-numpy", "python3-numba", "python3-distributed", "python3-optuna"} <= set(
        k for k, v in declared.items() if v
    )


def test_requirements_pin_versions_at_or_above_the_floors() -> None:
    pinned = pins()
    for name, floor in FLOORS.items():
        assert release(pinned[name.lower()]) >= release(floor.version), name


def test_each_command_s_needs_have_floors() -> None:
    assert set(COMMON) | {n for needs in NEEDS.values() for n in needs} <= set(FLOORS)
    assert set(NEEDS) <= {"sweep", "optimize", "hardware", "view", "cluster-certs"}


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("2022.12.1+dfsg", (2022, 12, 1)),
        ("1.24.2", (1, 24, 2)),
        ("6.0", (6, 0)),
        ("3.1.0rc1", (3, 1, 0)),
    ],
)
def test_release_reads_debian_and_pypi_versions(text: str, numbers: tuple[int, ...]) -> None:
    assert release(text) == numbers


@pytest.mark.parametrize(
    ("installed", "line"),
    [
        (
            "2022.11.0",
            "snake: error: distributed 2022.11.0 is installed; snake sweep needs distributed >= "
            "2022.12.1 (upgrade python3-distributed, or pip install 'distributed>=2022.12.1'; "
            "docs/setup.md)",
        ),
        (
            None,
            "snake: error: distributed is not installed; snake sweep needs distributed >= "
            "2022.12.1 (rosdep key python3-distributed; docs/setup.md)",
        ),
    ],
)
def test_an_older_or_missing_package_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    installed: str | None,
    line: str,
) -> None:
    """Before anything runs: no output folder, no cluster."""
    real = metadata.version

    def version(name: str) -> str:
        if name != "distributed":
            return real(name)
        if installed is None:
            raise metadata.PackageNotFoundError(name)
        return installed

    monkeypatch.setattr(versions.metadata, "version", version)
    out = tmp_path / "sweep"
    assert main(["sweep", "--jobs", "1", "-o", str(out)]) == 1
    assert capsys.readouterr().err.splitlines() == [line]
    assert not out.exists()
