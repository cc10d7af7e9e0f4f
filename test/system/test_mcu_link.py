"""The driver's UDP link to the MCU's Wi-Fi bridge under a Wi-Fi-like impairment.

The real firmware in simavr behind the emulator's socat UDP bridge, tools/wifi_link.py's
:class:`Relay` between the bridge and the driver's link (:class:`DriverLink`, no ROS), with
the impairment of test_two_hosts.py: 5-30 ms, 2 % loss, 0.2 bursts/s of 100 ms, 1 %
reordered, seeded; then a 2 s outage, longer than the firmware's watchdog (500 ms) and the
driver's ``link_timeout`` (1 s): the session is lost, and the new one leaves the firmware
disarmed while targets flow again and the operator's heartbeat (the stop state false) is heard
again, until the operator re-arms it (``~/enable`` true); then a second 2 s outage with the
e-stop pressed during it: the robot does not move after the link returns, and the firmware
reports the e-stop within a stated bound of its first report after the outage.

What is modelled: a *transparent* serial-to-Wi-Fi bridge. socat sends each read of the pty
as one datagram, as an ESP8266/ESP32 bridge in transparent mode does without a packing
interval, so the MCU's frames cross in several datagrams (a few bytes each at 115200 baud)
and one datagram lost or reordered damages the frames it touches; the driver's frames cross
one a datagram (a lost one is a lost command, a reordered one arrives late but whole).

References: the relay's own view of the MCU's byte stream (every datagram the bridge sent,
before the impairment) says which frames the firmware sent; what each of the driver's
decoders was fed is recorded at its transport and scanned by ``fault_proxy.frame_spans``
(an independent scan for CRC-valid frames), which says exactly which frames a correct
decoder accepts and which sequence numbers it finds missing; the relay's counts say how
many of the driver's frames the firmware got, and its telemetry counters what it made of
them. No wall-clock bound is asserted: conditions are waited for, with generous deadlines.
"""

from __future__ import annotations

import itertools
import shutil
import time
from collections.abc import Callable
from typing import Any

import pytest
from support.fault_proxy import FrameSpan, frame_spans
from support.namespaces import wifi_link
from support.waits import wait_for

from snake_bringup.emulator import Emulator
from snake_driver.link import DriverLink, Measurement
from snake_driver.protocol import Decoder, Direction, Flag, Telemetry
from snake_driver.transport import UdpTransport
from system.test_faults import Driver, at, pose, servo_map

pytestmark = [
    pytest.mark.simavr,
    pytest.mark.skipif(
        not all(shutil.which(t) for t in ("avr-gcc", "socat")),
        reason="needs gcc-avr and socat (make test installs them)",
    ),
]

#: The link of test_two_hosts.py (docs/two-hosts.md), on the driver's UDP link to the MCU.
DELAY_MS, LOSS, BURST_RATE, BURST_MS, REORDER = (5.0, 30.0), 0.02, 0.2, 100.0, 0.01
#: Seeds a first loss burst 1.9 s (to the driver) and 2.1 s (to the MCU) after the first
#: datagram each way: inside the impaired phase, whatever the pace of the traffic.
SEED = 6
OUTAGE_S = 2.0  # > the firmware's watchdog_ms (500 ms) and the driver's link_timeout (1 s)
PRESS_AT_S = 0.5  # the e-stop's press into the second outage [s]
HELD_REPORTS = 50  # reports after an outage that must show the robot held (1 s at 50 Hz)
EMULATOR_S = 90  # bound on the emulator's life [emulated s]
WAIT_S = 20.0  # generous deadline of every condition waited for [s]
IMPAIRED_S = 4.0  # commands and telemetry under the impairment before the outage [s]
#: Share of the MCU's reports the driver must still get: each is 8-10 datagrams, so 0.98^10,
#: less bursts and reordering, about 70 % arrive whole (60-73 % measured); under load socat
#: reads more at once (fewer, longer datagrams) and more arrive.
MIN_DELIVERED = 0.5
#: Share of the driver's frames the firmware may count damaged (its pty under load).
MAX_MCU_DAMAGED = 0.01


class TappedUdp(UdpTransport):
    """The driver's UDP transport, keeping what each read returned, stream by stream: a
    stream is what one of the link's decoders was fed (a new one each handshake).

    Attributes:
        link: the link that reads (set once it exists).
        streams: each decoder of the link, with the bytes it was fed.
    """

    def __init__(self, port: int) -> None:
        super().__init__("127.0.0.1", port)
        self.link: DriverLink | None = None
        self.streams: list[tuple[Decoder, bytearray]] = []

    def read(self, timeout: float) -> bytes:
        data = super().read(timeout)
        assert self.link is not None
        if not self.streams or self.streams[-1][0] is not self.link.decoder:
            self.streams.append((self.link.decoder, bytearray()))
        self.streams[-1][1].extend(data)
        return data


def tap_bridge(relay: Any) -> bytearray:
    """Everything the bridge sends the relay (the MCU's stream before the impairment),
    collected as the relay's thread receives it."""
    route = relay.pump.routes["to_client"]
    clean = bytearray()
    receive: Callable[[], bytes] = route.recv

    def recv() -> bytes:
        data = receive()
        clean.extend(data)
        return data

    route.recv = recv
    return clean


def forward_gaps(spans: list[FrameSpan]) -> int:
    """Sequence numbers found missing between frames received in this order, counted only
    where a number moves ahead (a late frame fills no gap), as DecoderStats.seq_gaps does."""
    gaps, last = 0, None
    for span in spans:
        ahead = 1 if last is None else (span.seq - last) & 0xFFFF
        if 0 < ahead < 0x8000:
            gaps += ahead - 1
            last = span.seq
    return gaps


def first_report_after_silence(driver: Driver, since: int, silence_us: int) -> Measurement | None:
    """The first report from index ``since`` on that the MCU made more than ``silence_us``
    [us] of its own time after the report before it, or None."""
    pairs = itertools.pairwise(driver.measurements[since - 1 :])
    return next((m for p, m in pairs if m.mcu_time_us - p.mcu_time_us > silence_us), None)


def armed(m: Measurement) -> bool:
    """The report shows the firmware following targets: enabled, no trip, no e-stop."""
    return bool(m.flags & Flag.ENABLED) and not m.flags & (Flag.WATCHDOG_TRIPPED | Flag.ESTOP)


def held_since(driver: Driver, first: int) -> int:
    """Reports from index ``first`` on."""
    return len(driver.measurements) - first


def reports(stream: bytes) -> dict[int, Telemetry]:
    """The telemetry reports of an undamaged stream, by MCU time [us]."""
    decoded = Decoder(None, Direction.TO_HOST).feed_messages(stream)
    return {m.mcu_time_us: m for _, m in decoded if isinstance(m, Telemetry)}


def test_the_driver_s_udp_link_to_the_mcu_under_a_wifi_like_impairment() -> None:
    wl = wifi_link()
    impairment = wl.Impairment(
        delay_ms=DELAY_MS,
        loss=LOSS,
        burst_rate=BURST_RATE,
        burst_ms=BURST_MS,
        reorder=REORDER,
        seed=SEED,
    )
    servos = servo_map()
    a, b = pose(servos, 1.0), pose(servos, -1.0)
    with Emulator(bridge="udp", seconds=EMULATOR_S) as emulator:
        bridge = ("127.0.0.1", int(emulator.endpoint.port))
        relay = wl.Relay(("127.0.0.1", 0), bridge, impairment)
        clean = tap_bridge(relay)
        with relay:
            transport = TappedUdp(relay.port)
            link = DriverLink(transport, servos, time.monotonic)
            transport.link = link
            driver = Driver(link)

            # commands reach the MCU and telemetry flows, from the handshake on, impaired
            assert driver.reach(a, WAIT_S), "target a not reached through the impaired link"
            phase = len(driver.measurements), len(reports(bytes(clean)))
            assert driver.reach(b, WAIT_S), "target b not reached through the impaired link"
            driver.run(b, IMPAIRED_S)
            got = len(driver.measurements) - phase[0]
            sent = len(reports(bytes(clean))) - phase[1]
            before = driver.last
            assert before is not None and at(before, b)
            assert before.flags & Flag.ENABLED and not before.flags & Flag.WATCHDOG_TRIPPED

            # an outage longer than the watchdog and the link timeout, commands still coming
            outage_at = len(driver.measurements)
            relay.outage(OUTAGE_S)
            watchdog_us = servos.system.watchdog_ms * 1000

            def after_outage(d: Driver) -> Measurement | None:
                return first_report_after_silence(d, outage_at, watchdog_us)

            reported = driver.run(a, OUTAGE_S + WAIT_S, lambda d: after_outage(d) is not None)
            assert reported, "no report after the outage"
            after = after_outage(driver)
            # the first report after more than the watchdog's time without commands (the
            # MCU's time): the firmware held and reported its watchdog tripped
            assert after is not None and after.flags & Flag.WATCHDOG_TRIPPED, after
            # targets flow again (a), the session is made again: the robot stays at b,
            # disarmed (the old link armed every new session)
            first = driver.measurements.index(after)
            assert driver.run(a, WAIT_S, lambda d: held_since(d, first) >= HELD_REPORTS)
            held = driver.measurements[first:]
            assert not any(armed(m) for m in held), "armed after the outage, with no operator"
            assert all(at(m, b) for m in held) and link.tripped
            # the operator's heartbeat, the stop state false, heard again: no act, no re-arm;
            # ~/enable true is one: the next targets arm it
            driver.events += link.operator_stop(False)
            assert link.tripped, "the heartbeat re-armed"
            driver.events += link.enable(True)
            assert driver.reach(a, WAIT_S), "target a not reached after ~/enable true"
            resumed = driver.last
            assert resumed is not None and armed(resumed)

            # the e-stop pressed during an outage (the driver hears the operator's stop state
            # at once: the station is on its side of this link): after the link returns the
            # robot does not move, and the new session's first frames carry the ESTOP
            outage_at = len(driver.measurements)
            pressed_at = time.monotonic() + PRESS_AT_S
            relay.outage(OUTAGE_S)
            driver.run(b, WAIT_S, lambda d: time.monotonic() > pressed_at)
            driver.events += link.operator_stop(True)
            driver.run(b, OUTAGE_S + WAIT_S, lambda d: after_outage(d) is not None)
            stopped = after_outage(driver)
            assert stopped is not None and not armed(stopped)
            first = driver.measurements.index(stopped)
            assert driver.run(b, WAIT_S, lambda d: link.estop_confirmed)
            assert driver.run(b, WAIT_S, lambda d: held_since(d, first) >= HELD_REPORTS)
            since = driver.measurements[first:]
            confirmed = next(m for m in since if m.flags & Flag.ESTOP)
            # the bound: the link tries again at most every max_backoff, a handshake takes at
            # most link_timeout, and the ESTOP goes with the session's configuration
            bound_s = link.max_backoff + link.link_timeout + 1.0
            estop_s = (confirmed.mcu_time_us - stopped.mcu_time_us) * 1e-6
            print(
                f"e-stop in the outage: the firmware reported it {estop_s:.3f} s (MCU time) "
                f"after its first report after the outage (bound {bound_s:g} s)"
            )
            assert estop_s <= bound_s
            assert not any(armed(m) for m in since), "armed after the outage under an e-stop"
            assert all(at(m, a) for m in since), "the robot moved toward b"

            # quiet: the firmware's counters come to account for every frame it was sent
            def counted() -> bool:
                driver.run(None, 0.1)
                last = driver.last
                assert last is not None
                c = last.counters
                done = c.frames_ok + c.bad_crc + c.bad_length + c.bad_payload + c.rx_timeouts
                forwarded: int = relay.stats()["to_target"].forwarded
                return done >= forwarded

            wait_for(counted, WAIT_S, "the firmware to count every frame the relay delivered")
            stats = relay.stats()
            # the bridge came through the impaired link (checked while the relay is up: once
            # it closes, the bridge's next report meets a closed port and socat exits on it)
            assert emulator.running() and emulator.socat is not None
            assert emulator.socat.poll() is None
        assert relay.error is None
    dec, link_stats = link.decoder.stats, link.stats
    to_host, to_mcu = stats["to_client"], stats["to_target"]
    firmware = driver.measurements[-1].counters
    print(
        f"MCU -> driver: {to_host.offered} datagrams for {len(frame_spans(bytes(clean)))} "
        f"frames, {to_host.dropped} dropped ({to_host.dropped_loss} loss, "
        f"{to_host.dropped_burst} burst, {to_host.dropped_outage} outage), "
        f"{to_host.reordered} reordered; driver: {dec.frames_ok} frames ok, {dec.seq_gaps} "
        f"missing, {dec.bad_crc} bad CRC, {dec.bad_length} bad length, {dec.discarded_bytes} "
        f"bytes discarded; reports {got} of {sent} ({got / sent:.0%}) before the outage\n"
        f"driver -> MCU: {to_mcu.offered} frames, {to_mcu.dropped} dropped ({to_mcu.dropped_loss} "
        f"loss, {to_mcu.dropped_burst} burst, {to_mcu.dropped_outage} outage), "
        f"{to_mcu.reordered} reordered; firmware: {firmware}\n"
        f"link: {link_stats}\nevents: {[e.kind for e in driver.events]}"
    )
    # the impairment did its work both ways, bursts included
    for direction in (to_host, to_mcu):
        assert min(direction.dropped_loss, direction.dropped_burst, direction.dropped_outage) > 0
    assert to_host.reordered > 0

    # telemetry kept arriving: most of it, never more than was sent
    assert MIN_DELIVERED * sent <= got <= sent

    # the driver's decoders accepted exactly the CRC-valid frames of what they were fed, each
    # a frame the firmware sent, none twice; every number missing counted as a sequence gap
    sent_frames = {bytes(clean[s.start : s.end]) for s in frame_spans(bytes(clean))}
    accepted: list[bytes] = []
    gaps = 0
    for _, stream in transport.streams:
        spans = frame_spans(bytes(stream))
        accepted += [bytes(stream[s.start : s.end]) for s in spans]
        gaps += forward_gaps(spans)
    assert dec.frames_ok == len(accepted) > 0
    assert set(accepted) <= sent_frames, "a frame the firmware never sent was accepted"
    assert len(set(accepted)) == len(accepted), "a frame was accepted twice"
    assert dec.seq_gaps == gaps > 0
    assert dec.bad_crc + dec.bad_length > 0 and dec.bad_payload == dec.echoed == 0
    assert sum(map(len, (s for _, s in transport.streams))) == link_stats.bytes_received

    # the link delivered each report once, as the firmware sent it
    mcu_times = [m.mcu_time_us for m in driver.measurements]
    assert len(set(mcu_times)) == len(mcu_times), "a report was delivered twice"
    originals = reports(bytes(clean))
    for m in driver.measurements:
        original = originals[m.mcu_time_us]
        assert (m.counters, m.flags, m.limit_mask) == (
            original.counters,
            original.flags,
            original.limit_mask,
        )
    # out of order only as the relay reordered datagrams: a late report is never re-stamped
    late = sum(y < x for x, y in itertools.pairwise(mcu_times))
    assert late <= to_host.reordered

    # the firmware got the driver's frames, each once: none replayed or duplicated
    assert firmware.frames_ok <= to_mcu.forwarded
    assert to_mcu.forwarded - firmware.frames_ok <= MAX_MCU_DAMAGED * to_mcu.forwarded
    assert firmware.bad_auth == firmware.replayed == firmware.bad_payload == 0

    # the outages: the session lost twice and made again, the same MCU (no restart anywhere);
    # one trip (the second outage came under the e-stop), ~/enable true its only way out
    kinds = {e.kind for e in driver.events}
    assert kinds <= {"connected", "lost", "no_answer", "rearmed", "tripped", "stop_state"}
    assert link_stats.connects == 3 and link_stats.disconnects == link_stats.timeouts == 2
    assert link_stats.mcu_resets == 0 and link_stats.trips == 1
