"""Byte transports to the robot's microcontroller: USB serial, UDP and TCP (no ROS).

The robot is reached over USB serial, or over Wi-Fi through a transparent serial bridge
that the host talks to with UDP datagrams or a TCP stream. All three look the same to
the driver: ``open``, ``write``, ``read(timeout)``, ``close``; a link that is gone raises
:class:`TransportError` so the driver can reconnect.
"""

from __future__ import annotations

import contextlib
import select
import socket
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import serial


READ_SIZE = 4096
MAX_DATAGRAMS_PER_READ = 256


class TransportError(OSError):
    """The link to the microcontroller cannot be opened, or was lost."""


class Transport(ABC):
    """A byte stream to the microcontroller."""

    @property
    @abstractmethod
    def description(self) -> str:
        """Where the transport goes, for logs (e.g. ``serial /dev/ttyACM0 @ 115200``)."""

    @abstractmethod
    def open(self) -> None:
        """Open the link; raises TransportError if it cannot be opened."""

    @abstractmethod
    def close(self) -> None:
        """Close the link (idempotent)."""

    @abstractmethod
    def write(self, data: bytes) -> None:
        """Send bytes; raises TransportError if the link is down."""

    @abstractmethod
    def read(self, timeout: float) -> bytes:
        """Bytes received within ``timeout`` [s], b"" if none.

        Raises:
            TransportError: the link is down.
        """

    def __enter__(self) -> Transport:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SerialTransport(Transport):
    """USB serial (pyserial), e.g. ``/dev/ttyACM0`` or an emulator's pty."""

    def __init__(self, port: str, baudrate: int = 115200) -> None:
        self.port = port
        self.baudrate = baudrate
        self._serial: serial.Serial | None = None

    @property
    def description(self) -> str:
        return f"serial {self.port} @ {self.baudrate}"

    def open(self) -> None:
        import serial  # here: a graph that only names the transports needs no pyserial

        try:
            self._serial = serial.Serial(self.port, self.baudrate, timeout=0, write_timeout=1.0)
        except (OSError, ValueError) as exc:  # pyserial's SerialException is an OSError
            raise TransportError(f"cannot open {self.description}: {exc}") from exc

    def close(self) -> None:
        if self._serial is not None:
            with contextlib.suppress(OSError):
                self._serial.close()
            self._serial = None

    def _port(self) -> serial.Serial:
        if self._serial is None:
            raise TransportError(f"{self.description} is not open")
        return self._serial

    def write(self, data: bytes) -> None:
        try:
            self._port().write(data)
        except OSError as exc:  # pyserial's SerialException included
            raise TransportError(f"{self.description}: write failed: {exc}") from exc

    def read(self, timeout: float) -> bytes:
        port = self._port()
        try:
            ready, _, _ = select.select([port.fileno()], [], [], timeout)
            if not ready:
                return b""
            data = port.read(port.in_waiting or 1)
        except (OSError, ValueError) as exc:  # pyserial's SerialException is an OSError
            raise TransportError(f"{self.description}: read failed: {exc}") from exc
        if not data:  # readable but empty: the device went away
            raise TransportError(f"{self.description}: device disconnected")
        return bytes(data)


class _SocketTransport(Transport):
    """Shared socket plumbing of UDP and TCP."""

    kind = "socket"
    socket_type = socket.SOCK_STREAM

    def __init__(self, host: str, port: int, connect_timeout: float = 2.0) -> None:
        self.host = host
        self.port = port
        self.connect_timeout = connect_timeout
        self._sock: socket.socket | None = None

    @property
    def description(self) -> str:
        return f"{self.kind} {self.host}:{self.port}"

    def open(self) -> None:
        try:
            infos = socket.getaddrinfo(self.host, self.port, type=self.socket_type)
            family, stype, proto, _, address = infos[0]
            sock = socket.socket(family, stype, proto)
            sock.settimeout(self.connect_timeout)
            sock.connect(address)  # for UDP: fixes the peer, so only its datagrams arrive
            sock.setblocking(False)
        except OSError as exc:
            raise TransportError(f"cannot open {self.description}: {exc}") from exc
        self._sock = sock

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _socket(self) -> socket.socket:
        if self._sock is None:
            raise TransportError(f"{self.description} is not open")
        return self._sock

    def write(self, data: bytes) -> None:
        try:
            self._socket().sendall(data)
        except OSError as exc:
            raise TransportError(f"{self.description}: send failed: {exc}") from exc

    def read(self, timeout: float) -> bytes:
        sock = self._socket()
        try:
            ready, _, _ = select.select([sock], [], [], timeout)
            if not ready:
                return b""
            data = sock.recv(READ_SIZE)
            if self.socket_type == socket.SOCK_DGRAM:
                data += self._drain(sock)
        except OSError as exc:
            raise TransportError(f"{self.description}: receive failed: {exc}") from exc
        if not data and self.socket_type == socket.SOCK_STREAM:
            raise TransportError(f"{self.description}: connection closed by the peer")
        return data

    @staticmethod
    def _drain(sock: socket.socket) -> bytes:
        """Every datagram already queued (a bridge may cut one frame into several), so a
        reader polling at a fixed rate never falls behind and overflows the socket buffer."""
        chunks = []
        for _ in range(MAX_DATAGRAMS_PER_READ):
            try:
                chunks.append(sock.recv(READ_SIZE))
            except BlockingIOError:
                break
        return b"".join(chunks)


class UdpTransport(_SocketTransport):
    """UDP datagrams to a Wi-Fi-to-serial bridge (frames may span datagrams)."""

    kind = "udp"
    socket_type = socket.SOCK_DGRAM


class TcpTransport(_SocketTransport):
    """A TCP stream to a Wi-Fi-to-serial bridge."""

    kind = "tcp"
    socket_type = socket.SOCK_STREAM


TRANSPORTS = ("serial", "udp", "tcp")


def make_transport(
    kind: str, port: str, host: str = "127.0.0.1", baudrate: int = 115200
) -> Transport:
    """A transport by name.

    Args:
        kind: "serial", "udp" or "tcp".
        port: the serial device (serial) or the bridge's port number (udp, tcp).
        host: the bridge's address (udp, tcp).
        baudrate: serial speed [baud].

    Raises:
        TransportError: unknown kind, or a port that is not a number for udp/tcp.
    """
    if kind == "serial":
        return SerialTransport(port, baudrate)
    if kind in ("udp", "tcp"):
        try:
            number = int(port)
        except ValueError:
            raise TransportError(f"{kind} port must be a number, got {port!r}") from None
        if not 0 < number < 65536:
            raise TransportError(f"{kind} port must be 1..65535, got {number}")
        return UdpTransport(host, number) if kind == "udp" else TcpTransport(host, number)
    raise TransportError(f"unknown transport {kind!r}; use one of {', '.join(TRANSPORTS)}")
