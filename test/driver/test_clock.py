"""MCU clock mapping: offset and drift from ping/pong with asymmetric, noisy delays; the
robot's own clock as the graph's clock."""

from __future__ import annotations

import numpy as np
import pytest

from snake_driver.clock import WRAP_US, ClockSync, ClockUnwrapper, RobotClock


def test_unwrapper_is_monotonic_across_the_32_bit_wrap() -> None:
    unwrap = ClockUnwrapper()
    raw = [WRAP_US - 3_000, WRAP_US - 1_000, 500, 2_500, 1_000]  # last one slightly reordered
    assert [unwrap.unwrap(r) for r in raw] == [
        WRAP_US - 3_000,
        WRAP_US - 1_000,
        WRAP_US + 500,
        WRAP_US + 2_500,
        WRAP_US + 1_000,
    ]


def test_offset_and_drift_are_recovered_from_noisy_exchanges() -> None:
    rng = np.random.default_rng(5)
    true_offset, true_drift = 1_700_000_123.25, 80e-6  # host seconds at MCU zero; 80 ppm fast
    sync = ClockSync(window=64)
    mcu_start = WRAP_US - 5_000_000  # wraps during the run
    for i in range(200):
        mcu_us = (mcu_start + i * 200_000) % WRAP_US  # a ping every 200 ms (5 Hz)
        mcu_s = (mcu_start + i * 200_000) * 1e-6
        host_at_mcu = true_offset + (1 + true_drift) * mcu_s
        up = 0.0004 + rng.exponential(0.0015)  # queueing makes some exchanges slow
        down = 0.0004 + rng.exponential(0.0015)
        sync.add_exchange(host_at_mcu - up, mcu_us, host_at_mcu + down)
    est = sync.estimate
    assert est is not None
    # 64 exchanges span 12.8 s; the best half jitter by ~0.3 ms: slope error ~ 0.3 ms / 12.8 s
    assert est.drift == pytest.approx(true_drift, abs=30e-6)
    probe = (mcu_start + 199 * 200_000 + 10_000) % WRAP_US  # 10 ms after the last pong
    expected = true_offset + (1 + true_drift) * (mcu_start + 199 * 200_000 + 10_000) * 1e-6
    assert abs(sync.to_host(probe) - expected) < 300e-6  # well below one telemetry period
    assert est.best_rtt_s < 0.002


def test_no_estimate_before_the_first_pong_and_stale_pongs_are_ignored() -> None:
    sync = ClockSync(min_exchanges=1)
    assert sync.to_host(123) is None
    sync.add_exchange(10.0, 1_000, 9.0)  # received before sent: not ours
    assert sync.estimate is None
    sync.add_exchange(10.0, 1_000_000, 10.002)
    assert sync.to_host(1_000_000) == pytest.approx(10.001)


def test_no_estimate_from_too_few_or_slow_exchanges() -> None:
    """After a 3 s bridge freeze the first pongs answer pings that waited in the bridge: their
    round trips are seconds, the midpoint is off by half of that. They never make the
    mapping, and the first estimate needs ``min_exchanges`` good ones."""
    true_offset = 100.0
    sync = ClockSync(min_exchanges=3, max_rtt=0.1)
    for k, delay in enumerate((2.8, 2.6, 2.4)):  # queued on the way up, answered at once
        mcu_s = 1.0 + 0.01 * k
        sync.add_exchange(true_offset + mcu_s - delay, int(mcu_s * 1e6), true_offset + mcu_s)
    assert sync.estimate is None and sync.ignored == 3
    for k in range(3):
        mcu_s = 2.0 + 0.2 * k
        sync.add_exchange(
            true_offset + mcu_s - 0.001, int(mcu_s * 1e6), true_offset + mcu_s + 0.001
        )
        assert (sync.estimate is None) == (k < 2)
    assert sync.to_host(2_500_000) == pytest.approx(true_offset + 2.5, abs=1e-6)


def test_robot_clock_keeps_the_mcu_intervals_when_the_robot_falls_behind() -> None:
    """An emulated robot at half real time: its 20 ms reports arrive 40 ms apart and the host
    mapping stretches too (30 ms per report); report times keep the MCU's 20 ms, placed at the
    first mapped report's host stamp, across the 32-bit wrap."""
    clock = RobotClock(0.02)
    mcu = [WRAP_US - 30_000 + 20_000 * k for k in range(6)]
    assert clock.report(mcu[0] % WRAP_US, None, 0.0) is None  # before the mapping
    assert clock.now(0.0) is None
    times = [clock.report(mcu[k] % WRAP_US, 100.0 + 0.03 * k, 0.04 * k) for k in range(1, 6)]
    assert times == pytest.approx(100.03 + 0.02 * np.arange(5), abs=1e-12)


def test_robot_clock_runs_with_the_host_but_holds_when_reports_stop() -> None:
    """Reports take 7 ms to arrive: between them the clock is the host's time less that
    delay (the robot's time now), held at most two periods past the last report when the next
    ones are late; never back; a reordered older report or a repeated one gets no time and
    changes nothing (counted)."""
    clock = RobotClock(0.02)
    assert clock.report(1_000_000, 50.0, 50.007) == pytest.approx(50.0)
    assert clock.delivery_delay == pytest.approx(0.007)
    assert clock.now(50.010) == pytest.approx(50.003)  # the robot's time now
    assert clock.now(50.5) == pytest.approx(50.04)  # the next reports are late: held
    assert clock.report(1_020_000, 50.02, 50.6) == pytest.approx(50.02)  # the MCU's time
    assert clock.delivery_delay == pytest.approx(0.007)  # the least of the recent delays
    assert clock.now(50.6) == pytest.approx(50.06)
    assert clock.now(50.03) == pytest.approx(50.06)  # never back
    assert clock.report(1_010_000, 50.01, 50.7) is None  # reordered
    assert clock.report(1_020_000, 50.02, 50.7) is None  # repeated
    assert clock.dropped == 2
    assert clock.now(50.7) == pytest.approx(50.06)  # from the newest report, held


def test_robot_clock_ignores_the_host_mappings_error() -> None:
    """Reports every 20 ms of MCU time arrive 5 ms after it. One host mapping is exact; the
    other places the first report 80 ms early and then drifts a further 1 ms per report (a
    lagging emulator's ping/pong fit). Both clocks stand as far past their latest report:
    5 ms less than the host time since that report's MCU time, never ahead of the robot."""
    exact, mapped = RobotClock(0.02), RobotClock(0.02)
    for k in range(20):
        mcu_s = 0.02 * k
        arrival = 10.0 + mcu_s + 0.005
        t_exact = exact.report(int(mcu_s * 1e6), 10.0 + mcu_s, arrival)
        t_mapped = mapped.report(int(mcu_s * 1e6), 10.0 + mcu_s - 0.08 - 0.001 * k, arrival)
        assert t_exact is not None and t_mapped is not None
        for since in (0.0, 0.01):
            assert exact.now(arrival + since) == pytest.approx(t_exact + since, abs=1e-9)
            assert mapped.now(arrival + since) == pytest.approx(t_mapped + since, abs=1e-9)


def test_robot_clock_continues_across_a_restarted_mcu() -> None:
    clock = RobotClock(0.0)
    clock.report(5_000_000, 20.0, 0.0)
    assert clock.report(7_000_000, 22.5, 2.0) == pytest.approx(22.0)
    # the MCU restarted: its clock starts again near 0; the robot's time continues from the
    # last report (whose time the first report after the restart repeats: it gets none)
    assert clock.report(100_000, 0.0, 2.1) is None
    assert clock.report(300_000, 0.0, 2.3) == pytest.approx(22.2)
    assert clock.restarts == 1 and clock.dropped == 1
    assert clock.now(2.3) == pytest.approx(22.2)
