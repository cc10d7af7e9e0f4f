"""The driver's link to the firmware (no ROS): connect, configure, command, decode, reconnect.

A :class:`DriverLink` owns a transport, the frame encoder/decoder, the servo map and the
clock estimate. It never raises on what the wire brings: bad frames are counted by the
decoder, a lost link becomes a :class:`LinkEvent` and a reconnect attempt after a backoff
that doubles up to ``max_backoff``. A link that stays open but brings no valid frame for
``link_timeout`` counts as lost too, and an MCU that restarted behind an open link (its clock
jumps) is configured again. Telemetry stamps are in the clock of ``now()`` (the driver node
passes ROS time); timeouts, backoff and e-stop repeats run on ``time.monotonic``, as the
wire does, whatever ROS time does.

Every connection, and every MCU restart, starts a *session*: a fresh decoder (the MCU's
sequence numbers and replay counter start again), a fresh clock mapping (its clock starts
again), then the configuration, and ENABLE(1) only while the servos are meant to be armed.
An e-stop is latched in the link: until ``enable(True)`` it sends no targets, every session
starts with ESTOP instead of ENABLE, and ESTOP is repeated until telemetry confirms it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .calibration import ServoMap, channel_positions
from .clock import WRAP_US, ClockSync
from .protocol import (
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


@dataclass(frozen=True)
class Measurement:
    """One telemetry report, in joint terms.

    Attributes:
        stamp: host time of the MCU's timestamp [s] (the clock of ``now()``), or None before
            the first ping/pong exchange of the session.
        mcu_time_us: the raw MCU timestamp [us].
        positions: estimated joint angles [rad], by joint name in servo-map order.
        pulses_us: commanded pulse widths [us], by joint name.
        flags: firmware status flags.
        limit_mask: channels clamped at a limit.
        counters: the firmware receiver's frame counters.
    """

    stamp: float | None
    mcu_time_us: int
    positions: dict[str, float]
    pulses_us: dict[str, int]
    flags: Flag
    limit_mask: int
    counters: Counters


@dataclass(frozen=True)
class LinkEvent:
    """Something worth a log line.

    ``kind`` is connected, lost (a failed read or write, or no valid frame for
    ``link_timeout``), open_failed, mcu_reset (the MCU restarted behind an open link),
    send_failed (a message that cannot be encoded) or error_report (the firmware refused a
    frame).
    """

    kind: str
    message: str


@dataclass
class LinkStats:
    """Link-level counters (the decoder's frame counters are in ``DriverLink.decoder.stats``).

    Attributes:
        connects: transports opened.
        disconnects: open transports lost (including timeouts).
        timeouts: links lost because no valid frame came for ``link_timeout``.
        mcu_resets: MCU restarts seen behind an open link.
        rearms: ENABLEs sent again because targets flowed to a disarmed firmware.
        frames_sent: frames written.
        telemetry: telemetry reports received.
        pongs: pongs received.
        error_reports: error reports received.
    """

    connects: int = 0
    disconnects: int = 0
    timeouts: int = 0
    mcu_resets: int = 0
    rearms: int = 0
    frames_sent: int = 0
    telemetry: int = 0
    pongs: int = 0
    error_reports: int = 0


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
        enable_on_connect: arm the servos (ENABLE(1)) in every session until ``enable`` or
            ``estop`` says otherwise.
        min_backoff: first reconnect delay [s].
        max_backoff: longest reconnect delay [s].
        link_timeout: an open link without a valid frame from the MCU for this long is
            lost [s].

    Attributes:
        want_enabled: the servos are to be armed (the last ``enable``, or ``enable_on_connect``).
        estopped: an e-stop is latched: no targets, no ENABLE, until ``enable(True)``.
        estop_confirmed: telemetry has shown the firmware's e-stop flag since the latest
            ESTOP was sent.
        lost_reason: why the link was last lost ("" if never).
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
    ) -> None:
        self.transport = transport
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
        self.connected = False
        self.want_enabled = enable_on_connect
        self.estopped = False
        self.estop_confirmed = False
        self.lost_reason = ""
        self._backoff = min_backoff
        self._next_attempt = 0.0
        self._targets_sent = 0
        self._config_cursor = 0
        self._last_rx = 0.0  # time.monotonic() of the session's latest valid frame [s]
        self._last_mcu: tuple[int, float] | None = None  # latest MCU time [us], received [s]
        self._estop_until = 0.0  # end of the ESTOP repeats [s, time.monotonic()]
        self._next_estop = 0.0  # next ESTOP repeat [s, time.monotonic()]
        self._mcu_flags: Flag | None = None  # of the session's latest telemetry
        self._next_rearm = 0.0  # earliest next re-arming ENABLE [s, time.monotonic()]

    # ------------------------------------------------------------------ connection
    def _connect(self, events: list[LinkEvent]) -> None:
        if time.monotonic() < self._next_attempt:
            return
        try:
            self.transport.open()
        except TransportError as exc:
            self._lost(str(exc), events, "open_failed")
            return
        self.connected = True
        self.stats.connects += 1
        events.append(LinkEvent("connected", f"connected to {self.transport.description}"))
        events += self._start_session()

    def _start_session(self) -> list[LinkEvent]:
        """A new stream from a (maybe restarted) MCU: its sequence numbers, replay counter and
        clock start again (the decoder's counts carry on). Configure it, then arm it or
        repeat the latched e-stop, and ping for the clock mapping."""
        stats = self.decoder.stats
        self.decoder = Decoder(self.key, Direction.TO_HOST)
        self.decoder.stats = stats
        self.clock = ClockSync()
        self._last_rx = time.monotonic()
        self._last_mcu = None
        self._mcu_flags = None
        events: list[LinkEvent] = []
        for msg in self.servos.config_messages():
            events += self.send(msg)
        if self.estopped:
            events += self._begin_estop()
        elif self.want_enabled:
            events += self._send_enable(True)
        return events + self.ping()

    def _lost(self, reason: str, events: list[LinkEvent], kind: str = "lost") -> None:
        if self.connected:
            self.stats.disconnects += 1
        self.connected = False
        self.lost_reason = reason
        self.transport.close()
        delay = self._backoff
        self._next_attempt = time.monotonic() + delay
        self._backoff = min(2.0 * self._backoff, self.max_backoff)
        events.append(LinkEvent(kind, f"{reason}; retrying in {delay:.2g} s"))

    def close(self) -> None:
        """Close the transport (no reconnect until the next ``poll``)."""
        self.transport.close()
        self.connected = False

    # ------------------------------------------------------------------ sending
    def send(self, msg: Message) -> list[LinkEvent]:
        """Send a message if connected; a write failure becomes a ``lost`` event, a message
        that cannot be encoded (the replay counter is exhausted) a ``send_failed`` one."""
        events: list[LinkEvent] = []
        if not self.connected:
            return events
        try:
            self.transport.write(self.encoder.encode(msg))
        except TransportError as exc:
            self._lost(str(exc), events)
        except FieldRangeError as exc:
            events.append(
                LinkEvent(
                    "send_failed",
                    f"cannot send {type(msg).__name__}: {exc} (set a new auth_key on the "
                    "driver and flash the firmware with it: make -C firmware AUTH_KEY=...)",
                )
            )
        else:
            self.stats.frames_sent += 1
        return events

    def _refresh_config(self) -> list[LinkEvent]:
        """One configuration frame in rotation every ``CONFIG_EVERY`` target frames, so a
        configuration frame lost or corrupted on the way is repaired (the firmware applies
        an identical calibration as a no-op). Only beside targets: every valid frame feeds
        the firmware's watchdog, which must still trip when the commands stop."""
        self._targets_sent += 1
        if self._targets_sent % CONFIG_EVERY:
            return []
        messages = self.servos.config_messages()
        self._config_cursor = (self._config_cursor + 1) % len(messages)
        return self.send(messages[self._config_cursor])

    def send_targets(
        self, positions: Mapping[str, float], duration_ms: int = 0
    ) -> tuple[list[str], list[LinkEvent]]:
        """Send joint targets [rad] (clamped to the limits); returns the clamped joints.
        Nothing is sent while an e-stop is latched."""
        if self.estopped:
            return [], []
        message, clamped = self.servos.targets(positions, duration_ms)
        return clamped, self._rearm() + self.send(message) + self._refresh_config()

    def _rearm(self) -> list[LinkEvent]:
        """ENABLE again, before targets, when the latest telemetry shows the firmware disarmed
        or its watchdog tripped while the servos are to be armed: the session's ENABLE was
        lost, or the commands paused for longer than the watchdog timeout (the firmware held
        or went limp meanwhile, and refuses targets until an ENABLE). Never past an e-stop,
        latched here or reported by the firmware; not within ``REARM_S`` of an ENABLE."""
        flags = self._mcu_flags
        if flags is None or not self.want_enabled or self.estopped or flags & Flag.ESTOP:
            return []
        if flags & Flag.ENABLED and not flags & Flag.WATCHDOG_TRIPPED:
            return []
        if time.monotonic() < self._next_rearm:
            return []
        self.stats.rearms += 1
        why = "watchdog tripped" if flags & Flag.WATCHDOG_TRIPPED else "disarmed"
        event = LinkEvent("rearmed", f"the firmware reports {why} while targets flow: arming it")
        return [event, *self._send_enable(True)]

    def _send_enable(self, on: bool) -> list[LinkEvent]:
        """Send ENABLE(on); telemetry from before it takes effect re-arms nothing for
        ``REARM_S``."""
        self._next_rearm = time.monotonic() + REARM_S
        return self.send(Enable(on))

    def ping(self) -> list[LinkEvent]:
        """Send a ping stamped with the host clock (for round-trip time and clock mapping)."""
        return self.send(Ping(max(0, int(self.now() * 1e6))))

    def estop(self) -> list[LinkEvent]:
        """Latch the e-stop: send ESTOP now and repeat it (in ``poll``, every
        ``ESTOP_REPEAT_S`` for ``ESTOP_CONFIRM_S``) until telemetry shows the e-stop flag;
        send no targets and no ENABLE (not even after a reconnect) until ``enable(True)``."""
        self.estopped = True
        return self._begin_estop()

    def _begin_estop(self) -> list[LinkEvent]:
        self.estop_confirmed = False
        self._estop_until = time.monotonic() + ESTOP_CONFIRM_S
        self._next_estop = 0.0
        return self._repeat_estop()

    def _repeat_estop(self) -> list[LinkEvent]:
        t = time.monotonic()
        if (
            not self.estopped
            or self.estop_confirmed
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
            self.estopped = False
        return self._send_enable(on)

    # ------------------------------------------------------------------ receiving
    @property
    def silence_s(self) -> float:
        """Time since the session's latest valid frame from the MCU (or its start) [s]."""
        return time.monotonic() - self._last_rx

    def poll(self, timeout: float = 0.0) -> tuple[list[Measurement], list[LinkEvent]]:
        """Connect when due, read what arrived within ``timeout`` [s] and decode it; lose the
        link if no valid frame came for ``link_timeout``; repeat an unconfirmed ESTOP."""
        events: list[LinkEvent] = []
        measurements: list[Measurement] = []
        if not self.connected:
            self._connect(events)
            if not self.connected:
                return measurements, events
        try:
            data = self.transport.read(timeout)
        except TransportError as exc:
            self._lost(str(exc), events)
            return measurements, events
        received = self.now()
        for _frame, msg in self.decoder.feed_messages(data):
            self._last_rx = time.monotonic()
            self._backoff = self.min_backoff  # the MCU answers: the next loss retries soon
            if isinstance(msg, Telemetry | Pong):
                events += self._follow_mcu_clock(msg.mcu_time_us)
            if isinstance(msg, Telemetry):
                measurements.append(self._measurement(msg))
            elif isinstance(msg, Pong):
                self.stats.pongs += 1
                self.clock.add_exchange(msg.host_time_us * 1e-6, msg.mcu_time_us, received)
            elif isinstance(msg, ErrorReport):
                self.stats.error_reports += 1
                events.append(LinkEvent("error_report", f"firmware refused a frame: {msg}"))
        silent = self.silence_s
        if self.connected and silent > self.link_timeout:
            self.stats.timeouts += 1
            self._lost(
                f"no valid frame from the MCU for {silent:.2g} s (link_timeout "
                f"{self.link_timeout:g} s): link lost (MCU reset or powered off, bridge or "
                "cable down, or a wrong auth_key)",
                events,
            )
        return measurements, events + self._repeat_estop()

    def _follow_mcu_clock(self, mcu_us: int) -> list[LinkEvent]:
        """Check a frame's MCU time [us] against the session's latest: a clock that went
        back, or ran ahead of the host's, means the MCU restarted: start a new session."""
        t = time.monotonic()
        events: list[LinkEvent] = []
        if self._last_mcu is not None:
            last_us, last_t = self._last_mcu
            step_s = mcu_clock_step_us(last_us, mcu_us) * 1e-6
            if step_s < -MCU_CLOCK_BACK_S or step_s > t - last_t + MCU_CLOCK_AHEAD_S:
                self.stats.mcu_resets += 1
                events.append(
                    LinkEvent(
                        "mcu_reset",
                        f"the MCU clock jumped from {last_us} us to {mcu_us} us: the MCU "
                        "restarted; configuring it again"
                        + (" (e-stop still latched)" if self.estopped else ""),
                    )
                )
                events += self._start_session()
            elif step_s <= 0.0:
                return events  # reordered: keep the latest
        self._last_mcu = (mcu_us, t)
        return events

    def _measurement(self, msg: Telemetry) -> Measurement:
        self.stats.telemetry += 1
        self._mcu_flags = Flag(msg.flags)
        if self.estopped and msg.flags & Flag.ESTOP:
            self.estop_confirmed = True
        positions = channel_positions(self.servos, msg.angles_cdeg)
        pulses = {
            c.joint: msg.pulses_us[c.channel]
            for c in self.servos.channels
            if c.channel < len(msg.pulses_us)
        }
        return Measurement(
            self.clock.to_host(msg.mcu_time_us),
            msg.mcu_time_us,
            positions,
            pulses,
            msg.flags,
            msg.limit_mask,
            msg.counters,
        )
