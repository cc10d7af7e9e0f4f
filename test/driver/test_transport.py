"""Serial (over a pty pair), UDP and TCP transports on 127.0.0.1: data both ways, timeouts,
writes larger than the kernel takes at once (finished later, intact, never blocking), and a
lost or stuck link reported as TransportError (never a hang, never a silent drop)."""

from __future__ import annotations

import contextlib
import os
import random
import socket
import threading
import time
import tty
from collections.abc import Callable

import pytest
from support.waits import wait_for

from snake_driver.transport import Transport, TransportError, make_transport


def read_exactly(transport, size: int, timeout: float = 2.0) -> bytes:  # type: ignore[no-untyped-def]
    data = b""
    deadline = time.monotonic() + timeout
    while len(data) < size and time.monotonic() < deadline:
        data += transport.read(0.1)
    return data


def test_serial_over_a_pty_pair() -> None:
    controller, device = os.openpty()
    transport = make_transport("serial", os.ttyname(device))
    with transport:
        transport.write(b"\xa5hello")
        assert os.read(controller, 64) == b"\xa5hello"
        os.write(controller, b"telemetry")
        assert read_exactly(transport, 9) == b"telemetry"
        start = time.monotonic()
        assert transport.read(0.2) == b""  # nothing: a timeout, not an error
        assert 0.15 < time.monotonic() - start < 1.0
    os.close(controller)
    os.close(device)


def test_serial_port_that_does_not_exist() -> None:
    with pytest.raises(TransportError, match="cannot open serial /dev/nonexistent-tty"):
        make_transport("serial", "/dev/nonexistent-tty").open()


def test_tcp_round_trip_and_peer_close() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    transport = make_transport("tcp", str(port))
    transport.open()
    conn, _ = server.accept()
    transport.write(b"frame")
    assert conn.recv(16) == b"frame"
    conn.sendall(b"reply")
    assert read_exactly(transport, 5) == b"reply"
    conn.close()
    with pytest.raises(TransportError, match="connection closed by the peer"):
        for _ in range(20):
            transport.read(0.1)
    transport.close()
    server.close()


def test_tcp_connection_refused() -> None:
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nobody listens there now
    with pytest.raises(TransportError, match=f"cannot open tcp 127.0.0.1:{port}: nothing listens"):
        make_transport("tcp", str(port)).open()


def test_udp_to_a_port_where_nothing_listens() -> None:
    """UDP "opens" anything; the ICMP port-unreachable that answers the first datagram is
    reported as such on the next read."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    with make_transport("udp", str(port)) as transport:
        transport.write(b"ping")
        with pytest.raises(TransportError, match="nothing listens there"):
            wait_for(lambda: transport.read(0.05) is None, 5.0, "the port-unreachable")


def test_udp_round_trip_with_a_bridge_that_answers_the_sender() -> None:
    bridge = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    bridge.bind(("127.0.0.1", 0))
    port = bridge.getsockname()[1]

    def echo() -> None:
        data, peer = bridge.recvfrom(64)
        bridge.sendto(data.upper(), peer)

    thread = threading.Thread(target=echo, daemon=True)
    thread.start()
    with make_transport("udp", str(port)) as transport:
        transport.write(b"ping")
        assert read_exactly(transport, 4) == b"PING"
    thread.join(timeout=2)
    bridge.close()


@pytest.mark.parametrize(
    ("kind", "port", "message"),
    [
        ("carrier-pigeon", "1", "unknown transport"),
        ("udp", "x", "must be a number"),
        ("tcp", "70000", "1..65535"),
    ],
)
def test_bad_transport_settings(kind: str, port: str, message: str) -> None:
    with pytest.raises(TransportError, match=message):
        make_transport(kind, port)


def test_serial_reports_the_emulator_going_away() -> None:
    controller, device = os.openpty()
    transport = make_transport("serial", os.ttyname(device))
    transport.open()
    os.close(controller)  # the emulator (or the USB device) disappears
    with pytest.raises(TransportError, match="serial"):
        for _ in range(20):
            transport.read(0.1)
    transport.close()
    os.close(device)


#: A transport, a non-blocking read of what reached the device's end, a clean-up.
Pair = tuple[Transport, Callable[[], bytes], Callable[[], None]]


def _pty_pair() -> Pair:
    controller, device = os.openpty()
    tty.setraw(controller)
    os.set_blocking(controller, False)
    transport = make_transport("serial", os.ttyname(device))
    transport.open()

    def recv() -> bytes:
        with contextlib.suppress(BlockingIOError):
            return os.read(controller, 1 << 16)
        return b""

    def close() -> None:
        transport.close()
        os.close(controller)
        os.close(device)

    return transport, recv, close


def _tcp_pair() -> Pair:
    server = socket.create_server(("127.0.0.1", 0))
    transport = make_transport("tcp", str(server.getsockname()[1]))
    transport.open()
    conn, _ = server.accept()
    conn.setblocking(False)

    def recv() -> bytes:
        with contextlib.suppress(BlockingIOError):
            return conn.recv(1 << 16)
        return b""

    def close() -> None:
        transport.close()
        conn.close()
        server.close()

    return transport, recv, close


#: More than the kernel holds between the two ends [bytes] (a pty: a few KiB; loopback TCP:
#: the socket buffers, up to a few MiB each).
PAIRS = {"serial": (_pty_pair, 1 << 20), "tcp": (_tcp_pair, 32 << 20)}


@pytest.mark.parametrize("kind", list(PAIRS))
def test_a_write_the_device_cannot_take_at_once_is_finished_later_intact(kind: str) -> None:
    """More than the kernel buffers hold, to a device that is not reading yet: ``write``
    returns at once with the rest pending (it never blocks the driver), and once the device
    reads, later flushes deliver every byte in order (a partial write continued, not lost)."""
    make, size = PAIRS[kind]
    transport, recv, close = make()
    data = random.Random(3).randbytes(size)
    try:
        transport.write(data)
        assert transport.pending > 0, "the kernel took it all at once: nothing was tested"
        received = bytearray()

        def drained() -> bool:
            for _ in range(1000):  # many reads a poll: a pty hands out a few KiB a read
                received.extend(recv())
                transport.flush()
            return len(received) == len(data)

        wait_for(drained, 30.0, "every byte at the device")
        assert bytes(received) == data and transport.pending == 0
    finally:
        close()


@pytest.mark.parametrize("kind", list(PAIRS))
def test_a_device_that_reads_nothing_is_a_lost_link(kind: str) -> None:
    make, size = PAIRS[kind]
    transport, _, close = make()
    try:
        transport.write(bytes(size))
        with pytest.raises(TransportError, match="could not be sent"):
            wait_for(lambda: transport.read(0.01) is None, 10.0, "the write timeout")
    finally:
        close()
