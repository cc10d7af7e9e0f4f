"""Serial (over a pty pair), UDP and TCP transports on 127.0.0.1: data both ways, timeouts,
and a lost link reported as TransportError (never a hang, never a silent drop)."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from snake_driver.transport import TransportError, make_transport


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
    with pytest.raises(TransportError, match=f"cannot open tcp 127.0.0.1:{port}"):
        make_transport("tcp", str(port)).open()


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
