"""tools/wifi_link.py: the impairment model (pure, seeded), the UDP relay on 127.0.0.1, the
command line's errors, and two namespaces through the layer-2 forwarder (root only).

The references: the configured model (a binomial bound on the loss count; a burst's length
in frames at a known pace), the datagrams' own numbers (order, gaps) and CLOCK_MONOTONIC
stamps that sender and receiver share (a datagram cannot arrive before its minimum delay),
and `ip netns list` for the teardown. No wall-clock upper bound is asserted anywhere.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from support.namespaces import wifi_link
from support.waits import wait_for

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("udp_probe.py")


wl = wifi_link()
Impairment, Channel, LinkError = wl.Impairment, wl.Channel, wl.LinkError


def binomial_bound(n: int, p: float, sigmas: float = 5.0) -> tuple[float, float]:
    """[lo, hi] for a Binomial(n, p) count, ``sigmas`` standard deviations wide."""
    half = sigmas * math.sqrt(n * p * (1.0 - p))
    return n * p - half, n * p + half


def inversions(seqs: Sequence[int]) -> int:
    """Datagrams that arrived after one with a higher number."""
    top, count = -1, 0
    for seq in seqs:
        if seq < top:
            count += 1
        top = max(top, seq)
    return count


# ---------------------------------------------------------------------- the model alone
def fates(imp: Any, times: Sequence[float], stream: str = "a") -> list[float | None]:
    """Each frame's leaving time [s] (None: dropped), frames arriving at ``times`` [s]."""
    channel = Channel(imp, stream)
    return [None if (f := channel.admit(t)) is None else f[0] for t in times]


def test_model_is_deterministic_given_the_seed() -> None:
    imp = Impairment(delay_ms=(5, 30), loss=0.1, burst_rate=2.0, reorder=0.1, seed=3)
    times = [k * 0.001 for k in range(5000)]
    assert fates(imp, times) == fates(imp, times)
    assert fates(imp, times) != fates(dataclasses.replace(imp, seed=4), times)
    assert fates(imp, times, "a") != fates(imp, times, "b")  # the directions are independent


def test_delays_stay_in_range_and_keep_order() -> None:
    """Without reordering a frame leaves within [min, max] of its arrival and never before
    the frame ahead of it; sparse frames (no queueing) have the uniform's mean."""
    imp = Impairment(delay_ms=(5, 30), seed=1)
    dense = [k * 0.001 for k in range(5000)]
    leave = fates(imp, dense)
    delays = [(f - t) * 1000 for f, t in zip(leave, dense, strict=True) if f is not None]
    assert min(delays) >= 5.0 and max(delays) <= 30.0 + 1e-9
    assert leave == sorted(leave)  # type: ignore[type-var]
    sparse = [k * 0.1 for k in range(4000)]
    mean = sum(f - t for f, t in zip(fates(imp, sparse), sparse, strict=True)) / 4000 * 1000
    assert abs(mean - 17.5) < 5 * (25 / math.sqrt(12)) / math.sqrt(4000)


def test_independent_loss_is_binomial() -> None:
    n, p = 20000, 0.03
    dropped = fates(Impairment(loss=p, seed=7), [k * 0.001 for k in range(n)]).count(None)
    lo, hi = binomial_bound(n, p)
    assert lo <= dropped <= hi


def test_bursts_drop_burst_ms_of_frames() -> None:
    """At one frame a millisecond a 100 ms burst drops 100 consecutive frames (+-1 for
    where it starts between two); bursts come at the configured Poisson rate."""
    rate, burst_ms, seconds = 0.5, 100.0, 400
    times = [k * 0.001 for k in range(seconds * 1000)]
    out = fates(Impairment(burst_rate=rate, burst_ms=burst_ms, seed=5), times)
    runs, length = [], 0
    for f in [*out, 0.0]:
        if f is None:
            length += 1
        elif length:
            runs.append(length)
            length = 0
    assert runs and all(99 <= r <= 101 for r in runs), sorted(set(runs))
    # bursts start at `rate` while no burst is on: expected seconds * rate / (1 + rate * 0.1)
    expected = seconds * rate / (1 + rate * burst_ms / 1000)
    assert abs(len(runs) - expected) <= 5 * math.sqrt(expected)


def test_reorder_holds_frames_back() -> None:
    """A reordered frame leaves reorder_ms later and is overtaken; without reordering none."""
    times = [k * 0.002 for k in range(5000)]
    imp = Impairment(delay_ms=(5, 5), reorder=0.1, reorder_ms=20, seed=2)
    leave = [f for f in fates(imp, times) if f is not None]
    order = sorted(range(len(leave)), key=lambda k: leave[k])
    held = sum(1 for f, t in zip(leave, times, strict=True) if f - t > 0.024)
    lo, hi = binomial_bound(len(times), 0.1)
    assert lo <= held <= hi
    assert inversions(order) > 0
    plain = [f for f in fates(Impairment(delay_ms=(5, 30), seed=2), times) if f is not None]
    assert plain == sorted(plain)


def test_outage_drops_on_arrival_and_when_due() -> None:
    channel = Channel(Impairment(delay_ms=(10, 10)), "a")
    early = channel.admit(0.0)
    assert early is not None
    channel.down_until = 0.5
    assert channel.admit(0.2) is None
    assert not channel.release(0.0, early[1], 0.01)  # in flight when the link went down
    assert channel.admit(0.5) is not None
    assert channel.stats.dropped_outage == 2 and channel.stats.forwarded == 0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"delay_ms": (30, 5)}, "delay_ms"),
        ({"delay_ms": (-1, 5)}, "delay_ms"),
        ({"loss": 1.5}, "loss"),
        ({"reorder": -0.1}, "reorder"),
        ({"burst_rate": -1.0}, "burst_rate"),
        ({"burst_ms": 0.0}, "burst_ms"),
    ],
)
def test_bad_impairment_names_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(LinkError, match=field):
        Impairment(**kwargs)


# ---------------------------------------------------------------------- probes
class Probe:
    """A udp_probe.py process (``prefix`` runs it elsewhere, e.g. in a namespace)."""

    def __init__(self, prefix: Sequence[str], *args: str, popen: Callable[..., Any] | None = None):
        argv = [sys.executable, str(PROBE), *args]
        kwargs = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "text": True}
        self.proc = popen(argv, **kwargs) if popen else subprocess.Popen([*prefix, *argv], **kwargs)

    def read(self, timeout: float = 30.0) -> dict[str, Any]:
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout):
                pytest.fail(f"probe {self.proc.args} said nothing within {timeout} s")
        line = self.proc.stdout.readline()
        assert line, f"probe {self.proc.args} ended with status {self.proc.wait()}"
        return json.loads(line)

    def finish(self) -> dict[str, Any]:
        """Close stdin (a sender then stops) and read the report."""
        self.proc.stdin.close()
        report = self.read()
        self.proc.wait(timeout=30)
        return report

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def exchange(
    start_receiver: Callable[[], Probe],
    start_sender: Callable[[int], Probe],
    during: Callable[[], None] = lambda: None,
) -> tuple[list[list[float]], list[list[float]]]:
    """Start a receiver, then a sender to its port; ``during`` runs while the sender sends
    (without it the sender stops on its own count). Returns (sent, received)."""
    receiver = start_receiver()
    sender = None
    try:
        port = receiver.read()["port"]
        sender = start_sender(port)
        during()
        sent = sender.finish()["sent"]
        received = receiver.read()["received"]
        return sent, received
    finally:
        for probe in (receiver, sender):
            if probe is not None:
                probe.kill()


def check_delivery(
    sent: list[list[float]], received: list[list[float]], loss: float, min_delay_ms: float
) -> None:
    """Every datagram received once, none before its minimum delay; the count lost is
    within the binomial bound of the configured loss."""
    seqs = [int(r[0]) for r in received]
    assert len(set(seqs)) == len(seqs) and set(seqs) <= {int(s[0]) for s in sent}
    assert min((r[2] - r[1]) * 1000 for r in received) >= min_delay_ms
    lo, hi = binomial_bound(len(sent), loss)
    assert lo <= len(sent) - len(received) <= hi, (len(sent), len(received))


def check_outage(
    sent: list[list[float]],
    received: list[list[float]],
    window: tuple[float, float],
    min_delay_ms: float,
) -> None:
    """Nothing sent during the outage got through before it ended (a datagram sent in it
    reached the forwarder in it, so it passed only if it arrived after the end); traffic
    sent after it resumed."""
    start, end = window
    during = [r for r in received if start <= r[1] < end]
    assert all(r[2] >= end + min_delay_ms / 1000 for r in during), during[:3]
    assert any(start <= s[1] < end for s in sent), "the sender sent nothing during the outage"
    assert any(r[1] >= end for r in received), "no traffic after the outage"


# ---------------------------------------------------------------------- the UDP relay
def relay_exchange(
    imp: Any,
    count: int | None,
    pace_ms: float = 1.0,
    during: Callable[[Any], None] = lambda relay: None,
) -> tuple[Any, ...]:
    receiver_box: list[Probe] = []

    def start_receiver() -> Probe:
        receiver_box.append(Probe([], "recv", "--bind", "127.0.0.1:0"))
        return receiver_box[0]

    relay_box: list[Any] = []

    def start_sender(port: int) -> Probe:
        relay = wl.Relay(("127.0.0.1", 0), ("127.0.0.1", port), imp).__enter__()
        relay_box.append(relay)
        args = ["send", "--to", f"127.0.0.1:{relay.port}", "--pace-ms", str(pace_ms)]
        return Probe([], *args, *(["--count", str(count)] if count else []))

    try:
        sent, received = exchange(start_receiver, start_sender, lambda: during(relay_box[0]))
        return sent, received, relay_box[0].stats()
    finally:
        for relay in relay_box:
            relay.close()


def test_relay_loss_and_delay() -> None:
    imp = Impairment(delay_ms=(3, 12), loss=0.05, seed=11)
    sent, received, stats = relay_exchange(imp, count=1000)
    check_delivery(sent, received, 0.05, 3.0)
    assert inversions([int(r[0]) for r in received]) == 0
    assert stats["to_target"].delay_min_ms >= 3.0 and stats["to_target"].dropped_burst == 0


def test_relay_reorders_only_when_asked() -> None:
    imp = Impairment(delay_ms=(2, 2), reorder=0.1, reorder_ms=15, seed=4)
    _, received, stats = relay_exchange(imp, count=600)
    assert inversions([int(r[0]) for r in received]) > 0 and stats["to_target"].reordered > 0


def test_relay_answers_reach_the_client() -> None:
    """The to_client direction: an echo target's answers come back through the relay."""
    import socket

    echo = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    echo.bind(("127.0.0.1", 0))
    client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    client.settimeout(10.0)
    with wl.Relay(("127.0.0.1", 0), echo.getsockname(), Impairment(delay_ms=(1, 3))) as relay:
        client.sendto(b"ping", ("127.0.0.1", relay.port))
        echo.settimeout(10.0)
        data, address = echo.recvfrom(100)
        echo.sendto(data.upper(), address)
        assert client.recvfrom(100)[0] == b"PING"
        assert relay.stats()["to_client"].forwarded == 1
    echo.close()
    client.close()


def test_relay_outage() -> None:
    imp = Impairment(delay_ms=(2, 4), seed=9)
    window: list[tuple[float, float]] = []

    def during(relay: Any) -> None:
        wait_for(lambda: relay.stats()["to_target"].forwarded > 50, 30, "traffic before")
        window.append(relay.outage(0.3))
        wait_for(lambda: relay.stats()["to_target"].dropped_outage > 0, 30, "the outage")
        after = relay.stats()["to_target"].forwarded
        wait_for(lambda: relay.stats()["to_target"].forwarded > after + 50, 30, "traffic after")

    sent, received, stats = relay_exchange(imp, count=None, during=during)
    check_outage(sent, received, window[0], 2.0)
    assert stats["to_target"].dropped_outage > 0


# ---------------------------------------------------------------------- the command line
def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "tools" / "wifi_link.py"), *args],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["relay", "--listen", "127.0.0.1:0", "--to", "nowhere", "--loss", "0.1"], "HOST:PORT"),
        (["relay", "--listen", "127.0.0.1:0", "--to", "127.0.0.1:9", "--delay", "30:5"], "delay"),
        (["relay", "--listen", "127.0.0.1:0", "--to", "127.0.0.1:9", "--delay", "x"], "--delay"),
        (["relay", "--listen", "127.0.0.1:0", "--to", "127.0.0.1:9", "--loss", "2"], "loss"),
    ],
)
def test_cli_bad_input_is_one_line(args: list[str], message: str) -> None:
    done = run_cli(*args)
    assert done.returncode == 1 and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_cli_without_ip_says_so() -> None:
    env = {**os.environ, "PATH": "/nonexistent"}
    for args in (["up", "--prefix", "nope"], ["down", "--prefix", "nope"]):
        done = run_cli(*args, env=env)
        assert done.returncode == 1 and "`ip` command" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_ros_env_points_each_side_at_the_other() -> None:
    """No namespaces needed: the addresses are known before the link is up."""
    base = {"ROS_DOMAIN_ID": "7", "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    plain = wl.WifiLink("envtest").ros_env("robot", base)
    assert plain == {"ROS_DOMAIN_ID": "7", "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"}
    filtered = wl.WifiLink("envtest", multicast=False, subnet="10.78.0.0/24")
    assert filtered.ros_env("robot", base)["ROS_STATIC_PEERS"] == "10.78.0.2"
    assert filtered.ros_env("station", base)["ROS_STATIC_PEERS"] == "10.78.0.1"
    assert "ROS_STATIC_PEERS" not in filtered.ros_env("station", base, static_peers=False)


# ---------------------------------------------------------------------- two namespaces
def our_namespaces(prefix: str) -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(prefix + "-")]


@pytest.fixture
def link_of(netns: None) -> Iterator[Callable[[Any], Any]]:
    """``link_of(impairment)``: a WifiLink, up; closed (and checked gone) afterwards."""
    links: list[Any] = []

    def make(imp: Any) -> Any:
        links.append(wl.WifiLink(None, imp).start())
        return links[-1]

    yield make
    for link in links:
        link.close()
        assert our_namespaces(link.prefix) == []


def link_exchange(
    link: Any,
    count: int | None,
    group: str | None = None,
    during: Callable[[], None] = lambda: None,
    pace_ms: float = 2.0,
) -> tuple[list[list[float]], list[list[float]]]:
    """The station sends numbered datagrams to the robot (or to ``group``)."""
    bind = ["--bind", "0.0.0.0:0", *(["--group", group] if group else [])]
    to = group or link.address("robot")
    return exchange(
        lambda: Probe([], "recv", *bind, popen=lambda a, **k: link.popen("robot", a, **k)),
        lambda port: Probe(
            [],
            "send",
            "--to",
            f"{to}:{port}",
            "--pace-ms",
            str(pace_ms),
            *(["--count", str(count)] if count else []),
            popen=lambda a, **k: link.popen("station", a, **k),
        ),
        during,
    )


@pytest.mark.slow
def test_namespaces_loss_and_delay(link_of: Callable[[Any], Any]) -> None:
    link = link_of(Impairment(delay_ms=(5, 15), loss=0.05, seed=1))
    assert link.address("robot") == "10.77.0.1" and link.address("station") == "10.77.0.2"
    sent, received = link_exchange(link, count=600)
    check_delivery(sent, received, 0.05, 5.0)
    assert inversions([int(r[0]) for r in received]) == 0
    stats = link.stats()["station_to_robot"]
    assert stats.delay_min_ms >= 5.0 and stats.forwarded >= len(received)


@pytest.mark.slow
def test_namespaces_reorder(link_of: Callable[[Any], Any]) -> None:
    link = link_of(Impairment(delay_ms=(5, 5), reorder=0.05, reorder_ms=20, seed=2))
    _, received = link_exchange(link, count=400)
    assert inversions([int(r[0]) for r in received]) > 0
    assert link.stats()["station_to_robot"].reordered > 0


@pytest.mark.slow
def test_namespaces_outage(link_of: Callable[[Any], Any]) -> None:
    link = link_of(Impairment(delay_ms=(5, 10), seed=3))
    window: list[tuple[float, float]] = []

    def forwarded() -> int:
        return int(link.stats()["station_to_robot"].forwarded)

    def during() -> None:
        wait_for(lambda: forwarded() > 50, 30, "traffic before the outage")
        window.append(link.outage(0.4))
        wait_for(lambda: link.stats()["station_to_robot"].dropped_outage > 0, 30, "the outage")
        wait_for(lambda: time.monotonic() > window[0][1], 30, "the outage's end")
        after = forwarded()
        wait_for(lambda: forwarded() > after + 50, 30, "traffic after the outage")

    sent, received = link_exchange(link, count=None, during=during)
    check_outage(sent, received, window[0], 5.0)


@pytest.mark.slow
def test_namespaces_multicast_crosses(link_of: Callable[[Any], Any]) -> None:
    """Datagrams to 239.255.0.1 (the group DDS discovery uses) reach the other side."""
    link = link_of(Impairment(delay_ms=(1, 3), seed=4))
    sent, received = link_exchange(link, count=100, group="239.255.0.1")
    check_delivery(sent, received, 0.0, 1.0)


@pytest.mark.slow
def test_namespaces_multicast_filter(netns: None) -> None:
    """With multicast=False the group's datagrams stay behind while unicast to the same
    port crosses (numbered from 1000, so the receiver's report tells them apart)."""
    with wl.WifiLink(None, Impairment(delay_ms=(1, 3)), multicast=False) as link:

        def on(host: str) -> Callable[..., Any]:
            return lambda argv, **kw: link.popen(host, argv, **kw)

        receiver = Probe(
            [], "recv", "--bind", "0.0.0.0:0", "--group", "239.255.0.1", popen=on("robot")
        )
        port = receiver.read()["port"]

        def send(to: str, *extra: str) -> int:
            args = ["send", "--to", f"{to}:{port}", "--count", "50", "--pace-ms", "1", *extra]
            return len(Probe([], *args, popen=on("station")).finish()["sent"])

        assert send("239.255.0.1", "--no-end") == 50
        assert send(link.address("robot"), "--first", "1000") == 50
        seqs = [int(r[0]) for r in receiver.read()["received"]]
        assert sorted(seqs) == list(range(1000, 1050))
        receiver.kill()
    assert our_namespaces(link.prefix) == []


@pytest.mark.slow
def test_namespaces_tcp_bulk_crosses(link_of: Callable[[Any], Any]) -> None:
    """2 MB over TCP under loss: GSO super-frames and offloaded checksums cross the raw
    forwarder intact (the SHA-256 at both ends agrees)."""
    link = link_of(Impairment(delay_ms=(1, 5), loss=0.01, seed=5))
    server = (
        "import hashlib,os,socket;s=socket.create_server(('0.0.0.0',5001));print('ready',"
        "flush=True);c,_=s.accept();d=os.urandom(2<<20);c.sendall(d);c.close();"
        "print(hashlib.sha256(d).hexdigest(),flush=True)"
    )
    client = (
        "import hashlib,socket;c=socket.create_connection(('10.77.0.1',5001),timeout=30);"
        "b=bytearray()\nwhile (x:=c.recv(1<<16)): b+=x\nprint(hashlib.sha256(b).hexdigest())"
    )
    srv = link.popen("robot", [sys.executable, "-c", server], stdout=subprocess.PIPE, text=True)
    assert srv.stdout.readline().strip() == "ready"
    got = subprocess.run(
        [*link.exec_prefix("station"), sys.executable, "-c", client],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == srv.stdout.readline().strip()


@pytest.mark.slow
def test_namespaces_torn_down_after_a_failure(netns: None) -> None:
    link = wl.WifiLink(None, Impairment())
    with pytest.raises(RuntimeError, match="boom"), link:
        sleeper = link.popen("robot", ["sleep", "60"])
        assert our_namespaces(link.prefix)
        raise RuntimeError("boom")
    assert our_namespaces(link.prefix) == [] and sleeper.poll() is not None
    with pytest.raises(LinkError, match="not up"):
        link.stats()


@pytest.mark.slow
def test_namespaces_prefix_taken(link_of: Callable[[Any], Any]) -> None:
    link = link_of(Impairment())
    with pytest.raises(LinkError, match="exists"):
        wl.WifiLink(link.prefix).start()
    assert len(our_namespaces(link.prefix)) == 3  # the refused one left them alone
