"""A bad arm file stops with one line naming the file and the key (docs/flexible.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from snake_dynamics.errors import ModelError
from snake_dynamics.flexible import arm_from_yaml

GOOD = {
    "name": "test_arm",
    "links": [
        {"kind": "rigid", "mass": 1.0, "com": [0, 0, 0.1], "inertia": [1e-3, 1e-3, 1e-3],
         "distal": [0, 0, 0.2]},
        {"kind": "elastic", "length": 0.5, "outer_diameter": 0.03, "wall": 0.002},
    ],
}  # fmt: skip


def write(tmp_path: Path, **elastic: object) -> Path:
    data = yaml.safe_load(yaml.safe_dump(GOOD))
    data["links"][1].update(elastic)
    path = tmp_path / "arm.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_a_good_file_reads(tmp_path: Path) -> None:
    arm = arm_from_yaml(write(tmp_path))
    assert arm.n == 2 + 6


@pytest.mark.parametrize(
    ("change", "key", "says"),
    [
        ({"young": -70e9}, "links[1].young", "> 0 Pa"),
        ({"xy_modes": 0}, "links[1].xy_modes", ">= 1"),
        ({"torsion_modes": 1.5}, "links[1].torsion_modes", ">= 1"),
        ({"boundary": "pinned-free"}, "links[1].boundary", "clamped-free, clamped-mass"),
        ({"wall": 0.02}, "links[1].wall", "<= outer_diameter"),
        ({"stiffnes": 1}, "links[1]: unknown key 'stiffnes'", "known"),
    ],
)
def test_bad_values_name_the_file_and_the_key(
    tmp_path: Path, change: dict[str, object], key: str, says: str
) -> None:
    path = write(tmp_path, **change)
    with pytest.raises(ModelError) as err:
        arm_from_yaml(path)
    message = str(err.value)
    assert message.startswith(f"{path}: {key}"), message
    assert says in message and "\n" not in message, message
