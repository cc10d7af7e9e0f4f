"""`snake demo` end to end (shortened): the real firmware in simavr, gait, MFM prediction,
driver, comparison and recorder; then the bag, the reports and the per-joint RMS."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from snake_viz.bag import open_reader, typestore

pytestmark = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("avr-gcc", "simavr")), reason="needs gcc-avr and simavr"
)


def missing_ticks(stamps: np.ndarray, period: float) -> np.ndarray:
    """The timer ticks (counted from the first stamp's) up to the last stamp's with no message.

    A timer keeps its phase: tick k fires at t0 + k * period and its message is stamped a
    callback latency later (>= 0; mostly well under 1 ms, several ms under load). The
    densest 1 ms window of the stamps' phases marks the ticks; a stamp then belongs to the
    tick at or before it (latencies up to a period less 0.5 ms are told apart from a loss).
    """
    t = np.sort(stamps) - stamps.min()
    phases = t % period
    window = 1e-3
    density = [np.sum((phases - p) % period < window) for p in phases]
    tick_phase = phases[int(np.argmax(density))]
    ticks = np.floor((t - tick_phase + window / 2) / period).astype(int)
    return np.setdiff1d(np.arange(ticks[0], ticks[-1] + 1), ticks) - ticks[0]


def test_missing_ticks_tells_a_loss_from_a_late_callback() -> None:
    rng = np.random.default_rng(1)
    stamps = 100.0037 + 0.01 * np.arange(500) + rng.uniform(0.0, 3e-4, 500)
    stamps[123] += 0.0082  # a callback 8.2 ms late: the next one is on time again
    stamps[400] += 0.009
    assert missing_ticks(stamps, 0.01).size == 0
    assert list(missing_ticks(np.delete(stamps, [50, 124]), 0.01)) == [50, 124]


def test_demo_records_compares_and_reports(tmp_path: Path) -> None:
    snake = Path(sys.executable).parent / "snake"
    if not snake.exists():
        pytest.skip("the package is not installed in this environment (make test installs it)")
    out = tmp_path / "demo"
    env = {
        **os.environ,
        "ROS_DOMAIN_ID": str(30 + os.getpid() % 30),
        "ROS_LOG_DIR": str(tmp_path / "log"),
        "AMENT_PREFIX_PATH": sys.prefix,
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
    }
    proc = subprocess.run(
        [str(snake), "demo", "--duration", "10", "-o", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    for line in (
        "per-joint error",
        f"bag:               {out / 'bag'}/",
        "snake replay",
        "snake view",
    ):
        assert line in proc.stdout, proc.stdout
    # every node stopped cleanly
    assert proc.stdout.count("exit status 0") == 5, proc.stdout

    # the bag: every demo topic, and no /joint_commands message lost between the first and
    # the last: gait_node stamps them on its 10 ms timer ticks, so a lost one leaves a tick
    # without a message (the bag's own timestamps are arrival times, with scheduling jitter)
    store = typestore()
    counts: dict[str, int] = {}
    commanded: list[float] = []
    with open_reader(out / "bag") as reader:
        for connection, _, raw in reader.messages():
            counts[connection.topic] = counts.get(connection.topic, 0) + 1
            if connection.topic == "/joint_commands":
                msg = store.deserialize_cdr(raw, connection.msgtype)
                commanded.append(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)
    for topic in (
        "/joint_commands",
        "/sim/joint_states",
        "/measured/joint_states",
        "/compare/error",
    ):
        assert counts.get(topic, 0) > 50, counts
    missing = missing_ticks(np.array(commanded), period=0.01)
    assert not missing.size, f"/joint_commands lost at ticks {missing} of {len(commanded)}"

    # the reports: live (compare_node) and offline (from the bag), moving joints within degrees
    for folder in ("compare", "report"):
        assert (out / folder / "summary.json").is_file() and (
            out / folder / "joint_angles.png"
        ).is_file()
    import json

    summary = json.loads((out / "report" / "summary.json").read_text())
    moving = [r for r in summary["rms_rad"] if r]
    assert moving and all(0.0 < r < np.radians(10.0) for r in moving), summary
