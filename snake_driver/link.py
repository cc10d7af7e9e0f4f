"""The driver's link to the firmware (no ROS): connect, handshake, configure, command, decode,
reconnect.

A :class:`DriverLink` owns a transport, the frame encoder/decoder, the servo map and the
clock estimate. It never raises on what the wire brings: bad frames are counted by the
decoder, a lost link becomes a :class:`LinkEvent` and a reconnect attempt after a backoff
that doubles up to ``max_backoff``. Nothing in it blocks its caller: the transport is opened
on a worker thread (a TCP connect to a bridge that does not answer takes up to its
``connect_timeout``), and ``poll`` only looks whether the opening has finished. Telemetry
stamps are in the clock of ``now()`` (the driver node passes ROS time); timeouts, backoff
and e-stop repeats run on ``monotonic`` (``time.monotonic``), as the wire does, whatever ROS
time does.

**Handshake.** On an open transport the link sends nothing but PINGs (every
``HANDSHAKE_PING_S``) until a valid PONG answers one of them (since protocol v2): the PONG carries
the MCU's boot id, which every later frame's MAC mixes in. Only then is the link
``connected`` (the "connected" event): a port that echoes, says nothing, speaks garbage or
fails authentication never gets configuration, ENABLE or targets, and after ``link_timeout``
the attempt is given up with a hint naming the likely cause (:mod:`.health`).

**Sessions.** Every handshake starts a *session*: a fresh decoder (the MCU's sequence
numbers and replay counter start again), a fresh clock mapping, then the configuration, and
ENABLE(1) only while the servos are meant to be armed. A PONG with another boot id, or an
MCU clock that jumps, means the MCU restarted behind an open link: handshake and session
again. An open session without a valid frame for ``link_timeout`` is lost.

**ENABLE and targets** wait for the session's first telemetry (unless telemetry is off), which
shows the MCU as the session found it; the targets are then slew-limited (:class:`.Ramp`, at
the configured servo speed) from where the robot is (that telemetry's angles if the MCU was
still armed, else the last targets sent) until they have caught up with the commands: no
jump after a reconnect or an MCU restart. **Stamps** are never earlier than the previous
published one nor later than the report's arrival; a report that would break that is
delivered unstamped (counted).

An e-stop is latched in the link: until ``enable(True)`` it sends no targets, every session
starts with ESTOP instead of ENABLE, and ESTOP is repeated until telemetry confirms it. It
comes from the driver's ``~/estop`` (``estop()``) or from the operator's latched stop state
(``operator_stop(True)``, the ``/estop`` heartbeat); one latched by the stop state is
released when the stop state says false again, one latched by ``estop()`` only by
``enable(True)`` (a heartbeat cannot undo a stop it did not set).

**Nothing re-arms by itself after a trip.** Once targets have flowed, a lost session, an
MCU restart, or telemetry showing the firmware's watchdog tripped *trips* the link
(``tripped`` says why, a ``tripped`` event): it sends no targets and no ENABLE (a new
session starts disarmed, and disarms an MCU it finds still armed) until a deliberate act of
the operator: ``enable(True)`` (the driver's ``~/enable`` true, which ``snake estop
--release`` calls), a *release* of the stop state heard after the trip (false after true),
or ``resume()`` (a program that is its own operator, such as ``snake identify``). The stop
state false heard again, the heartbeat, is the current state, not an act: it ends no trip,
so a link that returns (the MCU's, or the station's) re-arms nothing. Then the next targets
go with an ENABLE. A watchdog that trips before the first targets
ever sent (a gait that starts after the driver) is no trip: ``enable_on_connect`` is the
intent of the start, and the first targets arm the firmware. An ENABLE that was lost (the
firmware reports disarmed, no watchdog trip, no e-stop) is sent again beside targets: the
intent has not changed.

**The line.** However fast the host writes, the MCU's UART takes ``line_baud / 10`` bytes a
second (8N1; for a Wi-Fi bridge the bridge's UART speed); what it cannot take queues in the
transport, the kernel's pty or socket buffers and the bridge, where commands go stale and
PONGs come back too late to match a ping. So the link never hands the transport more than
``LINE_SHARE`` of that rate (a :class:`LineBudget` with ``LINE_BURST_S`` of burst). A frame
that a newer one supersedes (targets, a ping in a session, a configuration refresh frame) is
*skipped* when the budget cannot take it, or while the transport still holds unsent bytes
(its buffer then holds only frames that must go): counted in
``LinkStats.frames_skipped_line_busy``; the next command period sends fresh targets. Frames
that must not be lost (handshake PINGs, the session's configuration, ENABLE, ESTOP) always
go, overdrawing the budget, which later frames then pay back. Skips while the droppable
frames alone exceed the line, or the transport holds unsent bytes, are an overload:
``LINE_WARN_SKIPS`` of them within a second give a ``line_busy`` event, at most every
``LINE_WARN_S``; skips while an overdraw is paid back
(the first ~30 ms of a session) are only counted. A ping in a session goes only with room for a
targets frame after it (targets first), but at least every ``link_timeout / 4`` (pongs keep a
link without telemetry alive).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .calibration import ServoMap, channel_positions
from .clock import WRAP_US, ClockSync
from .health import Counts, silence_hint
from .protocol import (
    AUTH_LEN,
    CRC_LEN,
    HEADER_LEN,
    MAX_PAYLOAD_TO_MCU,
    Counters,
    Decoder,
    Direction,
    Enable,
    Encoder,
    ErrorReport,
    Estop,
    FieldRangeError,
    Flag,
    Message,
    Ping,
    Pong,
    Telemetry,
)
from .ramp import Ramp
from .transport import Transport, TransportError

#: Target frames between two configuration refresh frames (50 Hz targets: a frame every
#: 0.2 s, the whole configuration of the 8-joint robot every 1.8 s).
CONFIG_EVERY = 10
#: ESTOP is repeated this often [s] until telemetry shows the e-stop flag ...
ESTOP_REPEAT_S = 0.05
#: ... for at most this long [s] (6 frames; telemetry comes every 20 ms by default).
ESTOP_CONFIRM_S = 0.3
#: Shortest time between two ENABLEs that re-arm a disarmed or watchdog-tripped firmware [s].
REARM_S = 0.5
#: The MCU clock may step back this far between two frames [s] (UDP may reorder them) ...
MCU_CLOCK_BACK_S = 0.1
#: ... and run ahead of the host's clock by this much [s] (one frame's latency); a larger
#: jump either way means the MCU restarted.
MCU_CLOCK_AHEAD_S = 1.0
#: PINGs during a handshake, and while the clock mapping has too few good exchanges [s].
HANDSHAKE_PING_S = 0.05
#: Pings remembered, so that only a PONG answering one of ours counts [count].
PINGS_KEPT = 64
#: The MCU's line speed when none is given [baud] (the firmware's USART0 default).
DEFAULT_LINE_BAUD = 115200
#: Share of the line's byte rate the link uses: headroom for a UART that does not send
#: back to back, a bridge's pauses and clocks that differ by a few percent.
LINE_SHARE = 0.9
#: Burst the line budget allows after a pause [s of line time] (one 50 Hz command period) ...
LINE_BURST_S = 0.02
#: ... but at least this many bytes [B]: two of the longest host frames (authenticated).
LINE_BURST_MIN = 2 * (HEADER_LEN + MAX_PAYLOAD_TO_MCU + AUTH_LEN + CRC_LEN)
#: A ``line_busy`` event at most this often [s] ...
LINE_WARN_S = 10.0
#: ... and only after this many overload skips within one second (a sustained overload, not
#: the odd frame behind a transient stall of the device after a reconnect).
LINE_WARN_SKIPS = 10


class LineBudget:
    """A token bucket of the bytes the MCU's line carries: it fills at ``bytes_per_s`` up to
    ``burst`` [B]; ``spend`` may overdraw it (frames that must go), later frames wait until
    it is paid back.

    Args:
        bytes_per_s: the byte rate granted [B/s].
        burst: the bucket's size [B] (full at the start).
        clock: the time [s] it fills with (``time.monotonic``; a test passes a fake).
    """

    def __init__(self, bytes_per_s: float, burst: float, clock: Callable[[], float]) -> None:
        self.bytes_per_s = bytes_per_s
        self.burst = burst
        self.clock = clock
        self._bytes = burst
        self._t = clock()

    @classmethod
    def for_line(cls, baud: int, clock: Callable[[], float]) -> LineBudget:
        """``LINE_SHARE`` of an 8N1 line of ``baud`` [baud], with ``LINE_BURST_S`` of burst."""
        rate = LINE_SHARE * baud / 10.0
        return cls(rate, max(rate * LINE_BURST_S, LINE_BURST_MIN), clock)

    @property
    def available(self) -> float:
        """Bytes that may be sent now [B] (negative while an overdraw is paid back)."""
        t = self.clock()
        self._bytes = min(self.burst, self._bytes + (t - self._t) * self.bytes_per_s)
        self._t = t
        return self._bytes

    def fits(self, size: int) -> bool:
        """``size`` [B] can be sent now without overdrawing."""
        return self.available >= size

    def spend(self, size: int) -> None:
        """Take ``size`` [B] for a frame sent (overdrawing if need be)."""
        self._bytes = self.available - size


@dataclass(frozen=True)
class Measurement:
    """One telemetry report, in joint terms.

    Attributes:
        stamp: host time of the MCU's timestamp [s] (the clock of ``now()``), or None before
            the first ping/pong exchange of the session.
        mcu_time_us: the raw MCU timestamp [us].
        positions: joint angles [rad], by joint name in servo-map order: measured by the
            joint's potentiometer where ``measured`` names it, else the firmware's estimate.
        pulses_us: commanded pulse widths [us], by joint name.
        flags: firmware status flags.
        limit_mask: channels clamped at a limit.
        counters: the firmware receiver's frame counters.
        measured: the joints whose position is measured (feedback_mask).
    """

    stamp: float | None
    mcu_time_us: int
    positions: dict[str, float]
    pulses_us: dict[str, int]
    flags: Flag
    limit_mask: int
    counters: Counters
    measured: frozenset[str] = frozenset()

    @property
    def estimated(self) -> list[str]:
        """The joints whose position is the firmware's estimate, in servo-map order."""
        return [j for j in self.positions if j not in self.measured]


@dataclass(frozen=True)
class LinkEvent:
    """Something worth a log line.

    ``kind`` is connected (the handshake completed), lost (a failed read or write, or no valid
    frame for ``link_timeout``), no_answer (an open transport whose device answered no PING
    within ``link_timeout``; the message says why, e.g. an echo), open_failed, mcu_reset (the
    MCU restarted behind an open link), tripped (a lost session, an MCU restart or the
    firmware's watchdog after targets flowed: disarmed until the operator re-arms), rearmed,
    stop_state (the operator's stop state latched or released the e-stop, or its release ended a
    trip), send_failed (a message that cannot be encoded), error_report (the firmware refused a
    frame) or line_busy (frames skipped: more to send than the line carries).
    """

    kind: str
    message: str


@dataclass
class LinkStats:
    """Link-level counters (the decoder's frame counters are in ``DriverLink.decoder.stats``).

    Attributes:
        opens: transports opened.
        connects: handshakes completed on an open transport (sessions begun by a connect).
        no_answers: open transports given up because no PING was answered.
        disconnects: sessions lost (including timeouts).
        timeouts: sessions lost because no valid frame came for ``link_timeout``.
        mcu_resets: MCU restarts seen behind an open link.
        rearms: ENABLEs sent again beside targets: one the firmware lost, or the first after a
            trip once the operator re-armed.
        trips: trips (see the module docstring): disarmed until the operator re-arms.
        frames_sent: frames written.
        bytes_sent: bytes written [B].
        frames_skipped_line_busy: frames that a newer one supersedes (targets, pings in a
            session, configuration refresh frames) not sent because the line was busy: the
            line budget could not take them, or the transport still held unsent bytes.
        bytes_received: bytes read from the transport.
        telemetry: telemetry reports received in a session.
        pongs: pongs received that answer one of our pings.
        stray_pongs: valid pongs that answer no ping of this connection (ignored).
        error_reports: error reports received.
        unstamped: reports delivered without a stamp because their mapped time was not
            after the previous stamp.
        unverified: authenticated frames that arrived during a handshake that then succeeded
            (MACed with the boot id the link did not know yet): taken out of the decoder's
            ``bad_auth``, which then counts only frames that fail with a known boot id.
        ramped_targets: target frames slew-limited by the ramp.
    """

    opens: int = 0
    connects: int = 0
    no_answers: int = 0
    disconnects: int = 0
    timeouts: int = 0
    mcu_resets: int = 0
    rearms: int = 0
    trips: int = 0
    frames_sent: int = 0
    bytes_sent: int = 0
    frames_skipped_line_busy: int = 0
    bytes_received: int = 0
    telemetry: int = 0
    pongs: int = 0
    stray_pongs: int = 0
    error_reports: int = 0
    unstamped: int = 0
    unverified: int = 0
    ramped_targets: int = 0


def auth_counter_start(wall_time_s: float) -> int:
    """A replay counter start that grows with wall time: 1024 frames of headroom per second,
    wrapping every 2^22 s (48 days), so a restarted driver starts above its last counter."""
    return (int(wall_time_s) % (1 << 22)) << 10


def mcu_clock_step_us(previous_us: int, current_us: int) -> int:
    """Signed step [us] from one raw 32-bit MCU timestamp to the next, across a wrap."""
    return (current_us - previous_us + WRAP_US // 2) % WRAP_US - WRAP_US // 2


class DriverLink:
    """Connection to the firmware over one transport.

    Args:
        transport: serial, UDP or TCP.
        servos: joint <-> channel map and firmware settings, sent in every session.
        now: host clock of the telemetry stamps [s] (the driver node passes ROS time).
        key: 16-byte key for authenticated mode, or None.
        enable_on_connect: arm the servos (ENABLE(1)) in the sessions until ``enable`` or
            ``estop`` says otherwise, or a trip until the operator re-arms.
        min_backoff: first reconnect delay [s].
        max_backoff: longest reconnect delay [s].
        link_timeout: an open link without a valid frame from the MCU for this long is
            lost, and a handshake without a PONG for this long is given up [s].
        command_period: time between two ``send_targets`` calls [s]: the ramp moves each
            joint by at most the servo speed times this per frame.
        line_baud: the speed of the MCU's UART [baud] (behind a Wi-Fi bridge: the bridge's
            UART speed, not the network's): the link sends at most ``LINE_SHARE`` of it.
        monotonic: the clock [s] of timeouts, backoff, repeats and the line budget (a test
            passes a fake one).

    Attributes:
        state: "closed" (waiting for the next attempt), "opening" (the transport is being
            opened on a worker thread), "handshake" (open, only PINGs sent) or "session".
        boot_id: the MCU's boot id learnt in the handshake (0 before the first).
        want_enabled: the servos are to be armed (the last ``enable``, or ``enable_on_connect``).
        estopped: an e-stop is latched: no targets, no ENABLE, until ``enable(True)`` (or,
            latched by the stop state, until it says false).
        estop_source: what latched the e-stop: "service" (``estop``), "topic"
            (``operator_stop``), "" while none is latched.
        tripped: why the link is tripped ("" if not): no targets, no ENABLE until
            ``enable(True)``, a release of the stop state after the trip, or ``resume()``.
        stop_state: the operator's stop state last heard (None: never).
        estop_confirmed: telemetry has shown the firmware's e-stop flag since the latest
            ESTOP was sent.
        lost_reason: why the link was last lost ("" if never).
        ramp: the slew limit of the targets after a session starts.
        line_baud: the MCU's line speed [baud].
        budget: the line's byte budget.
    """

    def __init__(
        self,
        transport: Transport,
        servos: ServoMap,
        now: Callable[[], float],
        key: bytes | None = None,
        enable_on_connect: bool = True,
        min_backoff: float = 0.25,
        max_backoff: float = 4.0,
        link_timeout: float = 1.0,
        command_period: float = 0.02,
        line_baud: int = DEFAULT_LINE_BAUD,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.transport = transport
        self.monotonic = monotonic
        self.line_baud = line_baud
        self.budget = LineBudget.for_line(line_baud, monotonic)
        self.servos = servos
        self.now = now
        self.key = key
        self.min_backoff = min_backoff
        self.max_backoff = max_backoff
        self.link_timeout = link_timeout
        self.encoder = Encoder(key, Direction.TO_MCU, counter=auth_counter_start(time.time()))
        self.decoder = Decoder(key, Direction.TO_HOST)
        self.clock = ClockSync()
        self.stats = LinkStats()
        self.state = "closed"
        self.boot_id = 0
        self.want_enabled = enable_on_connect
        self.estopped = False
        self.estop_source = ""
        self.estop_confirmed = False
        self.tripped = ""
        self.stop_state: bool | None = None
        self.lost_reason = ""
        speed = servos.system.servo_speed_cdeg_s * math.pi / 18000.0  # [rad/s]
        self.ramp = Ramp(speed, command_period)
        self._backoff = min_backoff
        self._next_attempt = 0.0
        self._opening: threading.Thread | None = None
        self._open_error: TransportError | None = None
        self._generation = 0  # +1 per close: an opening that finishes after it is undone
        self._handshake_counts = Counts(0.0)  # the counters when the handshake began
        self._restarting = False  # the handshake follows an MCU restart, not a connect
        self._pings: deque[int] = deque(maxlen=PINGS_KEPT)  # host_time_us of our pings
        self._next_sync_ping = 0.0  # [s, monotonic()]
        self._targets_since_refresh = 0  # target frames sent since the latest refresh
        self._config_cursor = 0
        self._targets_bytes = 0  # the latest target frame's size [B]
        self._last_ping_sent = -math.inf  # [s, monotonic()]
        self._next_line_warning = -math.inf  # [s, monotonic()]
        self._overload_skips: deque[float] = deque(maxlen=LINE_WARN_SKIPS)  # [s, monotonic()]
        self._last_rx = 0.0  # monotonic() of the latest valid frame, or handshake start
        self._last_mcu: tuple[int, float] | None = None  # latest MCU time [us], received [s]
        self._estop_until = 0.0  # end of the ESTOP repeats [s, monotonic()]
        self._next_estop = 0.0  # next ESTOP repeat [s, monotonic()]
        self._mcu_flags: Flag | None = None  # of the session's latest telemetry
        # the session's latest count of frames acted on, the MCU time [us] of its first report,
        # and the MCU time of the newest report [us]
        self._acted_on: tuple[int, int] | None = None
        self._report_mcu_us: int | None = None
        self._last_sent: dict[str, float] | None = None  # latest targets sent [rad]
        self._first_report_pending = False  # the session waits for its first telemetry
        self._next_rearm = 0.0  # earliest next re-arming ENABLE [s, monotonic()]
        self._targets_flowed = False  # a targets frame has been sent (trips count from then)
        self._armed_seen = False  # a report of this session showed the firmware armed
        self._tripped_at = -math.inf  # the latest trip [s, monotonic()]
        self._stop_heard_at = -math.inf  # the stop state's latest arrival [s, monotonic()]
        self._last_stamp: float | None = None  # latest stamp delivered [s]

    @property
    def connected(self) -> bool:
        """The handshake completed: a session is running."""
        return self.state == "session"

    def counts(self) -> Counts:
        """The link's cumulative counters now, for :class:`.health.LinkMonitor`."""
        dec = self.decoder.stats
        return Counts(
            t=self.monotonic(),
            bytes_received=self.stats.bytes_received,
            telemetry=self.stats.telemetry,
            pongs=self.stats.pongs,
            frames_ok=dec.frames_ok,
            bad_frames=dec.bad_crc + dec.bad_length + dec.bad_payload,
            bad_auth=dec.bad_auth,
            replayed=dec.replayed,
            echoed=dec.echoed,
        )

    # ------------------------------------------------------------------ connection
    def _open_async(self) -> None:
        """Start opening the transport on a worker thread (a connect may block)."""
        self.state = "opening"
        self._open_error = None
        generation = self._generation

        def work() -> None:
            try:
                self.transport.open()
            except TransportError as exc:
                self._open_error = exc
                return
            if generation != self._generation:  # closed meanwhile: undo
                self.transport.close()

        self._opening = threading.Thread(target=work, name="snake-link-open", daemon=True)
        self._opening.start()

    def _advance_connection(self, events: list[LinkEvent]) -> None:
        """Start an opening when due; finish one that is done; time out a handshake."""
        busy = self._opening is not None and self._opening.is_alive()  # an undone opening
        if self.state == "closed" and self.monotonic() >= self._next_attempt and not busy:
            self._open_async()
        if self.state == "opening":
            if self._opening is not None and self._opening.is_alive():
                return
            if self._open_error is not None:
                self._lost(str(self._open_error), events, "open_failed")
                return
            self.stats.opens += 1
            self._begin_handshake()
        if self.state == "handshake" and self.silence_s > self.link_timeout:
            hint = silence_hint(self.counts().minus(self._handshake_counts))
            self.stats.no_answers += 1
            self._lost(
                f"{self.transport.description}: no PONG within {self.link_timeout:g} s ({hint})",
                events,
                "no_answer",
            )

    def _begin_handshake(self) -> None:
        """Only PINGs from now until a PONG answers one (boot id 0 in their MACs)."""
        self.state = "handshake"
        stats = self.decoder.stats
        self.decoder = Decoder(self.key, Direction.TO_HOST)
        self.decoder.stats = stats
        self._pings.clear()
        self._last_rx = self.monotonic()
        self._handshake_counts = self.counts()
        self._next_sync_ping = 0.0
        self._restarting = False

    def _start_session(self, pong: Pong, received: float) -> list[LinkEvent]:
        """A new stream from a (maybe restarted) MCU, whose boot id ``pong`` carries: its
        sequence numbers, replay counter and clock start again (the decoder's counts carry
        on). Configure it, then arm it or repeat the latched e-stop."""
        self.state = "session"
        self.boot_id = pong.boot_id
        self.encoder.boot_id = pong.boot_id
        # the handshake's decoder goes on (its replay window and sequence numbers hold only
        # this boot's frames, its buffer the next frame's start), now with the boot id
        self.decoder.boot_id = pong.boot_id
        stats = self.decoder.stats
        unverified = stats.bad_auth - self._handshake_counts.bad_auth
        stats.bad_auth -= unverified  # the key is right (the PONG verified): boot id unknown
        self.stats.unverified += unverified
        self.clock = ClockSync()
        self.clock.add_exchange(pong.host_time_us * 1e-6, pong.mcu_time_us, received)
        self._last_rx = self.monotonic()
        self._last_mcu = (pong.mcu_time_us, self._last_rx)
        self._mcu_flags = None
        self._acted_on = self._report_mcu_us = None
        self._armed_seen = False
        self._first_report_pending = bool(self.servos.system.telemetry_period_ms)
        self.ramp.stop()
        if not self._first_report_pending and self._last_sent is not None:
            self.ramp.start(self._last_sent)  # telemetry off: from the last targets sent
        events: list[LinkEvent] = []
        for msg in self.servos.config_messages():
            events += self.send(msg)
        if self.estopped:
            events += self._begin_estop()
        elif self._may_arm and not self._first_report_pending:
            events += self._send_enable(True)
        return events

    @property
    def _may_arm(self) -> bool:
        """The servos are to be armed, and neither an e-stop nor a trip holds them."""
        return self.want_enabled and not self.estopped and not self.tripped

    def _trip(self, why: str) -> list[LinkEvent]:
        """Hold the servos disarmed until the operator re-arms them (see the module
        docstring); only once targets have flowed, and not under an e-stop or a trip."""
        if not self._targets_flowed or not self.want_enabled or self.estopped or self.tripped:
            return []
        self.tripped = why
        self._tripped_at = self.monotonic()
        self.stats.trips += 1
        return [
            LinkEvent(
                "tripped",
                f"{why}: the servos stay disarmed until ~/enable true or `snake estop "
                "--release` re-arms them (the stop state's heartbeat does not)",
            )
        ]

    def _on_first_report(self, report: Measurement) -> list[LinkEvent]:
        """The session's first telemetry shows the MCU as the session found it (ENABLE waits
        for it). Its angles are where the servos are if it was armed already (the link
        dropped, the MCU ran on) or where they are measured; a restarted MCU's angle
        estimate is only its boot value, so for the other joints the last targets sent are,
        if any. The ramp starts there; then arm."""
        self._first_report_pending = False
        angles = report.positions
        armed = bool(report.flags & Flag.ENABLED)
        if not armed and self._last_sent is not None:
            measured = {j: a for j, a in angles.items() if j in report.measured}
            angles = {**self._last_sent, **measured}
        self.ramp.start(angles)
        if self._may_arm:
            return self._send_enable(True)
        if self.tripped and not self.estopped and armed:
            return self.send(Enable(False))  # still armed after a trip: disarm it
        return []

    def _lost(self, reason: str, events: list[LinkEvent], kind: str = "lost") -> None:
        tripped = self._trip("the link to the MCU was lost") if self.connected else []
        if self.connected:
            self.stats.disconnects += 1
        self._close_transport()
        self.lost_reason = reason
        delay = self._backoff
        self._next_attempt = self.monotonic() + delay
        self._backoff = min(2.0 * self._backoff, self.max_backoff)
        events.append(LinkEvent(kind, f"{reason}; retrying in {delay:.2g} s"))
        events += tripped

    def _close_transport(self) -> None:
        self._generation += 1
        self.state = "closed"
        if self._opening is None or not self._opening.is_alive():
            self.transport.close()  # else the worker closes what it opens (generation)

    def close(self) -> None:
        """Close the transport (no reconnect until the next ``poll``)."""
        self._close_transport()

    # ------------------------------------------------------------------ sending
    def send(self, msg: Message) -> list[LinkEvent]:
        """Send a message in a session (a PING also during the handshake), whatever the line
        budget says (see ``_send``); a write failure becomes a ``lost`` event, a message that
        cannot be encoded (the replay counter is exhausted) a ``send_failed`` one."""
        return self._send(msg)[1]

    def _frame_bytes(self, msg: Message) -> int:
        """The size of ``msg``'s frame on the wire [B]."""
        return HEADER_LEN + len(msg.payload()) + CRC_LEN + (AUTH_LEN if self.key else 0)

    def _send(
        self, msg: Message, droppable: bool = False, reserve: int = 0
    ) -> tuple[bool, list[LinkEvent]]:
        """Send ``msg`` (see ``send``); whether it was written, and the events.

        Args:
            msg: the message.
            droppable: a newer frame supersedes it: skipped (counted) while the transport
                holds unsent bytes or the line budget cannot take it with ``reserve`` [B] to
                spare. Otherwise it goes, overdrawing the budget if need be.
            reserve: bytes to leave in the budget for a more important frame [B].
        """
        events: list[LinkEvent] = []
        if not (self.connected or (self.state == "handshake" and isinstance(msg, Ping))):
            return False, events
        if droppable and self.transport.pending:
            return False, self._skipped(warn=True)
        if droppable and not self.budget.fits(self._frame_bytes(msg) + reserve):
            # paying back frames that must go (a session's configuration) is no overload
            return False, self._skipped(warn=self.budget.available >= 0)
        try:
            frame = self.encoder.encode(msg)
            self.budget.spend(len(frame))
            self.transport.write(frame)
        except TransportError as exc:
            self._lost(str(exc), events)
            return False, events
        except FieldRangeError as exc:
            events.append(
                LinkEvent(
                    "send_failed",
                    f"cannot send {type(msg).__name__}: {exc} (give the driver a new key file, "
                    "auth_key_file, and flash the firmware built with it: make -C firmware "
                    "AUTH_KEY_FILE=...)",
                )
            )
            return False, events
        self.stats.frames_sent += 1
        self.stats.bytes_sent += len(frame)
        return True, events

    def _skipped(self, warn: bool) -> list[LinkEvent]:
        """Count a frame skipped for a busy line; if ``warn`` (an overload skip) and the
        latest ``LINE_WARN_SKIPS`` of those fell within a second, a ``line_busy`` event at
        most every ``LINE_WARN_S``."""
        self.stats.frames_skipped_line_busy += 1
        t = self.monotonic()
        if not warn:
            return []
        self._overload_skips.append(t)
        sustained = (
            len(self._overload_skips) == LINE_WARN_SKIPS and t - self._overload_skips[0] <= 1.0
        )
        if not sustained or t < self._next_line_warning:
            return []
        self._next_line_warning = t + LINE_WARN_S
        rate = self.budget.bytes_per_s
        return [
            LinkEvent(
                "line_busy",
                f"{self.stats.frames_skipped_line_busy} frame(s) skipped so far (targets, "
                f"pings, configuration refresh; the newest wins): more to send than the line "
                f"carries (at most {rate:.0f} bytes/s on {self.line_baud} baud; target "
                f"frames of {self._targets_bytes} bytes)",
            )
        ]

    def _refresh_config(self) -> list[LinkEvent]:
        """One configuration frame in rotation after every ``CONFIG_EVERY`` target frames
        sent, so a configuration frame lost or corrupted on the way is repaired (the firmware
        applies an identical calibration as a no-op); one skipped for a busy line is tried
        again beside the next targets. Only beside targets: every valid frame feeds the
        firmware's watchdog, which must still trip when the commands stop."""
        self._targets_since_refresh += 1
        if self._targets_since_refresh < CONFIG_EVERY:
            return []
        messages = self.servos.config_messages()
        cursor = (self._config_cursor + 1) % len(messages)
        sent, events = self._send(messages[cursor], droppable=True)
        if sent:
            self._config_cursor = cursor
            self._targets_since_refresh = 0
        return events

    def send_targets(
        self, positions: Mapping[str, float], duration_ms: int = 0
    ) -> tuple[list[str], list[LinkEvent]]:
        """Send joint targets [rad] (clamped to the limits, slew-limited while the session's
        ramp runs); returns the clamped joints. Nothing is sent while an e-stop is latched,
        outside a session, or before the session's first telemetry (where the robot is)
        unless telemetry is off; they are skipped (counted) while the line is busy (the next
        call's targets supersede them).

        Raises:
            CalibrationError: a mapped joint is missing from ``positions``.
        """
        message, clamped = self.servos.targets(positions, duration_ms)
        blocked = self.estopped or self.tripped or not self.want_enabled
        if blocked or not self.connected or self._first_report_pending:
            return clamped, []
        safe = {c.joint: c.clamp(positions[c.joint]) for c in self.servos.channels}
        if self.ramp.active:
            safe = self.ramp.step(safe)
            self.stats.ramped_targets += 1
            message, _ = self.servos.targets(safe, duration_ms)
        events = self._rearm()
        self._targets_bytes = self._frame_bytes(message)
        sent, sent_events = self._send(message, droppable=True)
        if not sent:
            return clamped, events + sent_events
        self._targets_flowed = True
        self._last_sent = safe
        return clamped, events + sent_events + self._refresh_config()

    def _rearm(self) -> list[LinkEvent]:
        """ENABLE again, before targets, when the latest telemetry shows the firmware disarmed
        or its watchdog tripped while the servos are to be armed and no trip holds them: the
        session's ENABLE was lost, the watchdog tripped before the first targets (a gait that
        starts after the driver), or the operator re-armed after a trip (the firmware refuses
        targets until an ENABLE). Never past an e-stop, latched here or reported by
        the firmware; not within ``REARM_S`` of an ENABLE."""
        flags = self._mcu_flags
        if flags is None or not self._may_arm or flags & Flag.ESTOP:
            return []
        if flags & Flag.ENABLED and not flags & Flag.WATCHDOG_TRIPPED:
            return []
        if self.monotonic() < self._next_rearm:
            return []
        self.stats.rearms += 1
        why = "watchdog tripped" if flags & Flag.WATCHDOG_TRIPPED else "disarmed"
        event = LinkEvent(
            "rearmed", f"the firmware reports {why}; targets flow and nothing holds it: arming it"
        )
        return [event, *self._send_enable(True)]

    def _send_enable(self, on: bool) -> list[LinkEvent]:
        """Send ENABLE(on); telemetry from before it takes effect re-arms nothing for
        ``REARM_S``."""
        self._next_rearm = self.monotonic() + REARM_S
        return self.send(Enable(on))

    def ping(self) -> list[LinkEvent]:
        """Send a ping stamped with the host clock (for the handshake, round-trip time and
        clock mapping); sent during the handshake (always) and in a session, there only with
        room for a targets frame after it (else skipped, counted) unless no ping has gone
        for ``link_timeout / 4``."""
        host_us = max(0, int(self.now() * 1e6))
        overdue = self.monotonic() - self._last_ping_sent >= self.link_timeout / 4
        droppable = self.state == "session" and not overdue
        sent, events = self._send(Ping(host_us), droppable, reserve=self._targets_bytes)
        if sent:
            self._last_ping_sent = self.monotonic()
            self._pings.append(host_us)
        return events

    def estop(self) -> list[LinkEvent]:
        """Latch the e-stop: send ESTOP now (in a session; else at the session's start) and
        repeat it (in ``poll``, every ``ESTOP_REPEAT_S`` for ``ESTOP_CONFIRM_S``) until
        telemetry shows the e-stop flag; send no targets and no ENABLE (not even after a
        reconnect) until ``enable(True)``."""
        self.estopped = True
        self.estop_source = "service"
        return self._begin_estop()

    def operator_stop(self, stop: bool, age: float = 0.0) -> list[LinkEvent]:
        """The operator's latched stop state, heard again (the ``/estop`` heartbeat) ``age``
        [s] ago (its arrival, before it was handed over).

        True latches the e-stop (``estop``) unless one is latched already. False releases an
        e-stop the stop state latched (as ``enable(True)``, if the servos are to be armed),
        never one of ``estop``. A *release*, false heard after true, that arrived after a trip
        ends it (``resume``): the operator's act. False heard again (the heartbeat) is only
        the current state: it ends no trip (see the module docstring)."""
        t = self.monotonic() - max(0.0, age)
        released = not stop and self.stop_state is True
        self.stop_state, self._stop_heard_at = stop, t
        if stop:
            if self.estopped:
                return []
            self.estopped = True
            self.estop_source = "topic"
            event = LinkEvent("stop_state", "the operator's stop state is true: e-stop latched")
            return [event, *self._begin_estop()]
        if self.estopped and self.estop_source == "topic":
            event = LinkEvent("stop_state", "the operator's stop state is false: e-stop released")
            if not self.want_enabled:
                self.estopped, self.estop_source, self.tripped = False, "", ""
                return [event]
            return [event, *self.enable(True)]
        if released and self.tripped and t > self._tripped_at:
            self.resume()
            return [
                LinkEvent("stop_state", "the operator's stop state was released: the trip ends")
            ]
        return []

    def resume(self) -> None:
        """The operator's deliberate go: end a trip, so that the next targets go with an
        ENABLE (``_rearm``); never releases an e-stop (``enable(True)`` does)."""
        self.tripped = ""

    @property
    def mcu_quiet_us(self) -> int | None:
        """How long the firmware has acted on no new frame, on its own clock [us]: from the
        session's first report showing its latest count of frames acted on
        (``Counters.frames_ok``) to its newest report; None before the session's first report.

        Every frame the firmware acts on but a PING feeds its watchdog, so this never exceeds
        the time since the watchdog was last fed: once it exceeds ``watchdog_ms`` and the
        watchdog's 5 ms check, the newest report shows the trip of an armed firmware."""
        if self._acted_on is None or self._report_mcu_us is None:
            return None
        return mcu_clock_step_us(self._acted_on[1], self._report_mcu_us)

    @property
    def stop_state_age_s(self) -> float | None:
        """Time since the operator's stop state was last heard [s] (None: never)."""
        return None if self.stop_state is None else self.monotonic() - self._stop_heard_at

    def _begin_estop(self) -> list[LinkEvent]:
        self.estop_confirmed = False
        self._estop_until = self.monotonic() + ESTOP_CONFIRM_S
        self._next_estop = 0.0
        return self._repeat_estop()

    def _repeat_estop(self) -> list[LinkEvent]:
        t = self.monotonic()
        if (
            not self.estopped
            or self.estop_confirmed
            or not self.connected
            or not self._next_estop <= t < self._estop_until
        ):
            return []
        self._next_estop = t + ESTOP_REPEAT_S
        return self.send(Estop())

    def enable(self, on: bool) -> list[LinkEvent]:
        """Arm (also releases a latched e-stop and the firmware's e-stop or watchdog trip) or
        disarm the servos, now and in every later session."""
        self.want_enabled = on
        if on:
            self.estopped, self.estop_source, self.tripped = False, "", ""
        return self._send_enable(on)

    # ------------------------------------------------------------------ receiving
    @property
    def silence_s(self) -> float:
        """Time since the latest valid frame from the MCU (or the handshake's start) [s]."""
        return self.monotonic() - self._last_rx

    def poll(self, timeout: float = 0.0) -> tuple[list[Measurement], list[LinkEvent]]:
        """Advance the connection (never blocking on it), read what arrived within
        ``timeout`` [s] and decode it; lose the link if no valid frame came for
        ``link_timeout``; repeat an unconfirmed ESTOP."""
        events: list[LinkEvent] = []
        measurements: list[Measurement] = []
        self._advance_connection(events)
        if self.state not in ("handshake", "session"):
            return measurements, events
        if self.state == "handshake" or self.clock.estimate is None:
            t = self.monotonic()
            if t >= self._next_sync_ping:
                self._next_sync_ping = t + HANDSHAKE_PING_S
                events += self.ping()
                if self.state == "closed":  # the write failed: lost
                    return measurements, events
        try:
            data = self.transport.read(timeout)
        except TransportError as exc:
            self._lost(str(exc), events)
            return measurements, events
        self.stats.bytes_received += len(data)
        received = self.now()
        for _frame, msg in self.decoder.feed_messages(data):
            if isinstance(msg, Pong):
                events += self._on_pong(msg, received)
            elif self.state != "session":
                continue  # nothing but a PONG counts before the handshake completes
            elif isinstance(msg, Telemetry):
                self._last_rx = self.monotonic()
                events += self._follow_mcu_clock(msg.mcu_time_us)
                if self.state != "session":
                    continue  # the MCU restarted: handshake again
                measurements.append(self._measurement(msg, received))
                events += self._watch_trip(msg.flags)
                if self._first_report_pending:
                    events += self._on_first_report(measurements[-1])
            elif isinstance(msg, ErrorReport):
                self._last_rx = self.monotonic()
                self.stats.error_reports += 1
                events.append(LinkEvent("error_report", f"firmware refused a frame: {msg}"))
        silent = self.silence_s
        if self.connected and silent > self.link_timeout:
            self.stats.timeouts += 1
            self._lost(
                f"no valid frame from the MCU for {silent:.2g} s (link_timeout "
                f"{self.link_timeout:g} s): link lost (MCU powered off or hung, bridge or "
                "cable down)",
                events,
            )
        return measurements, events + self._repeat_estop()

    def _on_pong(self, pong: Pong, received: float) -> list[LinkEvent]:
        """A PONG answering one of our pings completes the handshake, reveals an MCU restart
        (another boot id), or is a clock exchange; any other PONG is ignored."""
        if pong.host_time_us not in self._pings:
            self.stats.stray_pongs += 1
            return []
        self.stats.pongs += 1
        self._last_rx = self.monotonic()
        self._backoff = self.min_backoff  # the MCU answers: the next loss retries soon
        if self.state == "handshake" and self._restarting:
            return self._start_session(pong, received)
        if self.state == "handshake":
            self.stats.connects += 1
            event = LinkEvent(
                "connected",
                f"connected to {self.transport.description} (MCU boot id {pong.boot_id})",
            )
            return [event, *self._start_session(pong, received)]
        if pong.boot_id != self.boot_id:
            return self._mcu_restarted(
                f"the MCU's boot id changed from {self.boot_id} to {pong.boot_id}", pong, received
            )
        self.clock.add_exchange(pong.host_time_us * 1e-6, pong.mcu_time_us, received)
        self._last_mcu = (pong.mcu_time_us, self.monotonic())
        return []

    def _mcu_restarted(self, why: str, pong: Pong | None, received: float) -> list[LinkEvent]:
        """A restarted MCU behind the open link: a new session, at once when its PONG is at
        hand, else after a new handshake."""
        self.stats.mcu_resets += 1
        tripped = self._trip("the MCU restarted")
        event = LinkEvent(
            "mcu_reset",
            f"{why}: the MCU restarted; configuring it again"
            + (" (e-stop still latched)" if self.estopped else ""),
        )
        self._begin_handshake()  # a fresh decoder: the new boot's sequence and counters
        if pong is not None:
            return [event, *tripped, *self._start_session(pong, received)]
        self._restarting = True
        return [event, *tripped]

    def _follow_mcu_clock(self, mcu_us: int) -> list[LinkEvent]:
        """Check a telemetry's MCU time [us] against the session's latest: a clock that went
        back, or ran ahead of the host's, means the MCU restarted (with the same boot id if
        its EEPROM was not kept, as in a fresh emulator): handshake again."""
        t = self.monotonic()
        if self._last_mcu is not None:
            last_us, last_t = self._last_mcu
            step_s = mcu_clock_step_us(last_us, mcu_us) * 1e-6
            if step_s < -MCU_CLOCK_BACK_S or step_s > t - last_t + MCU_CLOCK_AHEAD_S:
                why = f"the MCU clock jumped from {last_us} us to {mcu_us} us"
                return self._mcu_restarted(why, None, 0.0)
            if step_s <= 0.0:
                return []  # reordered: keep the latest
        self._last_mcu = (mcu_us, t)
        return []

    def _watch_trip(self, flags: int) -> list[LinkEvent]:
        """A report of the watchdog tripped after one of this session showed the firmware
        armed: trip (a report still tripped after an ENABLE that was lost is none)."""
        if flags & Flag.ENABLED and not flags & Flag.WATCHDOG_TRIPPED:
            self._armed_seen = True
            return []
        if not flags & Flag.WATCHDOG_TRIPPED or not self._armed_seen:
            return []
        self._armed_seen = False
        return self._trip("the firmware's watchdog tripped (no targets for its timeout)")

    def _measurement(self, msg: Telemetry, received: float) -> Measurement:
        self.stats.telemetry += 1
        self._mcu_flags = Flag(msg.flags)
        newest = self._report_mcu_us
        if newest is None or mcu_clock_step_us(newest, msg.mcu_time_us) > 0:  # not reordered
            self._report_mcu_us = msg.mcu_time_us
            if self._acted_on is None or self._acted_on[0] != msg.counters.frames_ok:
                self._acted_on = (msg.counters.frames_ok, msg.mcu_time_us)
        if self.estopped and msg.flags & Flag.ESTOP:
            self.estop_confirmed = True
        positions = channel_positions(self.servos, msg.angles_cdeg)
        pulses = {
            c.joint: msg.pulses_us[c.channel]
            for c in self.servos.channels
            if c.channel < len(msg.pulses_us)
        }
        return Measurement(
            self._stamp(msg.mcu_time_us, received),
            msg.mcu_time_us,
            positions,
            pulses,
            msg.flags,
            msg.limit_mask,
            msg.counters,
            frozenset(c.joint for c in self.servos.channels if msg.measured(c.channel)),
        )

    def _stamp(self, mcu_us: int, received: float) -> float | None:
        """The host time of an MCU time [s]: never after the report's arrival, and after
        every earlier stamp across sessions and clock re-fits (else None, counted)."""
        stamp = self.clock.to_host(mcu_us)
        if stamp is None:
            return None
        stamp = min(stamp, received)
        if self._last_stamp is not None and stamp <= self._last_stamp:
            self.stats.unstamped += 1
            return None
        self._last_stamp = stamp
        return stamp
