"""Sample times placed on the receiver's clock, robust to a sample time from the future (no ROS).

A sensor stamps each reading with its own sample time s; the receiver sees it arrive at a on
its clock. The delay d = a - s is the clocks' offset plus the link's latency (>= 0), so the
least delay over a while is the offset, and s + that least is the reading's time on the
receiver's clock without the link's jitter (:class:`ArrivalStamper`).

One reading whose sample time lies in the future (a wrong clock, a spoofed datagram) has a
delay far below every genuine one. Taken into a running minimum, it would set the offset for
the rest of the run and stamp every genuine reading after it seconds in the past. So the least
is taken over a sliding window (``window`` seconds of sample time) of *accepted* readings
only, and a reading is rejected, with its reason, when

- its delay is below that least by more than ``tolerance`` (:data:`AHEAD`: it claims to have
  arrived before it could), or
- its sample time is not after the last accepted one (:data:`NOT_NEWER`).

A genuine change (the sensor restarted, its clock stepped) looks the same at first, but it
persists: ``rebase`` rejections in a row, their sample times increasing, restart the
estimate from them (an event the receiver reports). A lone outlier never gets there.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

#: Why a reading is rejected.
AHEAD, NOT_NEWER = "ahead of the clock", "not newer"
#: Every reason, in the order reports list them.
REASONS = (AHEAD, NOT_NEWER)
#: The least delay is taken over this much sample time [s].
DEFAULT_WINDOW_S = 5.0
#: A delay this far below the least is a sample time from the future [s] (a few samples of a
#: 100 Hz sensor; well above the jitter of a host's scheduler).
DEFAULT_TOLERANCE_S = 0.05
#: This many rejections in a row, their sample times increasing, restart the estimate.
DEFAULT_REBASE = 10


class Stamped(NamedTuple):
    """A reading's outcome: its stamp on the receiver's clock [ns] (None: rejected), and the
    reason and a one-line detail of a rejection (empty when accepted)."""

    stamp_ns: int | None
    reason: str = ""
    detail: str = ""


@dataclass
class ArrivalStamper:
    """Stamps readings with sample time + the windowed least delay (see the module docstring).

    The offset in use follows the least down by at most half a sample spacing per reading (as
    NTP slews a clock), so the stamps never go back; a higher least (an old low delay left the
    window) is taken at once, which moves the stamps forward only.

    Attributes:
        window: the least delay is taken over this much sample time [ns].
        tolerance: a delay this far below the least is rejected as :data:`AHEAD` [ns].
        rebase: this many rejections in a row (sample times increasing) restart the estimate.
        offset: the offset the stamps use [ns] (None before the first reading).
        rejected: rejected readings, by reason.
        rebased: how many times the estimate restarted.
    """

    window: int = round(DEFAULT_WINDOW_S * 1e9)
    tolerance: int = round(DEFAULT_TOLERANCE_S * 1e9)
    rebase: int = DEFAULT_REBASE
    offset: int | None = None
    rejected: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REASONS, 0))
    rebased: int = 0
    _last_sample: int | None = None
    # (sample, delay) of accepted readings, delays increasing: the front is the least
    _least: deque[tuple[int, int]] = field(default_factory=deque)
    _suspects: list[tuple[int, int]] = field(default_factory=list)

    @property
    def least(self) -> int | None:
        """The least delay of the accepted readings in the window [ns] (None: none yet)."""
        return self._least[0][1] if self._least else None

    def stamp(self, sample_ns: int, arrival_ns: int) -> Stamped:
        """The stamp of a reading sampled at ``sample_ns`` (the sensor's clock) that arrived
        at ``arrival_ns`` (the receiver's clock), or its rejection.

        Args:
            sample_ns: its sample time [ns].
            arrival_ns: its arrival on the receiver's clock [ns].
        """
        delay = arrival_ns - sample_ns
        problem = self._problem(sample_ns, delay)
        if problem is not None:
            if self._suspects and sample_ns <= self._suspects[-1][0]:
                self._suspects.clear()  # not a sensor that carries on from elsewhere
            self._suspects.append((sample_ns, delay))
            if len(self._suspects) < self.rebase:
                self.rejected[problem[0]] += 1
                return Stamped(None, *problem)
            self._restart()  # this one is taken, from the new estimate
        else:
            self._suspects.clear()
            self._accept(sample_ns, delay)
        assert self.offset is not None
        return Stamped(sample_ns + self.offset)

    def _problem(self, sample: int, delay: int) -> tuple[str, str] | None:
        least = self.least
        if least is not None and delay < least - self.tolerance:
            return AHEAD, (
                f"sample time {(least - delay) * 1e-9:.3f} s ahead of the least delay of the "
                f"last {self.window * 1e-9:g} s (more than {self.tolerance * 1e-9:g} s): a "
                "sample time from the future"
            )
        if self._last_sample is not None and sample <= self._last_sample:
            return NOT_NEWER, (
                f"sample time {sample * 1e-9:.6f} s not after the last accepted "
                f"{self._last_sample * 1e-9:.6f} s"
            )
        return None

    def _accept(self, sample: int, delay: int) -> None:
        while self._least and self._least[-1][1] >= delay:
            self._least.pop()
        self._least.append((sample, delay))
        while self._least[0][0] < sample - self.window:
            self._least.popleft()
        least = self._least[0][1]
        if self.offset is None or self._last_sample is None:
            self.offset = least
        else:
            step = max(0, (sample - self._last_sample) // 2)
            self.offset = max(least, self.offset - step)
        self._last_sample = sample

    def _restart(self) -> None:
        """Start the estimate again from the readings rejected in a row."""
        suspects, self._suspects = self._suspects, []
        self._least.clear()
        self.offset = self._last_sample = None
        self.rebased += 1
        for sample, delay in suspects:
            self._accept(sample, delay)
