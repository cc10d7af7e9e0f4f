"""The protocol's constants, enums and messages with their payload codecs (firmware/core's
messages.c): what each frame type carries, range-checked both ways."""

from __future__ import annotations

import enum
import string
import struct
from dataclasses import dataclass
from typing import ClassVar, TypeAlias

from ..errors import DriverError

PROTOCOL_VERSION = 3
SYNC = 0xA5
TYPE_AUTH = 0x80
HEADER_LEN = 5
AUTH_LEN = 8
TAG_LEN = 4
CRC_LEN = 2
#: largest payload of any frame (MCU -> host; the host's decoder limit) [bytes]
MAX_PAYLOAD = 120
#: largest payload of a host -> MCU frame (SET_TARGETS of 16 channels is 35) [bytes]
MAX_PAYLOAD_TO_MCU = 40
#: where a PONG payload carries the MCU's boot id [bytes]
BOOT_ID_OFFSET = 12
MAX_CHANNELS = 16
KEY_LEN = 16
REPLAY_WINDOW = 32

_U8 = (0, 0xFF)
U16_RANGE = (0, 0xFFFF)
I16_RANGE = (-0x8000, 0x7FFF)
U32_RANGE = (0, 0xFFFF_FFFF)
U64_RANGE = (0, 0xFFFF_FFFF_FFFF_FFFF)


class ProtocolError(DriverError, ValueError):
    """A message or frame that cannot be put on the wire, or a payload that does not parse."""


class FieldRangeError(ProtocolError):
    """A field value outside the range of its wire type or of the protocol."""


class PayloadError(ProtocolError):
    """A payload whose length or content does not match its message layout."""


class AuthKeyError(ProtocolError):
    """A key that is not a 128-bit SipHash key."""


class MsgType(enum.IntEnum):
    """Message types; 0x01-0x3F go to the MCU, 0x41-0x7F come from it."""

    PING = 0x01
    SET_TARGETS = 0x02
    CONFIG_CHANNEL = 0x03
    CONFIG_SYSTEM = 0x04
    ENABLE = 0x05
    ESTOP = 0x06
    CONFIG_FEEDBACK = 0x07
    PONG = 0x41
    TELEMETRY = 0x42
    ERROR = 0x43


class Direction(enum.IntEnum):
    """Direction byte mixed into the MAC, so frames cannot be reflected to their sender."""

    TO_MCU = 0
    TO_HOST = 1

    @property
    def max_payload(self) -> int:
        """Largest payload of a frame in this direction [bytes]."""
        return MAX_PAYLOAD_TO_MCU if self is Direction.TO_MCU else MAX_PAYLOAD

    @property
    def opposite(self) -> Direction:
        """The other direction."""
        return Direction.TO_HOST if self is Direction.TO_MCU else Direction.TO_MCU

    def sends(self, msg_type: int) -> bool:
        """True if msg_type (without the auth bit) is one of this direction's types."""
        return 0x01 <= msg_type <= 0x3F if self is Direction.TO_MCU else 0x41 <= msg_type <= 0x7F


class Flag(enum.IntFlag):
    """Telemetry status flags."""

    ENABLED = 1 << 0
    ESTOP = 1 << 1
    WATCHDOG_TRIPPED = 1 << 2
    LIMIT_HIT = 1 << 3
    AUTHENTICATED = 1 << 4
    WATCHDOG_LIMP = 1 << 5
    MOVING = 1 << 6


class ErrorCode(enum.IntEnum):
    """Codes of the firmware's error report."""

    UNKNOWN_TYPE = 1
    BAD_PAYLOAD = 2
    NOT_ARMED = 3


class WatchdogAction(enum.IntEnum):
    """What the firmware does when commands stop: keep the last position or cut pulses."""

    HOLD = 0
    LIMP = 1


def check_key(key: bytes | None) -> None:
    """Refuse a shared key of authenticated mode that is not KEY_LEN bytes (None: plain mode).

    Raises:
        AuthKeyError: a key of another length (the message does not repeat the key).
    """
    if key is not None and len(key) != KEY_LEN:
        raise AuthKeyError(f"key must be {KEY_LEN} bytes (128 bits), got {len(key)}")


def parse_key(text: str) -> bytes | None:
    """The shared key of authenticated mode from its 32 hex digits; None for "" (plain mode).

    Raises:
        AuthKeyError: anything but 32 hex digits (the message does not repeat the key).
    """
    text = text.strip()
    if not text:
        return None
    if len(text) != 2 * KEY_LEN:
        raise AuthKeyError(
            f"the key must be {2 * KEY_LEN} hex digits (128 bits), got {len(text)} characters"
        )
    if any(c not in string.hexdigits for c in text):
        raise AuthKeyError(
            f"the key must be {2 * KEY_LEN} hex digits (128 bits), got other characters"
        )
    return bytes.fromhex(text)


def checked_field(name: str, value: int, bounds: tuple[int, int]) -> int:
    lo, hi = bounds
    if not lo <= value <= hi:
        raise FieldRangeError(f"{name} must be in [{lo}, {hi}], got {value!r}")
    return value


def _expect_len(msg: str, data: bytes, length: int) -> None:
    if len(data) != length:
        raise PayloadError(f"{msg} payload must be {length} bytes, got {len(data)}")


@dataclass(frozen=True)
class Ping:
    """Host -> MCU: ask for a pong (round-trip time and clock offset).

    Attributes:
        host_time_us: the host's clock when sending [us]; echoed in the pong.
    """

    TYPE: ClassVar[MsgType] = MsgType.PING
    host_time_us: int

    def payload(self) -> bytes:
        """Encode the payload (8 bytes)."""
        return struct.pack("<Q", checked_field("host_time_us", self.host_time_us, U64_RANGE))

    @classmethod
    def from_payload(cls, data: bytes) -> Ping:
        """Decode a payload; raises PayloadError if it does not fit."""
        _expect_len("ping", data, 8)
        return cls(*struct.unpack("<Q", data))


@dataclass(frozen=True)
class Pong:
    """MCU -> host: answer to a ping.

    Attributes:
        host_time_us: the ping's host_time_us, echoed [us].
        mcu_time_us: the MCU's microsecond clock when answering (wraps at 2^32) [us].
        boot_id: the MCU's boot id (its EEPROM boot counter, never 0), which every MAC of
            this boot mixes in; a new id means the MCU restarted.
    """

    TYPE: ClassVar[MsgType] = MsgType.PONG
    host_time_us: int
    mcu_time_us: int
    boot_id: int

    def payload(self) -> bytes:
        """Encode the payload (16 bytes)."""
        return struct.pack(
            "<QII",
            checked_field("host_time_us", self.host_time_us, U64_RANGE),
            checked_field("mcu_time_us", self.mcu_time_us, U32_RANGE),
            checked_field("boot_id", self.boot_id, U32_RANGE),
        )

    @classmethod
    def from_payload(cls, data: bytes) -> Pong:
        """Decode a payload; raises PayloadError if it does not fit."""
        _expect_len("pong", data, 16)
        return cls(*struct.unpack("<QII", data))


@dataclass(frozen=True)
class SetTargets:
    """Host -> MCU: joint targets for channels first .. first + len(targets_cdeg) - 1.

    Attributes:
        targets_cdeg: joint angles [cdeg], 1 to 16 of them.
        duration_ms: time to interpolate linearly from the current command [ms]; 0: at once.
        first: channel of targets_cdeg[0].
    """

    TYPE: ClassVar[MsgType] = MsgType.SET_TARGETS
    targets_cdeg: tuple[int, ...]
    duration_ms: int = 0
    first: int = 0

    def payload(self) -> bytes:
        """Encode the payload (3 + 2 * n bytes)."""
        n = len(self.targets_cdeg)
        if not 1 <= n <= MAX_CHANNELS - checked_field("first", self.first, (0, MAX_CHANNELS - 1)):
            raise FieldRangeError(
                f"targets_cdeg must hold 1..{MAX_CHANNELS - self.first} values for first="
                f"{self.first}, got {n}"
            )
        for i, t in enumerate(self.targets_cdeg):
            checked_field(f"targets_cdeg[{i}]", t, I16_RANGE)
        duration = checked_field("duration_ms", self.duration_ms, U16_RANGE)
        return struct.pack(f"<HB{n}h", duration, self.first, *self.targets_cdeg)

    @classmethod
    def from_payload(cls, data: bytes) -> SetTargets:
        """Decode a payload; raises PayloadError if it does not fit."""
        n, odd = divmod(len(data) - 3, 2)
        if len(data) < 5 or odd:
            raise PayloadError(f"set_targets payload must be 3 + 2n bytes, got {len(data)}")
        duration, first = struct.unpack_from("<HB", data)
        if first + n > MAX_CHANNELS:
            raise PayloadError(f"set_targets addresses channels {first}..{first + n - 1}")
        return cls(struct.unpack_from(f"<{n}h", data, 3), duration, first)


@dataclass(frozen=True)
class ConfigChannel:
    """Host -> MCU: calibration of one servo channel (PROTOCOL.md, "Calibration").

    Attributes:
        channel: 0..15.
        direction: +1 or -1, sign of servo angle per joint angle.
        zero_offset_cdeg: servo angle at joint angle 0 [cdeg].
        min_cdeg: lower joint limit [cdeg].
        max_cdeg: upper joint limit [cdeg].
        pulse_min_us: shortest pulse [us], 500..2500.
        pulse_max_us: longest pulse [us], 500..2500; the range's centre is servo angle 0.
        travel_cdeg: servo angle swept by the pulse range [cdeg].
    """

    TYPE: ClassVar[MsgType] = MsgType.CONFIG_CHANNEL
    channel: int
    direction: int = 1
    zero_offset_cdeg: int = 0
    min_cdeg: int = -9000
    max_cdeg: int = 9000
    pulse_min_us: int = 500
    pulse_max_us: int = 2500
    travel_cdeg: int = 18000

    def payload(self) -> bytes:
        """Encode the payload (14 bytes)."""
        if self.direction not in (1, -1):
            raise FieldRangeError(f"direction must be +1 or -1, got {self.direction!r}")
        return struct.pack(
            "<BbhhhHHH",
            checked_field("channel", self.channel, (0, MAX_CHANNELS - 1)),
            self.direction,
            checked_field("zero_offset_cdeg", self.zero_offset_cdeg, I16_RANGE),
            checked_field("min_cdeg", self.min_cdeg, I16_RANGE),
            checked_field("max_cdeg", self.max_cdeg, I16_RANGE),
            checked_field("pulse_min_us", self.pulse_min_us, U16_RANGE),
            checked_field("pulse_max_us", self.pulse_max_us, U16_RANGE),
            checked_field("travel_cdeg", self.travel_cdeg, U16_RANGE),
        )

    @classmethod
    def from_payload(cls, data: bytes) -> ConfigChannel:
        """Decode a payload; raises PayloadError if it does not fit."""
        _expect_len("config_channel", data, 14)
        return cls(*struct.unpack("<BbhhhHHH", data))


#: largest ADC reading (10-bit conversions) [counts]
ADC_MAX = 1023


@dataclass(frozen=True)
class ConfigFeedback:
    """Host -> MCU: a channel's analog feedback and its two-point calibration, or feedback
    off (PROTOCOL.md, "Feedback").

    Attributes:
        channel: 0..15; its feedback is read on ADC input `channel`.
        on: False switches the channel's feedback off (its telemetry angle is the estimate);
            the other fields are then not sent.
        adc_lo: ADC reading at angle_lo_cdeg [counts of 1/1024 of the reference], < adc_hi.
        angle_lo_cdeg: joint angle at adc_lo [cdeg].
        adc_hi: ADC reading at angle_hi_cdeg [counts], <= 1023.
        angle_hi_cdeg: joint angle at adc_hi [cdeg], != angle_lo_cdeg.
    """

    TYPE: ClassVar[MsgType] = MsgType.CONFIG_FEEDBACK
    channel: int
    on: bool = True
    adc_lo: int = 0
    angle_lo_cdeg: int = -9000
    adc_hi: int = ADC_MAX
    angle_hi_cdeg: int = 9000

    def payload(self) -> bytes:
        """Encode the payload (9 bytes, 1 when off)."""
        channel = checked_field("channel", self.channel, (0, MAX_CHANNELS - 1))
        if not self.on:
            return bytes([channel])
        return struct.pack(
            "<BHhHh",
            channel,
            checked_field("adc_lo", self.adc_lo, U16_RANGE),
            checked_field("angle_lo_cdeg", self.angle_lo_cdeg, I16_RANGE),
            checked_field("adc_hi", self.adc_hi, U16_RANGE),
            checked_field("angle_hi_cdeg", self.angle_hi_cdeg, I16_RANGE),
        )

    @classmethod
    def from_payload(cls, data: bytes) -> ConfigFeedback:
        """Decode a payload; raises PayloadError if it does not fit."""
        if len(data) == 1:
            return cls(data[0], on=False)
        _expect_len("config_feedback", data, 9)
        channel, adc_lo, angle_lo, adc_hi, angle_hi = struct.unpack("<BHhHh", data)
        return cls(channel, True, adc_lo, angle_lo, adc_hi, angle_hi)


@dataclass(frozen=True)
class ConfigSystem:
    """Host -> MCU: watchdog, telemetry rate and servo model.

    Attributes:
        watchdog_ms: command timeout [ms]; 0 disables the watchdog.
        watchdog_action: hold the last position or go limp on timeout.
        telemetry_period_ms: telemetry period [ms]; 0 stops telemetry.
        servo_speed_cdeg_s: slew rate of the servo model behind the angle estimate [cdeg/s].
    """

    TYPE: ClassVar[MsgType] = MsgType.CONFIG_SYSTEM
    watchdog_ms: int = 500
    watchdog_action: WatchdogAction = WatchdogAction.HOLD
    telemetry_period_ms: int = 20
    servo_speed_cdeg_s: int = 60000

    def payload(self) -> bytes:
        """Encode the payload (7 bytes)."""
        return struct.pack(
            "<HBHH",
            checked_field("watchdog_ms", self.watchdog_ms, U16_RANGE),
            checked_field("watchdog_action", int(self.watchdog_action), (0, 1)),
            checked_field("telemetry_period_ms", self.telemetry_period_ms, U16_RANGE),
            checked_field("servo_speed_cdeg_s", self.servo_speed_cdeg_s, U16_RANGE),
        )

    @classmethod
    def from_payload(cls, data: bytes) -> ConfigSystem:
        """Decode a payload; raises PayloadError if it does not fit."""
        _expect_len("config_system", data, 7)
        watchdog, action, period, speed = struct.unpack("<HBHH", data)
        if action > 1:
            raise PayloadError(f"watchdog_action must be 0 or 1, got {action}")
        return cls(watchdog, WatchdogAction(action), period, speed)


@dataclass(frozen=True)
class Enable:
    """Host -> MCU: enable (and clear an e-stop or watchdog trip) or disable the pulses."""

    TYPE: ClassVar[MsgType] = MsgType.ENABLE
    enable: bool

    def payload(self) -> bytes:
        """Encode the payload (1 byte)."""
        return bytes([1 if self.enable else 0])

    @classmethod
    def from_payload(cls, data: bytes) -> Enable:
        """Decode a payload; raises PayloadError if it does not fit."""
        _expect_len("enable", data, 1)
        if data[0] > 1:
            raise PayloadError(f"enable must be 0 or 1, got {data[0]}")
        return cls(data[0] == 1)


@dataclass(frozen=True)
class Estop:
    """Host -> MCU: stop all pulses at once; latched until Enable(True)."""

    TYPE: ClassVar[MsgType] = MsgType.ESTOP

    def payload(self) -> bytes:
        """Encode the (empty) payload."""
        return b""

    @classmethod
    def from_payload(cls, data: bytes) -> Estop:
        """Decode a payload; raises PayloadError if it does not fit."""
        _expect_len("estop", data, 0)
        return cls()


@dataclass(frozen=True)
class Counters:
    """The firmware's frame counters (16-bit, wrapping); each frame or byte counts in one.

    Attributes:
        frames_ok: frames acted on (known type, valid payload).
        bad_crc: candidate frames whose CRC did not match.
        bad_length: candidates whose LEN exceeds the direction's maximum payload.
        bad_auth: frames with a missing, unexpected or wrong MAC.
        replayed: authenticated frames whose counter the replay window refused.
        bad_payload: frames of an unknown type or with a payload that does not fit it.
        rx_dropped: received bytes lost to a full receive buffer (UART overrun).
        rx_timeouts: incomplete candidates abandoned after the inter-frame timeout.
        tx_skipped: telemetry reports skipped to keep room for replies.
        tx_dropped: replies (PONG, ERROR) dropped because their queue was full.
    """

    frames_ok: int = 0
    bad_crc: int = 0
    bad_length: int = 0
    bad_auth: int = 0
    replayed: int = 0
    bad_payload: int = 0
    rx_dropped: int = 0
    rx_timeouts: int = 0
    tx_skipped: int = 0
    tx_dropped: int = 0


_COUNTER_NAMES = tuple(Counters.__dataclass_fields__)
_N_COUNTERS = len(_COUNTER_NAMES)
#: telemetry payload bytes before the per-channel arrays; the count byte is the last
_TELEMETRY_FIXED = 11 + 2 * _N_COUNTERS


@dataclass(frozen=True)
class Telemetry:
    """MCU -> host: periodic state report.

    Attributes:
        mcu_time_us: MCU clock at the report [us], wraps at 2^32.
        flags: status flags.
        limit_mask: channels whose last target was clamped to a joint limit.
        counters: receiver counters.
        angles_cdeg: joint angles [cdeg], one per channel: measured by the channel's
            feedback where its feedback_mask bit is set, else estimated (servo model).
        pulses_us: commanded pulse widths [us], 0 where no pulses are sent.
        feedback_mask: bit i set: angles_cdeg[i] is measured (sent after limit_mask).
    """

    TYPE: ClassVar[MsgType] = MsgType.TELEMETRY
    mcu_time_us: int
    flags: Flag
    limit_mask: int
    counters: Counters
    angles_cdeg: tuple[int, ...]
    pulses_us: tuple[int, ...]
    feedback_mask: int = 0

    def measured(self, channel: int) -> bool:
        """Whether a channel's angle is measured (else it is the estimate)."""
        return bool(self.feedback_mask >> channel & 1)

    def payload(self) -> bytes:
        """Encode the payload (31 + 4 * n bytes)."""
        n = len(self.angles_cdeg)
        if n != len(self.pulses_us) or n > MAX_CHANNELS:
            raise FieldRangeError(
                f"angles_cdeg and pulses_us must have the same length <= {MAX_CHANNELS}, "
                f"got {n} and {len(self.pulses_us)}"
            )
        counts = [checked_field(k, getattr(self.counters, k), U16_RANGE) for k in _COUNTER_NAMES]
        for i, a in enumerate(self.angles_cdeg):
            checked_field(f"angles_cdeg[{i}]", a, I16_RANGE)
        for i, p in enumerate(self.pulses_us):
            checked_field(f"pulses_us[{i}]", p, U16_RANGE)
        return struct.pack(
            f"<IHHH{_N_COUNTERS}HB{n}h{n}H",
            checked_field("mcu_time_us", self.mcu_time_us, U32_RANGE),
            checked_field("flags", int(self.flags), U16_RANGE),
            checked_field("limit_mask", self.limit_mask, U16_RANGE),
            checked_field("feedback_mask", self.feedback_mask, U16_RANGE),
            *counts,
            n,
            *self.angles_cdeg,
            *self.pulses_us,
        )

    @classmethod
    def from_payload(cls, data: bytes) -> Telemetry:
        """Decode a payload; raises PayloadError if it does not fit."""
        n = data[_TELEMETRY_FIXED - 1] if len(data) >= _TELEMETRY_FIXED else 0
        if len(data) != _TELEMETRY_FIXED + 4 * n or n > MAX_CHANNELS:
            raise PayloadError(f"telemetry payload of {len(data)} bytes does not fit its count")
        fields = struct.unpack(f"<IHHH{_N_COUNTERS}HB{n}h{n}H", data)
        arrays = 5 + _N_COUNTERS
        return cls(
            fields[0],
            Flag(fields[1]),
            fields[2],
            Counters(*fields[4 : 4 + _N_COUNTERS]),
            tuple(fields[arrays : arrays + n]),
            tuple(fields[arrays + n :]),
            fields[3],
        )


@dataclass(frozen=True)
class ErrorReport:
    """MCU -> host: a frame that passed CRC/MAC checks but was refused.

    Attributes:
        code: why.
        msg_type: type of the refused frame.
        seq: sequence number of the refused frame.
    """

    TYPE: ClassVar[MsgType] = MsgType.ERROR
    code: int
    msg_type: int
    seq: int

    def payload(self) -> bytes:
        """Encode the payload (4 bytes)."""
        return struct.pack(
            "<BBH",
            checked_field("code", self.code, _U8),
            checked_field("msg_type", self.msg_type, _U8),
            checked_field("seq", self.seq, U16_RANGE),
        )

    @classmethod
    def from_payload(cls, data: bytes) -> ErrorReport:
        """Decode a payload; raises PayloadError if it does not fit."""
        _expect_len("error", data, 4)
        return cls(*struct.unpack("<BBH", data))


Message: TypeAlias = (
    Ping
    | Pong
    | SetTargets
    | ConfigChannel
    | ConfigFeedback
    | ConfigSystem
    | Enable
    | Estop
    | Telemetry
    | ErrorReport
)

MESSAGE_CLASSES: dict[int, type[Message]] = {
    cls.TYPE: cls
    for cls in (
        Ping,
        Pong,
        SetTargets,
        ConfigChannel,
        ConfigFeedback,
        ConfigSystem,
        Enable,
        Estop,
        Telemetry,
        ErrorReport,
    )
}
