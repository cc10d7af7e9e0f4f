"""What the link's counters say about it, in one line with a hint (no ROS).

A :class:`LinkMonitor` keeps timed snapshots of the link's counters and judges the latest
window (about ``window`` seconds): OK only while valid telemetry arrives at about its
configured rate; an echo, silence, garbage, heavy corruption or frames that fail
authentication each give WARN or ERROR with the most likely cause.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, fields

#: Hints, one per symptom (docs/hardware.md's diagnostics table quotes them).
HINT_ECHO = "the port echoes what we send: wrong port or a loopback"
HINT_SILENT = "no answer to PING: wrong port, robot off, or firmware not flashed"
HINT_GARBAGE = "bytes but no valid frame: wrong baud rate?"
HINT_AUTH = "frames fail authentication: wrong auth_key?"
HINT_CORRUPT = "noisy line (cable, Wi-Fi) or wrong baud rate?"

#: More than this share of the frames in a window bad: WARN.
BAD_FRAME_SHARE = 0.1
#: Telemetry below this share of its configured rate: WARN (none at all: ERROR).
MIN_RATE_SHARE = 0.5


class Level(enum.IntEnum):
    """diagnostic_msgs' levels."""

    OK = 0
    WARN = 1
    ERROR = 2


@dataclass(frozen=True)
class Counts:
    """Cumulative counters of one link, at one time.

    Attributes:
        t: when they were read [s, time.monotonic()].
        bytes_received: bytes read from the transport.
        telemetry: valid telemetry reports.
        pongs: valid pongs.
        frames_ok: frames that passed every check.
        bad_frames: frames rejected for CRC, length or payload.
        bad_auth: frames rejected by the MAC (or a plain/authenticated mismatch).
        replayed: authenticated frames the replay window refused.
        echoed: our own frames, back from the port.
    """

    t: float
    bytes_received: int = 0
    telemetry: int = 0
    pongs: int = 0
    frames_ok: int = 0
    bad_frames: int = 0
    bad_auth: int = 0
    replayed: int = 0
    echoed: int = 0

    def minus(self, older: Counts) -> Counts:
        """The increase since ``older`` (``t``: the time between them [s])."""
        return Counts(*(getattr(self, f.name) - getattr(older, f.name) for f in fields(self)))


def silence_hint(delta: Counts) -> str:
    """Why a device gave no valid answer, from what it sent meanwhile (``delta``)."""
    if delta.echoed:
        return HINT_ECHO
    if delta.bad_auth:
        return HINT_AUTH
    if delta.bytes_received:
        return HINT_GARBAGE
    return HINT_SILENT


def judge(delta: Counts, expected_hz: float | None) -> tuple[Level, str]:
    """The level and message of a session's window ``delta``.

    Args:
        delta: counter increases over the window (``delta.t`` > 0 [s]).
        expected_hz: the configured telemetry rate [Hz], or None when telemetry is off.
    """
    rate = delta.telemetry / delta.t
    bad = delta.bad_frames + delta.bad_auth + delta.replayed
    total = bad + delta.frames_ok
    share = bad / total if total else 0.0
    problems = []
    if delta.echoed:
        problems.append(HINT_ECHO)
    if delta.bad_auth:
        problems.append(HINT_AUTH)
    if share > BAD_FRAME_SHARE:
        problems.append(f"{100 * share:.0f} % of frames bad: {HINT_CORRUPT}")
    if expected_hz is not None and rate < MIN_RATE_SHARE * expected_hz:
        level = Level.ERROR if delta.telemetry == 0 else Level.WARN
        cause = problems or [HINT_SILENT if delta.bytes_received == 0 else HINT_GARBAGE]
        return level, f"telemetry at {rate:.1f} Hz, expected {expected_hz:.0f} Hz: " + "; ".join(
            cause
        )
    if expected_hz is None and delta.pongs == 0:
        return Level.ERROR, f"telemetry off and no pong: {'; '.join(problems) or HINT_SILENT}"
    if problems:
        return Level.WARN, "; ".join(problems)
    what = f"telemetry at {rate:.0f} Hz" if expected_hz is not None else "pongs (telemetry off)"
    return Level.OK, f"receiving {what}"


class LinkMonitor:
    """Windows of the link's counters for :func:`judge`.

    Args:
        window: the shortest span judged [s] (shorter only right after ``restart``).
    """

    def __init__(self, window: float = 2.0) -> None:
        self.window = window
        self._snapshots: deque[Counts] = deque()

    def restart(self, counts: Counts) -> None:
        """Forget the history (a new session): later windows start at ``counts``."""
        self._snapshots.clear()
        self._snapshots.append(counts)

    def delta(self, counts: Counts) -> Counts:
        """Record ``counts``; the increase since the newest snapshot at least ``window``
        older (or the oldest kept)."""
        snapshots = self._snapshots
        if not snapshots:
            snapshots.append(counts)
        while len(snapshots) > 1 and counts.t - snapshots[1].t >= self.window:
            snapshots.popleft()
        snapshots.append(counts)
        return counts.minus(snapshots[0])
