"""Whether a run's timing is trusted (snake_viz.timing), and its report's summary, no ROS.

References: synthetic stamp series at 100 Hz with one gap of known length injected (the
jump beyond the period is that gap less one period, to float rounding).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from snake_viz.compare import JointSeries, compare
from snake_viz.compare_report import Report
from snake_viz.timing import judge_timing, stamp_jump

PERIOD = 0.01  # [s]


def stamps(gap: float = 0.0, at: int = 500, count: int = 1000) -> np.ndarray:
    """``count`` stamps every PERIOD [s], the ones from index ``at`` on ``gap`` later."""
    t = 100.0 + PERIOD * np.arange(count)
    t[at:] += gap
    return t


def test_stamp_jump_is_the_gap_beyond_the_period() -> None:
    assert stamp_jump(stamps()) == pytest.approx(0.0, abs=1e-9)
    assert stamp_jump(stamps(0.23)) == pytest.approx(0.23, abs=1e-9)
    # arrival order and repeats change nothing
    shuffled = np.random.default_rng(3).permutation(np.concatenate([stamps(0.23), stamps()[:5]]))
    assert stamp_jump(shuffled) == pytest.approx(0.23, abs=1e-9)
    assert stamp_jump([1.0, 2.0]) == 0.0


def test_jumps_beyond_the_bounds_untrust_the_run_with_reasons() -> None:
    calm = judge_timing(stamps(), stamps(), 0.05, 0.05)
    assert calm.trusted and calm.reasons == ()
    assert calm.line().startswith("timing trusted")

    both = judge_timing(stamps(0.23), stamps(0.12, at=300), 0.05, 0.05)
    assert not both.trusted
    assert both.reasons == (
        "command stamps jumped 0.230 s (bound 0.05 s)",
        "robot clock jumped 0.120 s (telemetry stamps; bound 0.05 s)",
    )
    assert both.line() == f"timing UNTRUSTED: {'; '.join(both.reasons)}"

    # a jump within its bound, and no commands at all: trusted
    assert judge_timing(stamps(0.04), stamps(), 0.05, 0.05).trusted
    unknown = judge_timing(None, stamps(), 0.05, 0.05)
    assert unknown.trusted and unknown.command_jump is None


def test_summary_json_says_untrusted_and_why(tmp_path: Path) -> None:
    t = stamps()
    q = np.sin(np.outer(t, [1.0, 2.0]))
    series = JointSeries(("a", "b"), t, q)
    timing = judge_timing(stamps(0.23), t, 0.05, 0.05)
    summary = Report(tmp_path, plots=False).write(compare(series, series), {}, timing=timing)
    data = json.loads((tmp_path / "summary.json").read_text())
    assert data["trusted"] is False
    assert data["untrusted_because"] == ["command stamps jumped 0.230 s (bound 0.05 s)"]
    assert data["command_jump_s"] == pytest.approx(0.23, abs=1e-9)
    assert data["clock_jump_s"] == pytest.approx(0.0, abs=1e-9)
    assert summary.table().splitlines()[-1] == timing.line()
    markdown = (tmp_path / "summary.md").read_text()
    assert "Timing UNTRUSTED: command stamps jumped 0.230 s" in markdown
