"""Seeded fault injectors between DriverLink and the emulated robot's socat bridge (tests only).

:class:`TcpFaultProxy` forwards one TCP connection and, while ``faults`` is set, flips one
bit of a forwarded chunk and inserts random garbage into one with the given probabilities,
in both directions. :class:`UdpLossProxy` forwards datagrams between any number of clients
and one upstream bridge, dropping each with a given probability; replies go to every client
(a hub, as a bridge an attacker on the network can also reach). Both record, per direction,
the stream as the sender sent it and where it was damaged, so a test can compute exactly
which frames a correct receiver must still accept (:func:`intact_frames`).

:class:`FakeDevice` is a TCP device that is not the robot at all (an echoing port, a silent
one, one speaking garbage, one that only answers PINGs).

Everything runs in one daemon thread per proxy, on 127.0.0.1 only, with every wait bounded
by ``lifetime_s`` (the device: until its ``with`` block ends); ``close`` stops it.
"""

from __future__ import annotations

import itertools
import random
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self

from snake_driver.protocol import (
    AUTH_LEN,
    CRC_LEN,
    HEADER_LEN,
    MAX_PAYLOAD,
    SYNC,
    TYPE_AUTH,
    Decoder,
    Direction,
    Encoder,
    Ping,
    Pong,
    crc16,
)

POLL_S = 0.02  # longest a proxy thread blocks before checking for stop [s]


@dataclass
class Flow:
    """One direction of a proxied stream.

    Attributes:
        clean: every byte the sender sent, in order, before any fault.
        damaged: [start, end) ranges of ``clean`` that did not reach the receiver intact
            (a flipped byte, a dropped datagram); an insertion before byte i is [i, i).
        chunks: reads (TCP) or datagrams (UDP) seen.
        flips: bits flipped.
        inserts: garbage insertions.
        garbage_bytes: bytes of garbage inserted.
        dropped: datagrams dropped.
    """

    clean: bytearray = field(default_factory=bytearray)
    damaged: list[tuple[int, int]] = field(default_factory=list)
    chunks: int = 0
    flips: int = 0
    inserts: int = 0
    garbage_bytes: int = 0
    dropped: int = 0

    @property
    def faults(self) -> int:
        """Flips, insertions and drops: each can cost the receiver at most the frames it hits."""
        return self.flips + self.inserts + self.dropped


@dataclass(frozen=True)
class FrameSpan:
    """A frame of a clean stream: bytes [start, end), its sequence number and type byte."""

    start: int
    end: int
    seq: int
    type: int


def frame_spans(stream: bytes) -> list[FrameSpan]:
    """The frames of a stream that no fault touched (PROTOCOL.md framing; CRC-checked).

    Bytes that do not start a CRC-valid frame are skipped one at a time, as the decoders do,
    so a stream that begins mid-frame is handled.
    """
    spans: list[FrameSpan] = []
    i = 0
    while i + 3 <= len(stream):
        if stream[i] != SYNC or stream[i + 1] > MAX_PAYLOAD:
            i += 1
            continue
        n = HEADER_LEN + stream[i + 1] + CRC_LEN + (AUTH_LEN if stream[i + 2] & TYPE_AUTH else 0)
        frame = stream[i : i + n]
        if len(frame) < n:
            break
        if crc16(frame[1:-CRC_LEN]) != int.from_bytes(frame[-CRC_LEN:], "little"):
            i += 1
            continue
        spans.append(FrameSpan(i, i + n, int.from_bytes(frame[3:5], "little"), frame[2]))
        i += n
    return spans


def hit(span: FrameSpan, damage: tuple[int, int]) -> bool:
    """True if a damaged range [a, b) changes the frame: a byte of it, or an insertion inside."""
    a, b = damage
    if a == b:  # insertion before byte a: harmless at the frame's start or end
        return span.start < a < span.end
    return a < span.end and span.start < b


def intact_frames(flow: Flow) -> tuple[list[FrameSpan], list[FrameSpan]]:
    """Split the sender's frames into (intact, damaged) by the faults recorded in ``flow``."""
    intact: list[FrameSpan] = []
    damaged: list[FrameSpan] = []
    for span in frame_spans(bytes(flow.clean)):
        (damaged if any(hit(span, d) for d in flow.damaged) else intact).append(span)
    return intact, damaged


def expected_seq_gaps(intact: list[FrameSpan]) -> int:
    """Sequence numbers a receiver of exactly the ``intact`` frames finds missing between
    consecutive ones (16-bit wrap included), as DecoderStats.seq_gaps counts them."""
    return sum(((b.seq - a.seq) & 0xFFFF) - 1 for a, b in itertools.pairwise(intact))


class _Proxy:
    """Thread plumbing shared by the proxies."""

    def __init__(self, lifetime_s: float) -> None:
        self.deadline = time.monotonic() + lifetime_s
        self.faults = threading.Event()  # inject faults while set
        self.paused = threading.Event()  # while set, the to-host direction is discarded unseen
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.error: BaseException | None = None

    def _alive(self) -> bool:
        return not self._stop.is_set() and time.monotonic() < self.deadline

    def _run(self) -> None:
        try:
            self._serve()
        except OSError as exc:  # reported to the test, never raised in the thread
            self.error = exc

    def _serve(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Stop the thread (bounded wait) and close the sockets."""
        self._stop.set()
        self._thread.join(timeout=2.0)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class TcpFaultProxy(_Proxy):
    """One TCP connection to ``127.0.0.1:upstream_port``, with bit flips and garbage.

    Args:
        upstream_port: the socat TCP bridge.
        seed: seeds the fault decisions (one generator per direction).
        p_flip: per-byte probability of a bit flip (a chunk of L bytes gets one with
            probability 1 - (1 - p_flip)^L, so the rate does not depend on how the stream is cut).
        p_garbage: per-byte probability of inserting 1..``max_garbage`` random bytes (likewise).
        max_garbage: longest insertion [bytes].
        lifetime_s: the thread ends after this long [s] whatever happens.
    """

    def __init__(
        self,
        upstream_port: int,
        seed: int,
        p_flip: float = 0.001,
        p_garbage: float = 0.001,
        max_garbage: int = 8,
        lifetime_s: float = 30.0,
    ) -> None:
        super().__init__(lifetime_s)
        self.upstream_port = upstream_port
        self.p_flip = p_flip
        self.p_garbage = p_garbage
        self.max_garbage = max_garbage
        self.to_mcu = Flow()
        self.to_host = Flow()
        self._rng = {"to_mcu": random.Random(seed), "to_host": random.Random(seed + 1)}
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(POLL_S)
        self.port = int(self._listener.getsockname()[1])

    def _mangle(self, data: bytes, flow: Flow, rng: random.Random) -> bytes:
        base = len(flow.clean)
        flow.clean += data
        flow.chunks += 1
        if not self.faults.is_set():
            return data
        out = bytearray(data)
        if rng.random() < 1.0 - (1.0 - self.p_flip) ** len(data):
            pos = rng.randrange(len(out))
            out[pos] ^= 1 << rng.randrange(8)
            flow.flips += 1
            flow.damaged.append((base + pos, base + pos + 1))
        if rng.random() < 1.0 - (1.0 - self.p_garbage) ** len(data):
            at = rng.randrange(len(data) + 1)
            garbage = rng.randbytes(rng.randint(1, self.max_garbage))
            out[at:at] = garbage
            flow.inserts += 1
            flow.garbage_bytes += len(garbage)
            flow.damaged.append((base + at, base + at))
        return bytes(out)

    def _serve(self) -> None:
        client: socket.socket | None = None
        while client is None and self._alive():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
        self._listener.close()
        if client is None:
            return
        upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=2.0)
        pairs = {
            client: (upstream, self.to_mcu, "to_mcu"),
            upstream: (client, self.to_host, "to_host"),
        }
        try:
            while self._alive():
                readable, _, _ = select.select(list(pairs), [], [], POLL_S)
                for sock in readable:
                    data = sock.recv(4096)
                    if not data:
                        return
                    peer, flow, name = pairs[sock]
                    if name == "to_host" and self.paused.is_set():
                        continue
                    peer.sendall(self._mangle(data, flow, self._rng[name]))
        finally:
            client.close()
            upstream.close()


class UdpLossProxy(_Proxy):
    """A UDP hub in front of ``127.0.0.1:upstream_port`` that drops datagrams at random.

    Every client's datagrams go upstream through one socket (the bridge answers only its
    first peer); every upstream datagram goes to all clients seen so far, dropped or not as
    one decision per datagram.

    Args:
        upstream_port: the socat UDP bridge.
        seed: seeds the drop decisions (one generator per direction).
        p_drop: probability of dropping a datagram, each direction.
        lifetime_s: the thread ends after this long [s] whatever happens.
    """

    def __init__(
        self, upstream_port: int, seed: int, p_drop: float = 0.1, lifetime_s: float = 30.0
    ) -> None:
        super().__init__(lifetime_s)
        self.p_drop = p_drop
        self.to_mcu = Flow()
        self.to_host = Flow()
        self.sent_to_mcu: list[bytes] = []  # datagrams forwarded upstream, for replay tests
        self._rng = {"to_mcu": random.Random(seed), "to_host": random.Random(seed + 1)}
        self._clients: list[tuple[str, int]] = []
        self._front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._front.bind(("127.0.0.1", 0))
        self.port = int(self._front.getsockname()[1])
        self._back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._back.connect(("127.0.0.1", upstream_port))

    def _keep(self, data: bytes, flow: Flow, rng: random.Random) -> bool:
        base = len(flow.clean)
        flow.clean += data
        flow.chunks += 1
        if self.faults.is_set() and rng.random() < self.p_drop:
            flow.dropped += 1
            flow.damaged.append((base, base + len(data)))
            return False
        return True

    def _serve(self) -> None:
        try:
            while self._alive():
                readable, _, _ = select.select([self._front, self._back], [], [], POLL_S)
                if self._front in readable:
                    data, address = self._front.recvfrom(65536)
                    if address not in self._clients:
                        self._clients.append(address)
                    if self._keep(data, self.to_mcu, self._rng["to_mcu"]):
                        try:
                            self._back.send(data)
                        except ConnectionRefusedError:  # the bridge is not listening (yet)
                            continue
                        self.sent_to_mcu.append(data)
                if self._back in readable:
                    try:
                        data = self._back.recv(65536)
                    except ConnectionRefusedError:  # nothing upstream (yet): ICMP port unreachable
                        continue
                    if self.paused.is_set():
                        continue
                    if self._keep(data, self.to_host, self._rng["to_host"]):
                        for address in self._clients:
                            self._front.sendto(data, address)
        finally:
            self._front.close()
            self._back.close()


class FakeDevice:
    """A TCP device that is not the robot's firmware: ``echo`` returns every byte (a loopback),
    ``silent`` reads and says nothing, ``garbage`` sends seeded random bytes (as a wrong baud
    rate does), ``pong`` answers PINGs (with ``boot_id``, which a test may change: as if the
    MCU restarted) and nothing else. ``received`` holds everything the host sent."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.boot_id = 7
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.server.getsockname()[1])
        self.received = bytearray()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> FakeDevice:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)
        self.server.close()

    def _run(self) -> None:
        rng = random.Random(11)
        decoder = Decoder(None, Direction.TO_MCU)
        encoder = Encoder(None, Direction.TO_HOST)
        client: socket.socket | None = None
        while not self._stop.is_set():
            watched = [self.server] + ([client] if client is not None else [])
            ready, _, _ = select.select(watched, [], [], 0.01)
            if self.server in ready:
                if client is not None:
                    client.close()
                client, _ = self.server.accept()
                continue
            if client is None:
                continue
            try:
                if client in ready:
                    data = client.recv(4096)
                    if not data:
                        client.close()
                        client = None
                        continue
                    self.received += data
                    if self.mode == "echo":
                        client.sendall(data)
                    for _, msg in decoder.feed_messages(data) if self.mode == "pong" else ():
                        if isinstance(msg, Ping):
                            mcu_us = int(time.monotonic() * 1e6) % 2**32
                            pong = Pong(msg.host_time_us, mcu_us, self.boot_id)
                            client.sendall(encoder.encode(pong))
                if self.mode == "garbage":
                    client.sendall(rng.randbytes(64))
            except OSError:
                client.close()
                client = None
        if client is not None:
            client.close()
