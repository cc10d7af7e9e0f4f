"""The Wi-Fi-like link's model and the loop that applies it (tools/wifi_link.py uses both).

:class:`Impairment` says what the link does (delay, loss, bursts, reordering); a
:class:`Channel` applies it to one direction, frame by frame, from the frames' arrival times;
a :class:`Pump` moves frames between sockets along :class:`Route`s, holding each until its
channel lets it go. The layer-2 forwarder of tools/wifi_link.py and :class:`Relay`, the
impairing UDP relay, are both a Pump: one implementation of the impairment. Standard library
only; see docs/two-hosts.md.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import math
import random
import selectors
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import IO, Self

HISTOGRAM_BIN_MS = 5.0  # width of a delay histogram bin [ms]
HISTOGRAM_BINS = 20  # bins; the last also counts every longer delay
POLL_S = 0.05  # longest the forwarder blocks before looking at its stop flag [s]
DRAIN_MAX = 256  # frames read from one socket per wake-up, so no port starves the others


class LinkError(Exception):
    """A link that cannot be set up or used; the message says what to change."""


# --------------------------------------------------------------------------- the model
@dataclass(frozen=True)
class Impairment:
    """What the link does to each frame (or datagram), per direction.

    Attributes:
        delay_ms: (min, max) one-way delay [ms], uniform in between. Frames keep their
            order (a frame never leaves before the one ahead of it, as in a radio's queue)
            unless ``reorder`` picks them.
        loss: probability that a frame is dropped, independently of the others.
        burst_rate: mean rate of loss bursts [1/s] (a Poisson process); 0 for none.
        burst_ms: length of a loss burst [ms]: every frame arriving during one is dropped.
        reorder: probability that a frame is held back ``reorder_ms`` more, out of the
            queue's order, so frames behind it overtake it.
        reorder_ms: the extra hold of a reordered frame [ms].
        seed: seeds every random choice; a direction's choices depend only on the seed and
            the arrival times of its frames.
    """

    delay_ms: tuple[float, float] = (0.0, 0.0)
    loss: float = 0.0
    burst_rate: float = 0.0
    burst_ms: float = 100.0
    reorder: float = 0.0
    reorder_ms: float = 20.0
    seed: int = 0

    def __post_init__(self) -> None:
        lo, hi = self.delay_ms
        if not 0.0 <= lo <= hi:
            raise LinkError(f"delay_ms must be 0 <= min <= max [ms], got {self.delay_ms!r}")
        for name in ("loss", "reorder"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                value = getattr(self, name)
                raise LinkError(f"{name} must be a probability in [0, 1], got {value!r}")
        if not self.burst_rate >= 0.0:
            raise LinkError(f"burst_rate must be >= 0 bursts/s, got {self.burst_rate!r}")
        if not (self.burst_ms > 0.0 and self.reorder_ms >= 0.0):
            raise LinkError(
                f"burst_ms must be > 0 and reorder_ms >= 0 [ms], got {self.burst_ms!r}, "
                f"{self.reorder_ms!r}"
            )

    def to_json(self) -> str:
        """This impairment as JSON (for the forwarder's command line)."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Impairment:
        """The impairment :meth:`to_json` wrote."""
        data = json.loads(text)
        data["delay_ms"] = tuple(data["delay_ms"])
        return cls(**data)


@dataclass
class ChannelStats:
    """What one direction did with its frames.

    Attributes:
        offered: frames that reached the link.
        forwarded: frames delivered.
        dropped_loss: dropped by the independent loss.
        dropped_burst: dropped in a loss burst.
        dropped_outage: dropped because the link was down (on arrival or when due to leave).
        reordered: delivered frames that left after a frame that arrived later than them.
        delay_sum_ms: sum of the delivered frames' delays through the link [ms].
        delay_min_ms: shortest delay [ms] (inf before any).
        delay_max_ms: longest delay [ms].
        histogram: delivered frames per HISTOGRAM_BIN_MS bin of delay; the last bin holds
            every longer delay too.
    """

    offered: int = 0
    forwarded: int = 0
    dropped_loss: int = 0
    dropped_burst: int = 0
    dropped_outage: int = 0
    reordered: int = 0
    delay_sum_ms: float = 0.0
    delay_min_ms: float = math.inf
    delay_max_ms: float = 0.0
    histogram: list[int] = field(default_factory=lambda: [0] * HISTOGRAM_BINS)

    @property
    def dropped(self) -> int:
        """Frames dropped for any reason."""
        return self.dropped_loss + self.dropped_burst + self.dropped_outage

    @property
    def delay_mean_ms(self) -> float:
        """Mean delay of the delivered frames [ms] (nan before any)."""
        return self.delay_sum_ms / self.forwarded if self.forwarded else math.nan


class Channel:
    """One direction of an impaired link: decides each frame's fate from its arrival time.

    Args:
        impairment: the model.
        stream: names the direction; it and ``impairment.seed`` seed the choices.
    """

    def __init__(self, impairment: Impairment, stream: str) -> None:
        self.impairment = impairment
        self.stats = ChannelStats()
        self.down_until = -math.inf  # the link is down before this time [s, monotonic]
        self._rng = random.Random(f"{impairment.seed}:{stream}:frames")
        self._burst_rng = random.Random(f"{impairment.seed}:{stream}:bursts")
        self._burst: tuple[float, float] | None = None  # [start, end) of the current/next [s]
        self._fifo_until = -math.inf  # when the last in-order frame leaves [s]
        self._arrivals = 0
        self._latest_sent = -1  # arrival index of the latest-arriving frame sent so far

    def in_burst(self, t: float) -> bool:
        """Whether time ``t`` [s] falls in a loss burst (times must not decrease)."""
        rate, length = self.impairment.burst_rate, self.impairment.burst_ms / 1000.0
        if rate <= 0.0:
            return False
        if self._burst is None:
            start = t + self._burst_rng.expovariate(rate)
            self._burst = (start, start + length)
        while t >= self._burst[1]:
            start = self._burst[1] + self._burst_rng.expovariate(rate)
            self._burst = (start, start + length)
        return t >= self._burst[0]

    def admit(self, t: float) -> tuple[float, int] | None:
        """A frame arrives at time ``t`` [s]: when it leaves [s] and its arrival index, or
        None if it is dropped."""
        imp, stats = self.impairment, self.stats
        stats.offered += 1
        index = self._arrivals
        self._arrivals += 1
        if t < self.down_until:
            stats.dropped_outage += 1
            return None
        if self.in_burst(t):
            stats.dropped_burst += 1
            return None
        if imp.loss and self._rng.random() < imp.loss:
            stats.dropped_loss += 1
            return None
        leave = t + self._rng.uniform(*imp.delay_ms) / 1000.0
        if imp.reorder and self._rng.random() < imp.reorder:
            return leave + imp.reorder_ms / 1000.0, index
        self._fifo_until = max(leave, self._fifo_until)
        return self._fifo_until, index

    def release(self, arrived: float, index: int, now: float) -> bool:
        """A frame that arrived at ``arrived`` [s] is due at ``now`` [s]: True if it goes
        out (the link is up), counted in the statistics."""
        stats = self.stats
        if now < self.down_until:
            stats.dropped_outage += 1
            return False
        stats.forwarded += 1
        if index < self._latest_sent:
            stats.reordered += 1
        self._latest_sent = max(self._latest_sent, index)
        delay = (now - arrived) * 1000.0
        stats.delay_sum_ms += delay
        stats.delay_min_ms = min(stats.delay_min_ms, delay)
        stats.delay_max_ms = max(stats.delay_max_ms, delay)
        stats.histogram[min(int(delay // HISTOGRAM_BIN_MS), HISTOGRAM_BINS - 1)] += 1
        return True


# --------------------------------------------------------------------------- the forwarder
@dataclass
class Route:
    """Frames read from ``source`` go, through ``channel``, to ``send``.

    Attributes:
        source: a non-blocking socket.
        recv: reads one frame from ``source``: its bytes, or None to ignore what was read.
        send: sends one frame on.
        channel: the impairment of this direction.
    """

    source: socket.socket
    recv: Callable[[], bytes | None]
    send: Callable[[bytes], object]
    channel: Channel


class Pump:
    """Moves frames along routes, each held until its channel lets it go (a heap of due
    times). One implementation for the layer-2 forwarder and the UDP relay.

    Args:
        routes: the directions, by name.
    """

    def __init__(self, routes: dict[str, Route]) -> None:
        self.routes = routes
        self.lock = threading.Lock()  # held while frames are moved; the control takes it too
        self._heap: list[tuple[float, int, float, int, str, bytes]] = []
        self._order = 0

    def outage(self, seconds: float) -> tuple[float, float]:
        """Drop everything, both ways, from now for ``seconds`` [s]: the window [start, end)
        on the monotonic clock [s]."""
        with self.lock:
            start = time.monotonic()
            for route in self.routes.values():
                route.channel.down_until = start + seconds
        return start, start + seconds

    def set_down(self, down: bool) -> float:
        """Take the link down (until set up again) or up; the monotonic time it did [s]."""
        with self.lock:
            now = time.monotonic()
            for route in self.routes.values():
                route.channel.down_until = math.inf if down else now
        return now

    def stats(self) -> dict[str, ChannelStats]:
        """A copy of each direction's statistics."""
        with self.lock:
            return {
                name: ChannelStats(**asdict(route.channel.stats))
                for name, route in self.routes.items()
            }

    def serve(
        self, stop: Callable[[], bool], extra: dict[IO[bytes] | socket.socket, Callable[[], None]]
    ) -> None:
        """Forward until ``stop()``; ``extra`` maps more readable objects to their handlers."""
        selector = selectors.DefaultSelector()
        for name, route in self.routes.items():
            route.source.setblocking(False)
            selector.register(route.source, selectors.EVENT_READ, name)
        for obj, handler in extra.items():
            selector.register(obj, selectors.EVENT_READ, handler)
        try:
            while not stop():
                due = self._heap[0][0] - time.monotonic() if self._heap else POLL_S
                for key, _ in selector.select(min(max(due, 0.0), POLL_S)):
                    if callable(key.data):
                        key.data()
                    else:
                        self._take(key.data)
                self._send_due()
        finally:
            selector.close()

    def _take(self, name: str) -> None:
        route = self.routes[name]
        with self.lock:
            for _ in range(DRAIN_MAX):
                try:
                    frame = route.recv()
                except (BlockingIOError, InterruptedError):
                    return
                except ConnectionRefusedError:  # UDP: nothing listens at the target (yet)
                    continue
                if frame is None:
                    continue
                now = time.monotonic()
                fate = route.channel.admit(now)
                if fate is not None:
                    self._order += 1
                    heapq.heappush(self._heap, (fate[0], self._order, now, fate[1], name, frame))

    def _send_due(self) -> None:
        with self.lock:
            while self._heap and self._heap[0][0] <= time.monotonic():
                _, _, arrived, index, name, frame = heapq.heappop(self._heap)
                route = self.routes[name]
                if route.channel.release(arrived, index, time.monotonic()):
                    with contextlib.suppress(OSError):  # a full queue or a gone peer: lost
                        route.send(frame)


# --------------------------------------------------------------------------- the UDP relay
def parse_endpoint(text: str) -> tuple[str, int]:
    """``HOST:PORT`` as (host, port).

    Raises:
        LinkError: not HOST:PORT with a port in 0..65535.
    """
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise LinkError(f"expected HOST:PORT (e.g. 127.0.0.1:9000), got {text!r}")
    return host, int(port)


class Running:
    """Started on entering a ``with`` block, closed on leaving it, whatever happened there."""

    def start(self) -> Self:
        """Start; returns self."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop and release everything (idempotent)."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


class Relay(Running):
    """A UDP relay with the link's impairment: datagrams to ``listen`` go to ``target``;
    the target's answers go to the latest client. Runs in a daemon thread.

    Args:
        listen: (host, port) to listen on; port 0 picks one (see :attr:`port`).
        target: (host, port) to relay to.
        impairment: the model, both directions (named ``to_target`` and ``to_client``).
    """

    def __init__(
        self, listen: tuple[str, int], target: tuple[str, int], impairment: Impairment
    ) -> None:
        self._front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._front.bind(listen)
        self.port = int(self._front.getsockname()[1])
        self._back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._back.connect(target)
        self._client: tuple[str, int] | None = None
        self.pump = Pump(
            {
                "to_target": Route(
                    self._front, self._recv_front, self._back.send, Channel(impairment, "to_target")
                ),
                "to_client": Route(
                    self._back,
                    lambda: self._back.recv(65536),
                    self._send_front,
                    Channel(impairment, "to_client"),
                ),
            }
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="wifi_link-relay")
        self.error: BaseException | None = None

    def _recv_front(self) -> bytes:
        data, self._client = self._front.recvfrom(65536)
        return data

    def _send_front(self, data: bytes) -> None:
        if self._client is not None:
            self._front.sendto(data, self._client)

    def _run(self) -> None:
        try:
            self.pump.serve(self._stop.is_set, {})
        except OSError as exc:  # kept for the caller, never raised in the thread
            self.error = exc

    def outage(self, seconds: float) -> tuple[float, float]:
        """Drop everything both ways for ``seconds`` [s]; the window on the monotonic clock."""
        return self.pump.outage(seconds)

    def stats(self) -> dict[str, ChannelStats]:
        """Per-direction statistics (``to_target``, ``to_client``)."""
        return self.pump.stats()

    def close(self) -> None:
        """Stop the thread (bounded wait) and close the sockets."""
        self._stop.set()
        self._thread.join(timeout=2.0)
        self._front.close()
        self._back.close()

    def start(self) -> Self:
        """Start relaying (in a daemon thread)."""
        self._thread.start()
        return self
