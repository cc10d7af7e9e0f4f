#!/usr/bin/env python3
"""Two hosts joined by a Wi-Fi-like link: Linux network namespaces and a user-space forwarder.

The robot and the workstation ("station") are two network namespaces, each with one veth on
one subnet (10.77.0.1/24 and 10.77.0.2/24 by default). Their veths' peers sit in a third
namespace ("link"), where a forwarder bridges them at layer 2 with AF_PACKET sockets, so the
two hosts share a subnet and multicast (DDS discovery) crosses. The forwarder delays, drops
(independently and in bursts), reorders and, on demand, cuts every frame as :class:`Impairment`
says, in user space: these kernels have no netem. The same :class:`Impairment` drives
:class:`Relay`, a UDP relay for the driver's link to the MCU's Wi-Fi bridge (no root needed).
See docs/two-hosts.md.

Library::

    with WifiLink("lab", Impairment(delay_ms=(5, 30), loss=0.03, burst_rate=0.2)) as link:
        node = link.popen("robot", ["snake", "drive"], env=env)
        link.outage(1.0)
        print(link.stats()["robot_to_station"].forwarded)

Command line (root for ``up``, ``run`` and ``down``)::

    sudo python3 tools/wifi_link.py up --prefix lab --delay 5:30 --loss 0.03 --burst-rate 0.2
    sudo python3 tools/wifi_link.py run --prefix lab robot -- python3 -m http.server
    sudo python3 tools/wifi_link.py down --prefix lab
    python3 tools/wifi_link.py relay --listen 127.0.0.1:9000 --to 192.168.4.1:4210 --loss 0.05
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import heapq
import ipaddress
import json
import math
import os
import random
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from types import TracebackType
from typing import IO, Any, Self

HOSTS = ("robot", "station")
#: Directions of a link, named by (from, to); the relay's "up" is client to target.
DIRECTIONS = ("robot_to_station", "station_to_robot")
RELAY_DIRECTIONS = ("to_target", "to_client")
HISTOGRAM_BIN_MS = 5.0  # width of a delay histogram bin [ms]
HISTOGRAM_BINS = 20  # bins; the last also counts every longer delay
POLL_S = 0.05  # longest the forwarder blocks before looking at its stop flag [s]
COMMAND_TIMEOUT_S = 10.0  # longest one `ip` command may take [s]
DRAIN_MAX = 256  # frames read from one socket per wake-up, so no port starves the others
SOL_PACKET = 263  # <linux/socket.h>
PACKET_VNET_HDR = 15  # <linux/if_packet.h>: frames carry a virtio_net_hdr (GSO, checksum)
VNET_HDR_LEN = 10  # sizeof(struct virtio_net_hdr) before each frame [bytes]
BROADCAST = b"\xff" * 6
ETH_P_ALL = 0x0003
PREFIX_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.]{0,23}")


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


def packet_socket(interface: str) -> socket.socket:
    """A raw layer-2 socket on ``interface`` whose frames carry a virtio_net_hdr, so that
    GSO super-frames and frames with their checksum left to offload cross intact."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.bind((interface, ETH_P_ALL))
    return sock


def layer2_routes(
    impairment: Impairment, robot_if: str, station_if: str, multicast: bool = True
) -> dict[str, Route]:
    """The two directions between two interfaces of this namespace; without ``multicast``
    every multicast frame is discarded (broadcast, which ARP needs, still crosses), as an
    access point that filters multicast does."""
    socks = {"robot": packet_socket(robot_if), "station": packet_socket(station_if)}

    def reader(sock: socket.socket) -> Callable[[], bytes | None]:
        def recv() -> bytes | None:
            frame, address = sock.recvfrom(1 << 17)
            if address[2] == socket.PACKET_OUTGOING:
                return None
            dst = frame[VNET_HDR_LEN : VNET_HDR_LEN + 6]
            if not multicast and dst[:1] and dst[0] & 1 and dst != BROADCAST:
                return None
            return frame

        return recv

    return {
        f"{a}_to_{b}": Route(socks[a], reader(socks[a]), socks[b].send, Channel(impairment, a))
        for a, b in (HOSTS, HOSTS[::-1])
    }


def forward(robot_if: str, station_if: str, impairment: Impairment, multicast: bool) -> int:
    """The forwarder process (in the link namespace): bridge two interfaces, obey JSON-line
    commands on stdin (``outage``, ``down``, ``up``, ``stats``), answer on stdout, end at EOF."""
    pump = Pump(layer2_routes(impairment, robot_if, station_if, multicast))
    stdin, stdout = sys.stdin.buffer, sys.stdout
    done = False

    def command() -> None:
        nonlocal done
        line = stdin.readline()
        if not line:
            done = True
            return
        request = json.loads(line)
        op = request.get("op")
        if op == "outage":
            start, end = pump.outage(request["seconds"])
            reply: dict[str, Any] = {"start": start, "end": end}
        elif op in ("down", "up"):
            reply = {"at": pump.set_down(op == "down")}
        elif op == "stats":
            reply = {name: asdict(s) for name, s in pump.stats().items()}
        else:
            reply = {"error": f"unknown op {op!r}"}
        stdout.write(json.dumps(reply) + "\n")
        stdout.flush()

    stdout.write(json.dumps({"ready": True}) + "\n")
    stdout.flush()
    pump.serve(lambda: done, {stdin: command})
    return 0


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


class Relay:
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


# --------------------------------------------------------------------------- the namespaces
def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``ip ARGS`` (bounded by COMMAND_TIMEOUT_S).

    Raises:
        LinkError: it failed (with check), naming the command and its message.
    """
    try:
        done = subprocess.run(
            ["ip", *args], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as exc:
        raise LinkError(f"`ip {' '.join(args)}` took over {COMMAND_TIMEOUT_S} s") from exc
    if check and done.returncode != 0:
        message = done.stderr.strip().replace("\n", "; ")
        raise LinkError(f"`ip {' '.join(args)}` failed: {message}")
    return done


def require_netns() -> None:
    """Check that this process can make network namespaces.

    Raises:
        LinkError: not root, or no `ip` command (iproute2).
    """
    if shutil.which("ip") is None:
        raise LinkError("the `ip` command (iproute2) is not on PATH: apt-get install iproute2")
    if os.geteuid() != 0:
        raise LinkError("network namespaces need root: run with sudo")


def namespaces(prefix: str) -> dict[str, str]:
    """The names of a link's namespaces: robot, link, station."""
    return {role: f"{prefix}-{role}" for role in ("robot", "link", "station")}


def existing_namespaces() -> list[str]:
    """The namespaces `ip netns list` shows."""
    return [line.split()[0] for line in ip("netns", "list").stdout.splitlines() if line.strip()]


def teardown(prefix: str) -> list[str]:
    """Kill every process in a link's namespaces and delete them; the names deleted."""
    gone = []
    present = set(existing_namespaces())
    for name in namespaces(prefix).values():
        if name not in present:
            continue
        for sig in (signal.SIGTERM, signal.SIGKILL):
            pids = [int(p) for p in ip("netns", "pids", name, check=False).stdout.split()]
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + 1.0
            while pids and time.monotonic() < deadline:
                pids = [p for p in pids if _alive(p)]
                time.sleep(0.02)
            if not pids:
                break
        ip("netns", "del", name, check=False)
        gone.append(name)
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie of ours counts as gone
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    return True


class WifiLink:
    """Robot and station namespaces joined through a link namespace whose forwarder
    impairs the traffic. Set up on ``with`` (or :meth:`start`), torn down on exit, at
    interpreter exit, or by :meth:`close`, whatever happened in between.

    Args:
        prefix: namespaces are PREFIX-robot, PREFIX-link, PREFIX-station; None makes a
            unique one (so parallel processes never collide).
        impairment: what the link does to each frame.
        subnet: the hosts' subnet; the robot takes its first address, the station its
            second.
        static_arp: give each host a permanent neighbour entry for the other, so a lost
            ARP exchange does not stall the first datagrams for a second.
        multicast: let multicast frames cross; False filters them out, as many access
            points do (then DDS needs ROS_STATIC_PEERS).
    """

    def __init__(
        self,
        prefix: str | None = None,
        impairment: Impairment | None = None,
        subnet: str = "10.77.0.0/24",
        static_arp: bool = True,
        multicast: bool = True,
    ) -> None:
        self.prefix = prefix or f"wl{os.getpid()}x{random.randrange(16**4):04x}"
        if not PREFIX_RE.fullmatch(self.prefix):
            raise LinkError(f"prefix must be 1-24 letters, digits, '_' or '.', got {self.prefix!r}")
        self.impairment = impairment or Impairment()
        try:
            net = ipaddress.ip_network(subnet)
        except ValueError as exc:
            raise LinkError(f"subnet must be like 10.77.0.0/24, got {subnet!r}") from exc
        if net.version != 4 or net.num_addresses < 4:
            raise LinkError(f"subnet must be IPv4 with room for two hosts, got {subnet!r}")
        hosts = net.hosts()
        self.addresses = {"robot": str(next(hosts)), "station": str(next(hosts))}
        self.prefixlen = net.prefixlen
        self.static_arp = static_arp
        self.multicast = multicast
        self.namespaces = namespaces(self.prefix)
        self._forwarder: subprocess.Popen[str] | None = None
        self._children: list[subprocess.Popen[Any]] = []
        self._control = threading.Lock()
        self._up = False

    # ---------------------------------------------------------------- set-up and tear-down
    def start(self) -> Self:
        """Make the namespaces, veths and addresses and start the forwarder.

        Raises:
            LinkError: not root, no `ip`, a namespace of this prefix exists, or a step failed
                (what was made is removed again).
        """
        require_netns()
        taken = set(self.namespaces.values()) & set(existing_namespaces())
        if taken:
            raise LinkError(
                f"namespace {sorted(taken)[0]} exists: a link with prefix {self.prefix!r} is "
                f"up (or was left behind: `wifi_link.py down --prefix {self.prefix}`)"
            )
        self._up = True
        atexit.register(self.close)
        try:
            self._build()
            self._start_forwarder()
        except BaseException:
            self.close()
            raise
        return self

    def _build(self) -> None:
        ns = self.namespaces
        for name in ns.values():
            ip("netns", "add", name)
        ip("-n", ns["link"], "link", "set", "lo", "up")
        for host in HOSTS:
            # the host's end is wl0 in its namespace; its peer in the link namespace is
            # named after the host; no name ever exists in the caller's namespace
            ip(
                "link",
                "add",
                "wl0",
                "netns",
                ns[host],
                "type",
                "veth",
                "peer",
                "name",
                host,
                "netns",
                ns["link"],
            )
            # no addresses in the link namespace (not even IPv6 link-local): its kernel
            # must not answer or route; the forwarder alone moves frames
            ip("-n", ns["link"], "link", "set", host, "addrgenmode", "none")
            ip("-n", ns["link"], "link", "set", host, "promisc", "on", "up")
            ip("-n", ns[host], "link", "set", "wl0", "addrgenmode", "none")
            ip(
                "-n",
                ns[host],
                "addr",
                "add",
                f"{self.addresses[host]}/{self.prefixlen}",
                "dev",
                "wl0",
            )
            ip("-n", ns[host], "link", "set", "lo", "up")
            ip("-n", ns[host], "link", "set", "wl0", "up")
            # multicast (DDS discovery, 239.255.0.1) leaves through the link
            ip("-n", ns[host], "route", "add", "224.0.0.0/4", "dev", "wl0")
        if self.static_arp:
            macs = {h: self._mac(h) for h in HOSTS}
            for host, other in (HOSTS, HOSTS[::-1]):
                ip(
                    "-n",
                    ns[host],
                    "neigh",
                    "replace",
                    self.addresses[other],
                    "lladdr",
                    macs[other],
                    "dev",
                    "wl0",
                    "nud",
                    "permanent",
                )

    def _mac(self, host: str) -> str:
        info = json.loads(ip("-j", "-n", self.namespaces[host], "link", "show", "wl0").stdout)
        return str(info[0]["address"])

    def _start_forwarder(self) -> None:
        self._forwarder = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                self.namespaces["link"],
                sys.executable,
                os.path.abspath(__file__),
                "forward",
                "--robot-if",
                "robot",
                "--station-if",
                "station",
                "--impairment",
                self.impairment.to_json(),
                *([] if self.multicast else ["--no-multicast"]),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        ready = self._read_reply(COMMAND_TIMEOUT_S)
        if not ready.get("ready"):
            raise LinkError(f"the forwarder did not start: {ready}")

    def close(self) -> None:
        """Stop every process started here and in the namespaces, and delete them
        (idempotent; bounded)."""
        if not self._up:
            return
        self._up = False
        with contextlib.suppress(ValueError):
            atexit.unregister(self.close)
        procs = [*self._children, *([self._forwarder] if self._forwarder else [])]
        if self._forwarder is not None and self._forwarder.stdin is not None:
            with contextlib.suppress(OSError):
                self._forwarder.stdin.close()  # EOF: the forwarder ends
        for proc in procs:
            if proc.poll() is None:
                with contextlib.suppress(OSError):
                    proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=2.0)
        if self._forwarder is not None and self._forwarder.stdout is not None:
            self._forwarder.stdout.close()
        teardown(self.prefix)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ---------------------------------------------------------------- use
    def address(self, host: str) -> str:
        """The IPv4 address of ``host`` ("robot" or "station")."""
        return self.addresses[self._host(host)]

    def exec_prefix(self, host: str) -> list[str]:
        """The argv prefix that runs a command in ``host``'s namespace."""
        return ["ip", "netns", "exec", self.namespaces[self._host(host)]]

    def popen(self, host: str, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """Start ``argv`` in ``host``'s namespace (``kwargs`` as for subprocess.Popen, e.g.
        env, stdout); it is stopped when the link closes if still running."""
        if not self._up:
            raise LinkError("the link is not up: use it inside `with WifiLink(...)`")
        proc: subprocess.Popen[Any] = subprocess.Popen([*self.exec_prefix(host), *argv], **kwargs)
        self._children.append(proc)
        return proc

    def outage(self, seconds: float) -> tuple[float, float]:
        """Drop everything both ways from now for ``seconds`` [s] (returns at once); the
        window [start, end) on the monotonic clock [s], which every namespace shares."""
        reply = self._request({"op": "outage", "seconds": float(seconds)})
        return float(reply["start"]), float(reply["end"])

    @contextlib.contextmanager
    def down(self) -> Iterator[None]:
        """The link drops everything both ways inside the ``with`` block."""
        self._request({"op": "down"})
        try:
            yield
        finally:
            self._request({"op": "up"})

    def stats(self) -> dict[str, ChannelStats]:
        """Each direction's statistics, "robot_to_station" and "station_to_robot"."""
        reply = self._request({"op": "stats"})
        return {name: ChannelStats(**reply[name]) for name in DIRECTIONS}

    def _host(self, host: str) -> str:
        if host not in HOSTS:
            raise LinkError(f"host must be 'robot' or 'station', got {host!r}")
        return host

    def _request(self, request: dict[str, Any]) -> dict[str, Any]:
        if not self._up or self._forwarder is None or self._forwarder.stdin is None:
            raise LinkError("the link is not up: use it inside `with WifiLink(...)`")
        with self._control:
            try:
                self._forwarder.stdin.write(json.dumps(request) + "\n")
                self._forwarder.stdin.flush()
            except BrokenPipeError as exc:
                raise LinkError("the forwarder has ended") from exc
            return self._read_reply(COMMAND_TIMEOUT_S)

    def _read_reply(self, timeout: float) -> dict[str, Any]:
        assert self._forwarder is not None and self._forwarder.stdout is not None
        out = self._forwarder.stdout
        with selectors.DefaultSelector() as sel:
            sel.register(out, selectors.EVENT_READ)
            if not sel.select(timeout):
                raise LinkError(f"the forwarder did not answer within {timeout} s")
        line = out.readline()
        if not line:
            raise LinkError(f"the forwarder ended (status {self._forwarder.poll()})")
        reply: dict[str, Any] = json.loads(line)
        return reply


# --------------------------------------------------------------------------- command line
def parse_delay(text: str) -> tuple[float, float]:
    """``MIN:MAX`` or ``D`` [ms] as (min, max).

    Raises:
        LinkError: not one or two numbers.
    """
    try:
        parts = [float(p) for p in text.split(":")]
    except ValueError:
        parts = []
    if len(parts) not in (1, 2):
        raise LinkError(f"--delay must be MIN:MAX or D in ms (e.g. 5:30), got {text!r}")
    return (parts[0], parts[-1])


def impairment_from(args: argparse.Namespace) -> Impairment:
    """The impairment the options ask for."""
    return Impairment(
        delay_ms=parse_delay(args.delay),
        loss=args.loss,
        burst_rate=args.burst_rate,
        burst_ms=args.burst_ms,
        reorder=args.reorder,
        reorder_ms=args.reorder_ms,
        seed=args.seed,
    )


def format_stats(stats: dict[str, ChannelStats]) -> str:
    """One line a direction."""
    return "\n".join(
        f"{name}: offered {s.offered} forwarded {s.forwarded} dropped {s.dropped} "
        f"(loss {s.dropped_loss}, burst {s.dropped_burst}, outage {s.dropped_outage}) "
        f"reordered {s.reordered} delay mean {s.delay_mean_ms:.1f} ms "
        f"[{min(s.delay_min_ms, 9e9):.1f}, {s.delay_max_ms:.1f}]"
        for name, s in stats.items()
    )


def _interrupt_on_signals() -> None:
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


def run_up(prefix: str, impairment: Impairment, subnet: str, multicast: bool) -> int:
    """Bring a link up and hold it until Ctrl-C (or SIGTERM); then print the statistics."""
    _interrupt_on_signals()
    with WifiLink(prefix, impairment, subnet, multicast=multicast) as link:
        me = f"{sys.executable} {os.path.abspath(__file__)}"
        for host in HOSTS:
            print(
                f"{host}: {link.address(host)} in namespace {link.namespaces[host]}: "
                f"sudo {me} run --prefix {prefix} {host} -- CMD"
            )
        print(f"impairment: {impairment}\nup; Ctrl-C to take it down", flush=True)
        try:
            while link._forwarder is not None and link._forwarder.poll() is None:
                time.sleep(0.5)
            print("the forwarder ended", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print(format_stats(link.stats()))
    return 0


def run_relay(listen: str, to: str, impairment: Impairment) -> int:
    """Relay UDP until Ctrl-C; then print the statistics."""
    _interrupt_on_signals()
    with Relay(parse_endpoint(listen), parse_endpoint(to), impairment) as relay:
        print(
            f"relaying UDP {listen.rpartition(':')[0]}:{relay.port} -> {to}; "
            f"impairment: {impairment}; Ctrl-C to stop",
            flush=True,
        )
        try:
            while relay.error is None:
                time.sleep(0.5)
            print(f"wifi_link: relay failed: {relay.error}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print(format_stats(relay.stats()))
    return 0


def run_in(prefix: str, host: str, argv: Sequence[str]) -> int:
    """Run a command in a host's namespace of a link that is up; its exit status."""
    require_netns()
    name = namespaces(prefix)[host]
    if name not in existing_namespaces():
        raise LinkError(f"no namespace {name}: bring the link up first (`wifi_link.py up`)")
    if not argv:
        raise LinkError("no command: `wifi_link.py run --prefix P robot -- CMD ...`")
    return subprocess.call(["ip", "netns", "exec", name, *argv])


def run_down(prefix: str) -> int:
    """Delete a link's namespaces (and stop what runs in them)."""
    require_netns()
    gone = teardown(prefix)
    print(f"deleted {', '.join(gone)}" if gone else f"no namespaces of prefix {prefix!r}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(
        prog="wifi_link.py", description="Two hosts joined by a Wi-Fi-like link (docs/two-hosts.md)"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def impairment_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--delay", default="0", help="one-way delay MIN:MAX or D [ms]")
        p.add_argument("--loss", type=float, default=0.0, help="drop probability a frame")
        p.add_argument("--burst-rate", type=float, default=0.0, help="loss bursts a second")
        p.add_argument("--burst-ms", type=float, default=100.0, help="burst length [ms]")
        p.add_argument("--reorder", type=float, default=0.0, help="reorder probability a frame")
        p.add_argument("--reorder-ms", type=float, default=20.0, help="extra hold [ms]")
        p.add_argument("--seed", type=int, default=0)

    up = sub.add_parser("up", help="bring a link up until Ctrl-C (root)")
    up.add_argument("--prefix", default="lab", help="namespaces are PREFIX-robot, ...")
    up.add_argument("--subnet", default="10.77.0.0/24")
    up.add_argument("--no-multicast", action="store_true", help="filter multicast out")
    impairment_options(up)
    up.set_defaults(
        run=lambda a: run_up(a.prefix, impairment_from(a), a.subnet, not a.no_multicast)
    )

    run = sub.add_parser("run", help="run a command on one side of a link that is up (root)")
    run.add_argument("--prefix", default="lab")
    run.add_argument("host", choices=HOSTS)
    run.add_argument("argv", nargs=argparse.REMAINDER, help="-- CMD ...")
    run.set_defaults(
        run=lambda a: run_in(a.prefix, a.host, a.argv[1:] if a.argv[:1] == ["--"] else a.argv)
    )

    down = sub.add_parser("down", help="delete a link's namespaces (root)")
    down.add_argument("--prefix", default="lab")
    down.set_defaults(run=lambda a: run_down(a.prefix))

    relay = sub.add_parser("relay", help="an impairing UDP relay (no root)")
    relay.add_argument("--listen", required=True, help="HOST:PORT to listen on")
    relay.add_argument("--to", required=True, help="HOST:PORT to relay to")
    impairment_options(relay)
    relay.set_defaults(run=lambda a: run_relay(a.listen, a.to, impairment_from(a)))

    fwd = sub.add_parser("forward", help=argparse.SUPPRESS)  # the link namespace's process
    fwd.add_argument("--robot-if", required=True)
    fwd.add_argument("--station-if", required=True)
    fwd.add_argument("--impairment", required=True)
    fwd.add_argument("--no-multicast", action="store_true")
    fwd.set_defaults(
        run=lambda a: forward(
            a.robot_if, a.station_if, Impairment.from_json(a.impairment), not a.no_multicast
        )
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The entry point: one line on stderr and status 1 for any LinkError or OSError."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except (LinkError, OSError) as exc:
        print(f"wifi_link: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
