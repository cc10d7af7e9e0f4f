"""bench/effects.py's logic at small size: its variants turn on what they name and nothing
else, and a short run of one variant drives the MuJoCo robot, identifies it and predicts its
held-out crawl with numbers a table can show."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from snake_dynamics.sim import load_plant
from snake_dynamics.sim.mujoco_plant import NO_EFFECTS, Effects
from snake_ros.paths import load_robot, robot_config

pytest.importorskip("mujoco")

BENCH = Path(__file__).resolve().parents[3] / "bench"


@pytest.fixture
def effects_bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """bench/effects.py, imported as its own script runs (bench/ on sys.path)."""
    monkeypatch.syspath_prepend(str(BENCH))
    import effects

    return effects


def _differs(a: Effects, b: Effects) -> set[str]:
    return {f.name for f in dataclasses.fields(Effects) if getattr(a, f.name) != getattr(b, f.name)}


def test_each_variant_turns_on_its_effect_and_what_it_needs(effects_bench: ModuleType) -> None:
    """Against NO_EFFECTS, a variant differs in its own effect only (the bracket brings the
    armature it needs, backlash both), at config/plant_mujoco.yaml's values; ``contact`` is
    NO_EFFECTS itself; ``all`` is the plant file's effects."""
    robot = load_robot("robot_table")
    plant = load_plant(robot_config("plant_mujoco"), robot.joint_names).effects
    assert plant is not None and _differs(plant, NO_EFFECTS) == {
        "servo_spread",
        "backlash",
        "frictionloss",
        "armature",
        "battery",
        "bracket",
    }
    expected: dict[str, set[str]] = {
        "contact": set(),
        "servo_spread": {"servo_spread"},
        "frictionloss": {"frictionloss"},
        "armature": {"armature"},
        "battery": {"battery"},
        "bracket": {"bracket", "armature"},
        "backlash": {"backlash", "bracket", "armature"},
    }
    assert set(effects_bench.VARIANTS) == {*expected, "all"}
    for name, on in expected.items():
        effects = effects_bench.variant_effects(name, plant)
        assert _differs(effects, NO_EFFECTS) == on, name
        assert all(getattr(effects, k) == getattr(plant, k) for k in on), name
    assert effects_bench.variant_effects("all", plant) == plant


def test_a_short_run_predicts_the_held_out_crawl_with_the_config(
    effects_bench: ModuleType,
) -> None:
    """Two variants (every effect off; every effect on) at small size without the fits: the
    held-out crawl moves on both robots, the prediction (the robot config's, from the same
    lying start) is the same for both, the robots differ, and the table has a row per run
    with the fits' columns n/a."""
    runs: list[dict[str, Any]] = effects_bench.run(["contact", "all"], (1.0, 1.5, 2.0), fit=False)
    assert [r["variant"] for r in runs] == ["contact", "all"]
    for run in runs:
        numbers = run["before"]
        assert all(math.isfinite(v) for v in numbers.values()), numbers
        assert numbers["joints_rms_deg"] > 0.0 and numbers["travel_measured_m"] > 0.01
        assert "after" not in run
    before = [r["before"] for r in runs]
    assert before[0]["travel_predicted_m"] == before[1]["travel_predicted_m"]
    assert before[0]["travel_measured_m"] != before[1]["travel_measured_m"]
    table = effects_bench.table(runs).splitlines()
    assert len(table) == 4 and table[3].startswith("| all | ")
    assert table[2].endswith("| n/a | n/a | n/a |")
