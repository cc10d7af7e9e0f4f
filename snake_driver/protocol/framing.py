"""Frames on the wire (firmware/core's protocol.c): encoding with SEQ, COUNTER and TAG, and a
streaming decoder that resynchronises on garbage, checks CRC and MAC, rejects replays and
counts whatever it discards.

The MAC mixes in the MCU's boot id (PROTOCOL.md, "Authenticated mode"): every frame of a
boot uses that boot's id, except PING (always 0: the host may not know the id yet) and
PONG (the id it carries), so frames recorded in one boot never verify in another."""

from __future__ import annotations

import hmac
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import overload

from .crc16 import crc16
from .messages import (
    AUTH_LEN,
    BOOT_ID_OFFSET,
    CRC_LEN,
    HEADER_LEN,
    MESSAGE_CLASSES,
    REPLAY_WINDOW,
    SYNC,
    TAG_LEN,
    TYPE_AUTH,
    U16_RANGE,
    U32_RANGE,
    Direction,
    FieldRangeError,
    Message,
    MsgType,
    PayloadError,
    ProtocolError,
    check_key,
    checked_field,
)
from .siphash import siphash24


@overload
def mac_boot_id(direction: Direction, msg_type: int, payload: bytes, boot_id: int) -> int: ...


@overload
def mac_boot_id(
    direction: Direction, msg_type: int, payload: bytes, boot_id: None
) -> int | None: ...


def mac_boot_id(
    direction: Direction, msg_type: int, payload: bytes, boot_id: int | None
) -> int | None:
    """The boot id a frame's MAC mixes in: 0 for a PING to the MCU, the carried id for a PONG
    from it (0 if its payload is too short to carry one), else boot_id (None: not known)."""
    if direction is Direction.TO_MCU and msg_type == MsgType.PING:
        return 0
    if direction is Direction.TO_HOST and msg_type == MsgType.PONG:
        carried = payload[BOOT_ID_OFFSET : BOOT_ID_OFFSET + 4]
        return int.from_bytes(carried, "little") if len(carried) == 4 else 0
    return boot_id


def _tag(key: bytes, direction: Direction, boot_id: int, covered: bytes) -> bytes:
    """TAG over DIR || BOOT_ID || frame[1:] up to and including COUNTER (covered starts at
    SYNC)."""
    m = bytes([direction]) + boot_id.to_bytes(4, "little") + covered[1:]
    return (siphash24(key, m) & 0xFFFF_FFFF).to_bytes(TAG_LEN, "little")


def encode_frame(
    msg_type: int,
    payload: bytes,
    seq: int,
    *,
    key: bytes | None = None,
    counter: int = 0,
    direction: Direction = Direction.TO_MCU,
    boot_id: int = 0,
) -> bytes:
    """Frame a payload.

    Args:
        msg_type: message type (without the auth bit).
        payload: 0..40 bytes to the MCU, 0..120 to the host.
        seq: 16-bit sequence number.
        key: 16-byte key for an authenticated frame, or None for a plain one.
        counter: 32-bit replay counter of an authenticated frame.
        direction: the frame's direction (mixed into the MAC).
        boot_id: the MCU's boot id (mixed into the MAC; see :func:`mac_boot_id` for the
            PING and PONG exceptions).

    Returns:
        The frame's bytes.

    Raises:
        FieldRangeError: for a value that does not fit its field.
        AuthKeyError: for a key that is not 16 bytes.
    """
    checked_field("msg_type", msg_type, (0, 0x7F))
    checked_field("payload length", len(payload), (0, direction.max_payload))
    type_byte = msg_type | (TYPE_AUTH if key is not None else 0)
    frame = bytes([SYNC, len(payload), type_byte]) + struct.pack(
        "<H", checked_field("seq", seq, U16_RANGE)
    )
    frame += payload
    if key is not None:
        frame += struct.pack("<I", checked_field("counter", counter, U32_RANGE))
        mac_id = mac_boot_id(
            direction, msg_type, payload, checked_field("boot_id", boot_id, U32_RANGE)
        )
        frame += _tag(key, direction, mac_id, frame)
    return frame + struct.pack("<H", crc16(frame[1:]))


class Encoder:
    """Frames messages with running sequence numbers (and counters when keyed).

    Args:
        key: 16-byte shared key for authenticated mode, or None.
        direction: direction of the frames this side sends.
        seq: sequence number of the first frame.
        counter: replay counter of the first authenticated frame; must exceed every counter
            this key has used in this direction since the receiver started.
        boot_id: the MCU's boot id to MAC with (settable attribute; PING frames always use 0).
    """

    def __init__(
        self,
        key: bytes | None = None,
        direction: Direction = Direction.TO_MCU,
        seq: int = 0,
        counter: int = 0,
        boot_id: int = 0,
    ) -> None:
        check_key(key)
        self.key = key
        self.direction = direction
        self.seq = seq
        self.counter = counter
        self.boot_id = boot_id

    def encode(self, msg: Message) -> bytes:
        """Encode msg as the next frame."""
        if self.key is not None and self.counter > U32_RANGE[1]:
            raise FieldRangeError("replay counter exhausted: change the key")
        frame = encode_frame(
            msg.TYPE,
            msg.payload(),
            self.seq,
            key=self.key,
            counter=self.counter,
            direction=self.direction,
            boot_id=self.boot_id,
        )
        self.seq = (self.seq + 1) & 0xFFFF
        if self.key is not None:
            self.counter += 1
        return frame


@dataclass(frozen=True)
class Frame:
    """A received frame that passed CRC and, when keyed, MAC and replay checks."""

    msg_type: int
    seq: int
    payload: bytes
    counter: int | None = None

    def message(self) -> Message:
        """Decode the payload into its message.

        Raises:
            PayloadError: for an unknown type or a payload that does not fit it.
        """
        cls = MESSAGE_CLASSES.get(self.msg_type)
        if cls is None:
            raise PayloadError(f"unknown message type 0x{self.msg_type:02x}")
        return cls.from_payload(self.payload)


class ReplayWindow:
    """Accepts each counter once, and only within REPLAY_WINDOW behind the highest seen."""

    def __init__(self) -> None:
        self.highest: int | None = None
        self._seen = 0

    def accept(self, counter: int) -> bool:
        """True (and remembered) if counter is new and recent enough."""
        if self.highest is None or counter > self.highest:
            shift = REPLAY_WINDOW if self.highest is None else counter - self.highest
            self._seen = 1 if shift >= REPLAY_WINDOW else ((self._seen << shift) | 1)
            self._seen &= (1 << REPLAY_WINDOW) - 1
            self.highest = counter
            return True
        age = self.highest - counter
        if age >= REPLAY_WINDOW or self._seen >> age & 1:
            return False
        self._seen |= 1 << age
        return True


@dataclass
class DecoderStats:
    """What a Decoder accepted and discarded.

    ``echoed`` counts CRC-valid frames of the receiver's own sending direction (the host
    receiving host -> MCU types: its own bytes came back, e.g. from a port that echoes);
    ``unverified`` counts authenticated frames that could not be checked because the boot id
    was not known yet (``Decoder.boot_id`` None). Neither is returned.
    """

    frames_ok: int = 0
    bad_crc: int = 0
    bad_length: int = 0
    bad_auth: int = 0
    replayed: int = 0
    bad_payload: int = 0
    discarded_bytes: int = 0
    seq_gaps: int = 0
    echoed: int = 0
    unverified: int = 0


class Decoder:
    """Streaming frame decoder: feed bytes, get frames; resynchronises on the next sync byte.

    Args:
        key: 16-byte key for authenticated mode (plain frames are then rejected), or None
            (authenticated frames are then rejected: they cannot be checked).
        direction: direction of the frames received (sets the maximum payload).
        boot_id: the MCU's boot id to verify MACs with (settable attribute; a PONG is
            verified with the id it carries, a PING with 0). None: not known yet (a host
            before its first pong): the other authenticated frames count as ``unverified``.

    Attributes:
        stats: counters of accepted and discarded frames, and of gaps in sequence numbers.
        replay: the replay window of authenticated mode.
    """

    def __init__(
        self,
        key: bytes | None = None,
        direction: Direction = Direction.TO_HOST,
        boot_id: int | None = 0,
    ) -> None:
        check_key(key)
        self.key = key
        self.direction = direction
        self.boot_id = boot_id
        self.stats = DecoderStats()
        self.replay = ReplayWindow()
        self._buf = bytearray()
        self._last_seq: int | None = None

    def feed(self, data: Iterable[int]) -> list[Frame]:
        """Add received bytes; return the frames completed by them. Never raises."""
        self._buf.extend(data)
        frames: list[Frame] = []
        buf = self._buf
        while buf:
            if buf[0] != SYNC:
                skip = buf.find(SYNC)
                skip = len(buf) if skip < 0 else skip
                self.stats.discarded_bytes += skip
                del buf[:skip]
                continue
            if len(buf) < 3:
                break
            if buf[1] > self.direction.max_payload:
                self.stats.bad_length += 1
                self._drop_sync()
                continue
            n = HEADER_LEN + buf[1] + CRC_LEN + (AUTH_LEN if buf[2] & TYPE_AUTH else 0)
            if len(buf) < n:
                break
            frame = bytes(buf[:n])
            if crc16(frame[1:-CRC_LEN]) != int.from_bytes(frame[-CRC_LEN:], "little"):
                self.stats.bad_crc += 1
                self._drop_sync()
                continue
            del buf[:n]
            accepted = self._check(frame)
            if accepted is not None:
                frames.append(accepted)
        return frames

    def feed_messages(self, data: Iterable[int]) -> list[tuple[Frame, Message]]:
        """Like feed, and decode each frame; undecodable ones count as bad_payload."""
        out: list[tuple[Frame, Message]] = []
        for frame in self.feed(data):
            try:
                out.append((frame, frame.message()))
            except ProtocolError:
                self.stats.bad_payload += 1
        return out

    def _drop_sync(self) -> None:
        """Discard a sync byte that did not start a good frame; rescan after it."""
        self.stats.discarded_bytes += 1
        del self._buf[:1]

    def _check(self, frame: bytes) -> Frame | None:
        msg_type = frame[2] & ~TYPE_AUTH & 0xFF
        if self.direction.opposite.sends(msg_type):  # our own frames, echoed back
            self.stats.echoed += 1
            return None
        authenticated = bool(frame[2] & TYPE_AUTH)
        if authenticated != (self.key is not None):
            self.stats.bad_auth += 1
            return None
        seq = int.from_bytes(frame[3:5], "little")
        payload = frame[HEADER_LEN : HEADER_LEN + frame[1]]
        counter = None
        if self.key is not None:
            covered = frame[: -TAG_LEN - CRC_LEN]
            tag = frame[-TAG_LEN - CRC_LEN : -CRC_LEN]
            boot_id = mac_boot_id(self.direction, msg_type, payload, self.boot_id)
            if boot_id is None:
                self.stats.unverified += 1
                return None
            if not hmac.compare_digest(_tag(self.key, self.direction, boot_id, covered), tag):
                self.stats.bad_auth += 1
                return None
            counter = int.from_bytes(covered[-4:], "little")
            if not self.replay.accept(counter):
                self.stats.replayed += 1
                return None
        ahead = 1 if self._last_seq is None else (seq - self._last_seq) & 0xFFFF
        if 0 < ahead < 0x8000:  # older or repeated numbers are not gaps
            self.stats.seq_gaps += ahead - 1
            self._last_seq = seq
        self.stats.frames_ok += 1
        return Frame(msg_type, seq, payload, counter)
