"""The driver's link to the firmware (no ROS): connect, configure, command, decode, reconnect.

A :class:`DriverLink` owns a transport, the frame encoder/decoder, the servo map and the
clock estimate. It never raises on what the wire brings: bad frames are counted by the
decoder, a lost link becomes a :class:`LinkEvent` and a reconnect attempt after a backoff
that doubles up to ``max_backoff``. Host time is whatever ``now()`` returns (the driver
node passes ROS time), so telemetry stamps come out in that clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .calibration import ServoMap, channel_positions
from .clock import ClockSync
from .protocol import (
    Counters,
    Decoder,
    Direction,
    Enable,
    Encoder,
    ErrorReport,
    Estop,
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


@dataclass(frozen=True)
class Measurement:
    """One telemetry report, in joint terms.

    Attributes:
        stamp: host time of the MCU's timestamp [s] (the clock of ``now()``), or None before
            the first ping/pong exchange.
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
    """Something worth a log line: ``kind`` is connected, lost, open_failed or error_report."""

    kind: str
    message: str


@dataclass
class LinkStats:
    """Link-level counters (the decoder's frame counters are in ``DriverLink.decoder.stats``)."""

    connects: int = 0
    disconnects: int = 0
    frames_sent: int = 0
    telemetry: int = 0
    pongs: int = 0
    error_reports: int = 0
    last: Measurement | None = field(default=None, repr=False)


def auth_counter_start(wall_time_s: float) -> int:
    """A replay counter start that grows with wall time: 1024 frames of headroom per second,
    wrapping every 2^22 s (48 days), so a restarted driver starts above its last counter."""
    return (int(wall_time_s) % (1 << 22)) << 10


class DriverLink:
    """Connection to the firmware over one transport.

    Args:
        transport: serial, UDP or TCP.
        servos: joint <-> channel map and firmware settings, sent on every connect.
        now: host clock [s] (the driver node passes ROS time).
        key: 16-byte key for authenticated mode, or None.
        enable_on_connect: send ENABLE(1) after configuring.
        min_backoff: first reconnect delay [s].
        max_backoff: longest reconnect delay [s].
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
    ) -> None:
        self.transport = transport
        self.servos = servos
        self.now = now
        self.key = key
        self.enable_on_connect = enable_on_connect
        self.min_backoff = min_backoff
        self.max_backoff = max_backoff
        self.encoder = Encoder(key, Direction.TO_MCU, counter=auth_counter_start(time.time()))
        self.decoder = Decoder(key, Direction.TO_HOST)
        self.clock = ClockSync()
        self.stats = LinkStats()
        self.connected = False
        self._backoff = min_backoff
        self._next_attempt = 0.0
        self._targets_sent = 0
        self._config_cursor = 0

    # ------------------------------------------------------------------ connection
    def _connect(self, events: list[LinkEvent]) -> None:
        now = self.now()
        if now < self._next_attempt:
            return
        try:
            self.transport.open()
            self.connected = True
            # A new stream (the MCU may have rebooted: its sequence numbers and replay
            # counter start again); the counts carry on across connections.
            stats = self.decoder.stats
            self.decoder = Decoder(self.key, Direction.TO_HOST)
            self.decoder.stats = stats
            for msg in self.servos.config_messages():
                self._send(msg)
            if self.enable_on_connect:
                self._send(Enable(True))
        except TransportError as exc:
            self._lost(exc, events, "open_failed")
            return
        self.stats.connects += 1
        self._backoff = self.min_backoff
        events.append(LinkEvent("connected", f"connected to {self.transport.description}"))

    def _lost(self, exc: Exception, events: list[LinkEvent], kind: str = "lost") -> None:
        if self.connected:
            self.stats.disconnects += 1
        self.connected = False
        self.transport.close()
        delay = self._backoff
        self._next_attempt = self.now() + delay
        self._backoff = min(2.0 * self._backoff, self.max_backoff)
        events.append(LinkEvent(kind, f"{exc}; retrying in {delay:.2g} s"))

    def close(self) -> None:
        """Close the transport (no reconnect until the next ``poll``)."""
        self.transport.close()
        self.connected = False

    # ------------------------------------------------------------------ sending
    def _send(self, msg: Message) -> None:
        self.transport.write(self.encoder.encode(msg))
        self.stats.frames_sent += 1

    def send(self, msg: Message) -> list[LinkEvent]:
        """Send a message if connected; a write failure becomes a ``lost`` event."""
        events: list[LinkEvent] = []
        if self.connected:
            try:
                self._send(msg)
            except TransportError as exc:
                self._lost(exc, events)
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
        """Send joint targets [rad] (clamped to the limits); returns the clamped joints."""
        message, clamped = self.servos.targets(positions, duration_ms)
        return clamped, self.send(message) + self._refresh_config()

    def ping(self) -> list[LinkEvent]:
        """Send a ping stamped with the host clock (for round-trip time and clock mapping)."""
        return self.send(Ping(max(0, int(self.now() * 1e6))))

    def estop(self) -> list[LinkEvent]:
        """Cut all pulses (latched in the firmware until enabled)."""
        return self.send(Estop())

    def enable(self, on: bool) -> list[LinkEvent]:
        """Enable (also clears an e-stop or watchdog trip) or disable the pulses."""
        return self.send(Enable(on))

    # ------------------------------------------------------------------ receiving
    def poll(self, timeout: float = 0.0) -> tuple[list[Measurement], list[LinkEvent]]:
        """Connect when due, read what arrived within ``timeout`` [s] and decode it."""
        events: list[LinkEvent] = []
        measurements: list[Measurement] = []
        if not self.connected:
            self._connect(events)
            if not self.connected:
                return measurements, events
        try:
            data = self.transport.read(timeout)
        except TransportError as exc:
            self._lost(exc, events)
            return measurements, events
        received = self.now()
        for _frame, msg in self.decoder.feed_messages(data):
            if isinstance(msg, Telemetry):
                measurements.append(self._measurement(msg))
            elif isinstance(msg, Pong):
                self.stats.pongs += 1
                self.clock.add_exchange(msg.host_time_us * 1e-6, msg.mcu_time_us, received)
            elif isinstance(msg, ErrorReport):
                self.stats.error_reports += 1
                events.append(LinkEvent("error_report", f"firmware refused a frame: {msg}"))
        return measurements, events

    def _measurement(self, msg: Telemetry) -> Measurement:
        self.stats.telemetry += 1
        positions = channel_positions(self.servos, msg.angles_cdeg)
        pulses = {
            c.joint: msg.pulses_us[c.channel]
            for c in self.servos.channels
            if c.channel < len(msg.pulses_us)
        }
        m = Measurement(
            self.clock.to_host(msg.mcu_time_us),
            msg.mcu_time_us,
            positions,
            pulses,
            msg.flags,
            msg.limit_mask,
            msg.counters,
        )
        self.stats.last = m
        return m
