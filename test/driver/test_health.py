"""The link's diagnosis from its counters (snake_driver.health) and the ramp's slew limit
(snake_driver.ramp): each symptom gives its level and hint, a healthy window is OK, and a
ramp never moves a joint by more than its step."""

from __future__ import annotations

import itertools

import pytest

from snake_driver.health import (
    HINT_AUTH,
    HINT_ECHO,
    HINT_GARBAGE,
    HINT_SILENT,
    Counts,
    Level,
    LinkMonitor,
    judge,
    silence_hint,
)
from snake_driver.ramp import Ramp

#: A healthy 2 s window at 50 Hz telemetry and 5 Hz pings.
HEALTHY = Counts(t=2.0, bytes_received=9600, telemetry=100, pongs=10, frames_ok=110)


@pytest.mark.parametrize(
    ("delta", "hint"),
    [
        (Counts(t=1.0, bytes_received=130, echoed=10), HINT_ECHO),
        (Counts(t=1.0, bytes_received=300, bad_auth=3), HINT_AUTH),
        (Counts(t=1.0, bytes_received=11520, bad_frames=4), HINT_GARBAGE),
        (Counts(t=1.0), HINT_SILENT),
    ],
)
def test_a_device_that_never_answered_gets_the_hint_of_what_it_sent(
    delta: Counts, hint: str
) -> None:
    assert silence_hint(delta) == hint


def test_only_telemetry_at_its_rate_is_ok() -> None:
    assert judge(HEALTHY, 50.0) == (Level.OK, "receiving telemetry at 50 Hz")
    slow = Counts(t=2.0, bytes_received=2000, telemetry=20, pongs=10, frames_ok=30)
    level, message = judge(slow, 50.0)
    assert level == Level.WARN and message.startswith("telemetry at 10.0 Hz, expected 50 Hz")
    level, message = judge(Counts(t=2.0), 50.0)
    assert level == Level.ERROR and HINT_SILENT in message


@pytest.mark.parametrize(
    ("extra", "hint"),
    [
        ({"echoed": 5}, HINT_ECHO),
        ({"bad_auth": 2}, HINT_AUTH),
        ({"bad_frames": 30}, "21 % of frames bad"),  # 30 of 140
    ],
)
def test_a_session_at_full_rate_with_a_symptom_warns(extra: dict[str, int], hint: str) -> None:
    delta = Counts(**{**vars(HEALTHY), **extra})
    level, message = judge(delta, 50.0)
    assert level == Level.WARN and hint in message


def test_heavy_corruption_with_little_telemetry_names_both() -> None:
    delta = Counts(t=2.0, bytes_received=9000, telemetry=10, pongs=1, frames_ok=11, bad_frames=99)
    level, message = judge(delta, 50.0)
    assert level == Level.WARN and "expected 50 Hz" in message and "90 % of frames bad" in message


def test_telemetry_off_is_ok_while_pongs_come() -> None:
    pongs = Counts(t=2.0, bytes_received=300, pongs=10, frames_ok=10)
    assert judge(pongs, None)[0] == Level.OK
    assert judge(Counts(t=2.0), None)[0] == Level.ERROR


def test_the_monitor_judges_the_latest_window_of_a_session() -> None:
    monitor = LinkMonitor(window=2.0)
    monitor.restart(Counts(t=0.0))
    for k in range(1, 11):  # 50 reports a second for 10 s
        delta = monitor.delta(Counts(t=float(k), telemetry=50 * k, frames_ok=50 * k))
        assert delta.telemetry == 50 * delta.t
    assert delta.t == 2.0


def test_a_ramp_moves_each_joint_by_at_most_its_step_until_it_catches_up() -> None:
    ramp = Ramp(speed=10.0, period=0.02)  # 0.2 rad a frame
    ramp.start({"a": 0.0, "b": 1.0})
    target = {"a": 1.0, "b": 0.9}
    poses = [{"a": 0.0, "b": 1.0}]
    while ramp.active:
        poses.append(ramp.step(target))
    assert poses[-1] == target and len(poses) == 6  # 1 rad at 0.2 rad a frame
    for p, q in itertools.pairwise(poses):
        assert all(abs(q[j] - p[j]) <= ramp.max_step + 1e-12 for j in p)
    assert ramp.step({"a": 5.0, "b": -5.0}) == {"a": 5.0, "b": -5.0}  # caught up: unlimited
