"""Byte transports to the robot's microcontroller: USB serial, UDP and TCP (no ROS).

The robot is reached over USB serial, or over Wi-Fi through a transparent serial bridge
that the host talks to with UDP datagrams or a TCP stream. All three look the same to
the driver: ``open``, ``write``, ``read(timeout)``, ``close``; a link that is gone raises
:class:`TransportError` so the driver can reconnect.

Only ``open`` may block (a TCP connect, up to ``connect_timeout``): the driver runs it off
its executor thread. ``write`` never blocks: what the device cannot take at once waits in an
outgoing buffer, sent on by every later ``write`` and ``read``, whole and in order (a partial
write is continued, never dropped or repeated); when no byte can leave for ``write_timeout``
the link is stuck: a TransportError. The buffer is not bounded here: the driver's link keeps
it short (it sends no more than the MCU's line carries, and no frame that a newer one
supersedes while ``pending`` is not 0), so it holds at most frames that must go.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import time
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from .errors import DriverError

if TYPE_CHECKING:
    import serial


READ_SIZE = 4096
MAX_DATAGRAMS_PER_READ = 256
#: What a refused connection (TCP) or an ICMP port-unreachable (UDP) means.
REFUSED_HINT = "nothing listens there: wrong host or port, or the bridge is off"
#: Bytes that cannot leave for this long [s] mean a stuck link (a bridge that reads nothing,
#: a serial port nobody drains): about 5 command periods at 50 Hz (a frame has gone stale).
WRITE_TIMEOUT_S = 0.25


class TransportError(DriverError, OSError):
    """The link to the microcontroller cannot be opened, or was lost."""


class Transport(ABC):
    """A byte stream to the microcontroller.

    Subclasses implement ``_send_some`` (write what the device takes now, without blocking);
    the base class keeps what is left for later and enforces ``write_timeout``.
    """

    write_timeout = WRITE_TIMEOUT_S
    _pending = b""  # bytes accepted by write but not yet taken by the device
    _pending_since = 0.0  # time.monotonic() of the latest progress on _pending [s]

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

    def write(self, data: bytes) -> None:
        """Send bytes without blocking: what the device cannot take now is sent by later
        calls of ``write`` or ``read``.

        Raises:
            TransportError: the link is down, or no byte could leave for ``write_timeout``.
        """
        if not self._pending:
            self._pending_since = time.monotonic()
        self._pending += data
        self.flush()

    def flush(self) -> None:
        """Send on whatever earlier writes left behind (never blocks).

        Raises:
            TransportError: the link is down, or no byte could leave for ``write_timeout``.
        """
        while self._pending:
            sent = self._send_some(self._pending)
            if sent == 0:
                break
            self._pending = self._pending[sent:]
            self._pending_since = time.monotonic()
        if self._pending and time.monotonic() - self._pending_since > self.write_timeout:
            stuck = len(self._pending)
            self._pending = b""
            raise TransportError(
                f"{self.description}: {stuck} bytes could not be sent for "
                f"{self.write_timeout:g} s (the device or bridge reads nothing)"
            )

    @property
    def pending(self) -> int:
        """Bytes written but not yet taken by the device."""
        return len(self._pending)

    @abstractmethod
    def _send_some(self, data: bytes) -> int:
        """Write a prefix of ``data`` without blocking; return its length (0: try later).

        Raises:
            TransportError: the link is down.
        """

    def _forget_pending(self) -> None:
        """Drop unsent bytes (on close: a new connection starts a new stream)."""
        self._pending = b""

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
            self._serial = serial.Serial(self.port, self.baudrate, timeout=0, write_timeout=0)
        except (OSError, ValueError) as exc:  # pyserial's SerialException is an OSError
            raise TransportError(f"cannot open {self.description}: {exc}") from exc

    def close(self) -> None:
        self._forget_pending()
        if self._serial is not None:
            with contextlib.suppress(OSError):
                self._serial.close()
            self._serial = None

    def _port(self) -> serial.Serial:
        if self._serial is None:
            raise TransportError(f"{self.description} is not open")
        return self._serial

    def _send_some(self, data: bytes) -> int:
        # os.write on pyserial's non-blocking descriptor: a full output buffer returns at
        # once (pyserial's own write spins on EAGAIN when non-blocking, or blocks)
        try:
            return os.write(self._port().fileno(), data)
        except BlockingIOError:
            return 0
        except OSError as exc:
            raise TransportError(f"{self.description}: write failed: {exc}") from exc

    def read(self, timeout: float) -> bytes:
        self.flush()
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
        except ConnectionRefusedError:
            raise TransportError(f"cannot open {self.description}: {REFUSED_HINT}") from None
        except OSError as exc:
            raise TransportError(f"cannot open {self.description}: {exc}") from exc
        self._sock = sock

    def close(self) -> None:
        self._forget_pending()
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _socket(self) -> socket.socket:
        if self._sock is None:
            raise TransportError(f"{self.description} is not open")
        return self._sock

    def _send_some(self, data: bytes) -> int:
        # non-blocking send: TCP takes a prefix, UDP the whole buffer as one datagram or
        # nothing (the decoder reassembles frames across datagrams either way)
        try:
            return self._socket().send(data)
        except BlockingIOError:
            return 0
        except ConnectionRefusedError:
            raise TransportError(f"{self.description}: {REFUSED_HINT}") from None
        except OSError as exc:
            raise TransportError(f"{self.description}: send failed: {exc}") from exc

    def read(self, timeout: float) -> bytes:
        self.flush()
        sock = self._socket()
        try:
            ready, _, _ = select.select([sock], [], [], timeout)
            if not ready:
                return b""
            data = sock.recv(READ_SIZE)
            if self.socket_type == socket.SOCK_DGRAM:
                data += self._drain(sock)
        except ConnectionRefusedError:
            raise TransportError(f"{self.description}: {REFUSED_HINT}") from None
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
