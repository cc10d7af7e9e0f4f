"""Mapping the MCU's microsecond clock to host time from ping/pong exchanges (no ROS).

A ping leaves the host at t_send and its pong, stamped with the MCU clock m, arrives at
t_recv. Assuming symmetric delays the MCU read m at host time (t_send + t_recv) / 2; the
exchanges with the smallest round-trip time carry the least queueing noise, so the offset
and drift are fitted to those: host_time = offset + (1 + drift) * mcu_time.

The midpoint assumption errs by up to half the round trip, so a mapping is only trusted from
good exchanges: one whose round trip exceeds ``max_rtt`` (a ping that waited in a frozen
bridge, a pong queued behind telemetry) is ignored, and there is no estimate before
``min_exchanges`` good ones. Keeping published stamps monotonic across re-fits and sessions
is the link's job (:class:`snake_driver.link.DriverLink`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

WRAP_US = 1 << 32  # the MCU counter is 32-bit microseconds: it wraps every 71.6 min


class ClockUnwrapper:
    """Turns wrapping 32-bit MCU timestamps [us] into a monotonic count [us].

    Each new timestamp is placed in the wrap period that puts it nearest to the previous
    one, so ordering survives a wrap and small reorderings (telemetry vs pong).
    """

    def __init__(self) -> None:
        self._last: int | None = None

    def unwrap(self, raw_us: int) -> int:
        """The unwrapped value of a raw 32-bit timestamp [us]."""
        raw_us %= WRAP_US
        last = raw_us if self._last is None else self._last
        base = last - last % WRAP_US
        candidates = (base - WRAP_US + raw_us, base + raw_us, base + WRAP_US + raw_us)
        value = min(candidates, key=lambda c: abs(c - last))
        self._last = max(last, value)
        return value


@dataclass(frozen=True)
class ClockEstimate:
    """host_time [s] = offset_s + (1 + drift) * mcu_time [s] (unwrapped MCU clock)."""

    offset_s: float
    drift: float
    samples: int
    best_rtt_s: float

    def to_host(self, mcu_s: float) -> float:
        """Host time [s] of an unwrapped MCU time [s]."""
        return self.offset_s + (1.0 + self.drift) * mcu_s


class ClockSync:
    """Estimates the MCU-to-host clock mapping from recent ping/pong exchanges.

    Args:
        window: exchanges kept [count].
        best_fraction: share of the kept exchanges, lowest round-trip first, used in the fit.
        min_exchanges: good exchanges needed before the first estimate [count].
        max_rtt: exchanges with a longer round trip are ignored [s].

    Attributes:
        estimate: the current mapping, or None before ``min_exchanges`` good exchanges.
        last_rtt_s: round trip of the latest exchange, good or not [s].
        ignored: exchanges ignored for their round trip [count].
    """

    def __init__(
        self,
        window: int = 64,
        best_fraction: float = 0.5,
        min_exchanges: int = 3,
        max_rtt: float = 0.1,
    ) -> None:
        if window < 2 or not 0.0 < best_fraction <= 1.0 or not 1 <= min_exchanges <= window:
            raise ValueError(
                "window must be >= 2, best_fraction in (0, 1], min_exchanges in 1..window"
            )
        self._samples: deque[tuple[float, float, float]] = deque(maxlen=window)
        self._best_fraction = best_fraction
        self._min_exchanges = min_exchanges
        self.max_rtt = max_rtt
        self.unwrapper = ClockUnwrapper()
        self.estimate: ClockEstimate | None = None
        self.last_rtt_s: float | None = None
        self.ignored = 0

    def add_exchange(self, host_send_s: float, mcu_us: int, host_recv_s: float) -> None:
        """Record one ping (sent at host_send_s) answered with MCU time mcu_us at host_recv_s."""
        rtt = host_recv_s - host_send_s
        if rtt < 0.0:
            return  # a pong older than its ping: not ours, ignore
        self.last_rtt_s = rtt
        mcu_s = self.unwrapper.unwrap(mcu_us) * 1e-6
        if rtt > self.max_rtt:
            self.ignored += 1
            return
        self._samples.append((mcu_s, 0.5 * (host_send_s + host_recv_s), rtt))
        if len(self._samples) >= self._min_exchanges:
            self.estimate = self._fit()

    def _fit(self) -> ClockEstimate:
        data = np.array(self._samples)
        count = max(1, round(len(data) * self._best_fraction))
        best = data[np.argsort(data[:, 2])[:count]]
        mcu, host = best[:, 0], best[:, 1]
        drift = 0.0
        span = float(np.ptp(mcu))
        if count >= 3 and span > 0.5:  # a drift needs a baseline to be measured against
            slope = float(np.polyfit(mcu - mcu.mean(), host - host.mean(), 1)[0])
            drift = slope - 1.0
        offset = float(np.mean(host - (1.0 + drift) * mcu))
        return ClockEstimate(offset, drift, len(data), float(best[0, 2]))

    def to_host(self, mcu_us: int) -> float | None:
        """Host time [s] of a raw MCU timestamp [us], or None before the first estimate."""
        if self.estimate is None:
            return None
        return self.estimate.to_host(self.unwrapper.unwrap(mcu_us) * 1e-6)


#: A robot clock that goes back by more than this between reports [s] is a restarted MCU
#: (telemetry and pongs may be reordered by far less).
RESTART_S = 1.0


class RobotClock:
    """The robot's own clock as the graph's clock (docs/hardware.md, "Emulated time").

    A report's time is its unwrapped MCU timestamp, placed at the host stamp of the first
    report that had one: t = stamp_0 + (mcu - mcu_0), so intervals are the MCU's own and an
    emulated robot that falls behind real time stretches no interval. Between reports
    :meth:`now` estimates the robot's time from the host's clock alone: the host time less
    the reports' delivery delay (the least, over the last ``window`` reports, of arrival less
    report time), but never more than two telemetry periods past the last report: a robot
    that falls behind holds the clock back with it. The host's ping/pong mapping places the
    first report and nothing else: its error (which grows while an emulated robot lags) never
    moves the clock against the robot's reports, so the gait's commands leave at the robot's
    time less the reports' least delay, whatever the load. A restarted MCU (its clock back by
    more than :data:`RESTART_S`) continues from the last report's time. Report times only
    increase: a report not after the previous one (reordered, repeated, or the first after a
    restart) gets none and is counted in ``dropped``. :meth:`now` never goes back.

    Args:
        period_s: the telemetry period [s] (0: :meth:`now` stays at the last report).
        window: reports over which the delivery delay is taken [count].
    """

    def __init__(self, period_s: float, window: int = 50) -> None:
        self.period_s = period_s
        self.restarts = 0
        self.dropped = 0
        self._unwrapper = ClockUnwrapper()
        self._origin: float | None = None
        self._last_mcu_s: float | None = None
        self._delays: deque[float] = deque(maxlen=window)
        self._time: float | None = None  # the last report's robot time [s]
        self._now: float | None = None

    @property
    def delivery_delay(self) -> float | None:
        """The reports' delivery delay [s]: the least arrival (host clock) less report time
        (robot clock) lately; None before the first report. The two clocks differ by the
        mapping's error at the first report, so this is a difference of origins plus the
        link's least delay, and may be negative."""
        return min(self._delays, default=None)

    def report(self, mcu_us: int, host_stamp: float | None, host_now: float) -> float | None:
        """The robot time [s] of a report with raw MCU timestamp ``mcu_us``, stamped
        ``host_stamp`` by the host's mapping (None before it), arriving at ``host_now`` (the
        mapping's clock); None before the first report with a host stamp, and for a report
        not after the previous one (counted in ``dropped``)."""
        mcu_s = self._unwrapper.unwrap(mcu_us) * 1e-6
        if self._last_mcu_s is not None and mcu_s < self._last_mcu_s - RESTART_S:
            self.restarts += 1
            self._unwrapper = ClockUnwrapper()
            mcu_s = self._unwrapper.unwrap(mcu_us) * 1e-6
            if self._time is not None:
                self._origin = self._time - mcu_s
        self._last_mcu_s = mcu_s
        if self._origin is None:
            if host_stamp is None:
                return None
            self._origin = host_stamp - mcu_s
        time = self._origin + mcu_s
        if self._time is not None and time <= self._time:
            self.dropped += 1
            return None
        self._time = time
        self._delays.append(host_now - time)
        return time

    def now(self, host_now: float) -> float | None:
        """The clock at host time ``host_now`` [s] (the mapping's clock), or None before the
        first report."""
        delay = self.delivery_delay
        if self._time is None or delay is None:
            return None
        reach = self._time + 2.0 * self.period_s
        time = max(self._time, min(host_now - delay, reach))
        self._now = time if self._now is None else max(self._now, time)
        return self._now
