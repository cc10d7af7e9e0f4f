#!/usr/bin/env python3
"""Two hosts joined by a Wi-Fi-like link: Linux network namespaces and a user-space forwarder.

The robot and the workstation ("station") are two network namespaces, each with one veth on
one subnet (10.77.0.1/24 and 10.77.0.2/24 by default). Their veths' peers sit in a third
namespace ("link"), where a forwarder bridges them at layer 2 with AF_PACKET sockets, so the
two hosts share a subnet and multicast (DDS discovery) crosses. The forwarder delays, drops
(independently and in bursts), reorders and, on demand, cuts every frame as :class:`Impairment`
says, in user space: these kernels have no netem. The same model (tools/wifi_model.py) drives
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
import ipaddress
import json
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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict
from typing import Any, Self

from wifi_model import (
    Channel,
    ChannelStats,
    Impairment,
    LinkError,
    Pump,
    Relay,
    Route,
    Running,
    parse_endpoint,
)

HOSTS = ("robot", "station")
#: The directions of a link, named from and to (the relay's are to_target and to_client).
DIRECTIONS = ("robot_to_station", "station_to_robot")
COMMAND_TIMEOUT_S = 10.0  # longest one `ip` command may take [s]
SOL_PACKET = 263  # <linux/socket.h>
PACKET_VNET_HDR = 15  # <linux/if_packet.h>: frames carry a virtio_net_hdr (GSO, checksum)
VNET_HDR_LEN = 10  # sizeof(struct virtio_net_hdr) before each frame [bytes]
BROADCAST = b"\xff" * 6
ETH_P_ALL = 0x0003
PREFIX_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.]{0,23}")


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


class WifiLink(Running):
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

    # ---------------------------------------------------------------- use
    def address(self, host: str) -> str:
        """The IPv4 address of ``host`` ("robot" or "station")."""
        return self.addresses[self._host(host)]

    def ros_env(
        self, host: str, base: Mapping[str, str] | None = None, static_peers: bool | None = None
    ) -> dict[str, str]:
        """An environment for ROS 2 processes on ``host`` that find the other side:
        discovery over the subnet, and the other host as a static peer where multicast does
        not cross (docs/two-hosts.md). ROS_DOMAIN_ID is left as ``base`` has it: use the same
        on both sides.

        Args:
            host: "robot" or "station".
            base: the environment to start from (default: this process's).
            static_peers: set ROS_STATIC_PEERS to the other host; None: only when the link
                filters multicast.
        """
        other = HOSTS[1 - HOSTS.index(self._host(host))]
        env = dict(os.environ if base is None else base)
        env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "SUBNET"
        env.pop("ROS_LOCALHOST_ONLY", None)  # the pre-Jazzy switch would keep it on lo
        if static_peers if static_peers is not None else not self.multicast:
            env["ROS_STATIC_PEERS"] = self.addresses[other]
        return env

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
