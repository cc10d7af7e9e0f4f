"""Numbered UDP datagrams for the link tests: a sender and a receiver, each a process (so
either can run in a network namespace). A datagram carries its number and the sender's
CLOCK_MONOTONIC time at sending; every namespace of a machine shares that clock, so the
receiver's time minus it is the datagram's delay.

    udp_probe.py recv --bind 0.0.0.0:0 [--group 239.255.0.1]   prints {"port": P}, then at the
        sender's end marker {"received": [[seq, t_sent, t_recv], ...]}
    udp_probe.py send --to HOST:PORT --pace-ms 2 [--count N] [--first K] [--no-end]
        numbers from K; without --count: until its stdin closes; then end markers (unless
        --no-end); prints {"sent": [[seq, t_sent], ...]}
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
import threading
import time

DATA = struct.Struct("!qd")  # sequence number (-1: end marker), send time [s, monotonic]
END_MARKERS = 10  # end markers sent, END_GAP_S apart, so a lossy link lets one through
END_GAP_S = 0.03
LIFETIME_S = 60.0  # a receiver that never sees an end marker gives up after this long [s]


def endpoint(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def receive(bind: str, group: str | None) -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    sock.bind(endpoint(bind))
    if group is not None:
        mreq = socket.inet_aton(group) + socket.inet_aton("0.0.0.0")
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
    print(json.dumps({"port": sock.getsockname()[1]}), flush=True)
    sock.settimeout(LIFETIME_S)
    received = []
    while True:
        data = sock.recv(2048)
        now = time.monotonic()
        seq, sent = DATA.unpack_from(data)
        if seq < 0:
            break
        received.append([seq, sent, now])
    print(json.dumps({"received": received}), flush=True)
    return 0


def send(to: str, pace_ms: float, count: int | None, first: int, end: bool) -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    target = endpoint(to)
    stop = threading.Event()
    if count is None:
        threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    sent = []
    start = time.monotonic()
    seq = first
    while not stop.is_set() and (count is None or seq < first + count):
        delay = start + (seq - first) * pace_ms / 1000.0 - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        now = time.monotonic()
        sock.sendto(DATA.pack(seq, now), target)
        sent.append([seq, now])
        seq += 1
    for _ in range(END_MARKERS if end else 0):
        time.sleep(END_GAP_S)
        sock.sendto(DATA.pack(-1, time.monotonic()), target)
    print(json.dumps({"sent": sent}), flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--bind", required=True)
    r.add_argument("--group")
    s = sub.add_parser("send")
    s.add_argument("--to", required=True)
    s.add_argument("--pace-ms", type=float, default=2.0)
    s.add_argument("--count", type=int)
    s.add_argument("--first", type=int, default=0, help="number of the first datagram")
    s.add_argument("--no-end", action="store_true", help="send no end markers")
    a = parser.parse_args()
    return (
        receive(a.bind, a.group)
        if a.mode == "recv"
        else send(a.to, a.pace_ms, a.count, a.first, not a.no_end)
    )


if __name__ == "__main__":
    sys.exit(main())
