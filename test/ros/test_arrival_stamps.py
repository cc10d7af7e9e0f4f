"""snake_ros.arrival_stamps: a sensor's sample times on the receiver's clock, on synthetic
readings with a known offset and latency.

References: the stamps of the same readings without the outlier (the outlier is never taken
in, so they must be equal to the nanosecond), the known offset and least latency (the stamp of
a reading that arrived with the least latency is its arrival), and counts by reason.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from snake_ros.arrival_stamps import AHEAD, DEFAULT_REBASE, NOT_NEWER, ArrivalStamper

OFFSET_NS = 1_000 * 10**9  # the receiver's clock minus the sensor's
LATENCY_NS = 20 * 10**6  # the least latency
PERIOD_NS = 10 * 10**6  # a 100 Hz sensor


def readings(n: int, seed: int = 1, first: int = 0) -> list[tuple[int, int]]:
    """(sample, arrival) [ns] of ``n`` readings: latency 20 ms plus 0-10 ms of jitter."""
    jitter = np.random.default_rng(seed).integers(0, 10 * 10**6, n)
    return [
        (s, s + OFFSET_NS + LATENCY_NS + int(j))
        for s, j in zip(range(first, first + n * PERIOD_NS, PERIOD_NS), jitter, strict=True)
    ]


def stamps(stamper: ArrivalStamper, data: list[tuple[int, int]]) -> list[int | None]:
    return [stamper.stamp(s, a).stamp_ns for s, a in data]


@pytest.mark.parametrize("ahead_s", [3.0, 0.2, 1e6])
def test_one_sample_time_from_the_future_is_rejected_and_leaves_the_stamps(
    ahead_s: float,
) -> None:
    """The campaign's datagram: a sample time 3 s ahead among 100 Hz genuine readings. Before,
    it set the offset for good (782 poses rejected downstream); now it alone is rejected and
    every genuine stamp is the one it would have had without it."""
    genuine = readings(1500)
    s, a = genuine[300]
    attacked = [*genuine[:301], (s + round(ahead_s * 1e9), a + 10**6), *genuine[301:]]
    clean = stamps(ArrivalStamper(), genuine)
    stamper = ArrivalStamper()
    got = stamps(stamper, attacked)
    assert got[301] is None and got[:301] + got[302:] == clean
    assert stamper.rejected == {AHEAD: 1, NOT_NEWER: 0} and stamper.rebased == 0
    assert all(b > a for a, b in itertools.pairwise(x for x in got if x is not None))


def test_the_stamps_are_the_sample_times_plus_the_least_delay() -> None:
    """Once a reading came with the least latency, stamp = sample + offset + least latency,
    exactly; a stamp is never after its own arrival."""
    data = readings(400)
    data[50] = (data[50][0], data[50][0] + OFFSET_NS + LATENCY_NS)  # the least latency
    stamper = ArrivalStamper()
    got = stamps(stamper, data)
    assert all(g is not None and g <= a for g, (_, a) in zip(got, data, strict=True))
    assert stamper.offset == OFFSET_NS + LATENCY_NS
    assert got[-1] == data[-1][0] + OFFSET_NS + LATENCY_NS


def test_a_sensor_that_restarts_is_followed_after_a_few_rejections() -> None:
    """The sensor's clock starts again at 0 (a restarted plant): its readings are "not newer"
    until ``rebase`` of them in a row restart the estimate; every later one is stamped."""
    before = readings(500)
    after = [(s, a + before[-1][1]) for s, a in readings(300, seed=2)]
    stamper = ArrivalStamper()
    got = stamps(stamper, before + after)
    assert None not in got[:500]
    assert got[500 : 500 + DEFAULT_REBASE - 1] == [None] * (DEFAULT_REBASE - 1)
    assert None not in got[500 + DEFAULT_REBASE - 1 :]
    assert stamper.rejected == {AHEAD: 0, NOT_NEWER: DEFAULT_REBASE - 1}
    assert stamper.rebased == 1
    last_s, last_a = after[-1]
    assert last_a - (stamper.offset or 0) - last_s < 10 * 10**6 + 1  # within the jitter


def test_a_first_reading_from_the_future_is_outlived() -> None:
    """The outlier arrives first, before any estimate: the genuine readings after it are "not
    newer" than it until ``rebase`` in a row restart the estimate from them."""
    genuine = readings(300)
    s, a = genuine[0]
    stamper = ArrivalStamper()
    got = stamps(stamper, [(s + 3 * 10**9, a), *genuine])
    assert got[1:DEFAULT_REBASE] == [None] * (DEFAULT_REBASE - 1)
    assert None not in got[DEFAULT_REBASE:] and stamper.rebased == 1
    assert stamper.offset is not None and stamper.offset >= OFFSET_NS + LATENCY_NS
