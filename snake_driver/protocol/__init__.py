"""Wire protocol between the host and the snake firmware (specified in firmware/PROTOCOL.md).

Protocol version 3. A frame is ``SYNC LEN TYPE SEQ(2) PAYLOAD [COUNTER(4) TAG(4)] CRC(2)``,
little-endian. In authenticated mode (bit 7 of TYPE) COUNTER is a monotonically increasing
32-bit number and TAG the low 32 bits of SipHash-2-4 over the direction, the MCU's boot id
and the frame, keyed with a shared 128-bit key.

Angles are integer centidegrees [cdeg], times microseconds [us] unless a name says ``_ms``.
Encoding raises ``ProtocolError`` subclasses for values that do not fit the wire; the
streaming ``Decoder`` never raises on received bytes, it counts what it discards.

The package mirrors firmware/core: :mod:`.messages` (constants, enums, message codecs),
:mod:`.crc16`, :mod:`.siphash` and :mod:`.framing` (encoder and streaming decoder). Everything
public is importable from here, as ``from snake_driver import protocol as p``.
"""

from __future__ import annotations

from .crc16 import (
    crc16,
)
from .framing import (
    Decoder,
    DecoderStats,
    Encoder,
    Frame,
    ReplayWindow,
    encode_frame,
    mac_boot_id,
)
from .messages import (
    ADC_MAX,
    AUTH_LEN,
    BOOT_ID_OFFSET,
    CRC_LEN,
    HEADER_LEN,
    KEY_LEN,
    MAX_CHANNELS,
    MAX_PAYLOAD,
    MAX_PAYLOAD_TO_MCU,
    MESSAGE_CLASSES,
    PROTOCOL_VERSION,
    REPLAY_WINDOW,
    SYNC,
    TAG_LEN,
    TYPE_AUTH,
    AuthKeyError,
    ConfigChannel,
    ConfigFeedback,
    ConfigSystem,
    Counters,
    Direction,
    Enable,
    ErrorCode,
    ErrorReport,
    Estop,
    FieldRangeError,
    Flag,
    Message,
    MsgType,
    PayloadError,
    Ping,
    Pong,
    ProtocolError,
    SetTargets,
    Telemetry,
    WatchdogAction,
    parse_key,
)
from .siphash import (
    siphash24,
)

__all__ = [
    "ADC_MAX",
    "AUTH_LEN",
    "BOOT_ID_OFFSET",
    "CRC_LEN",
    "HEADER_LEN",
    "KEY_LEN",
    "MAX_CHANNELS",
    "MAX_PAYLOAD",
    "MAX_PAYLOAD_TO_MCU",
    "MESSAGE_CLASSES",
    "PROTOCOL_VERSION",
    "REPLAY_WINDOW",
    "SYNC",
    "TAG_LEN",
    "TYPE_AUTH",
    "AuthKeyError",
    "ConfigChannel",
    "ConfigFeedback",
    "ConfigSystem",
    "Counters",
    "Decoder",
    "DecoderStats",
    "Direction",
    "Enable",
    "Encoder",
    "ErrorCode",
    "ErrorReport",
    "Estop",
    "FieldRangeError",
    "Flag",
    "Frame",
    "Message",
    "MsgType",
    "PayloadError",
    "Ping",
    "Pong",
    "ProtocolError",
    "ReplayWindow",
    "SetTargets",
    "Telemetry",
    "WatchdogAction",
    "crc16",
    "encode_frame",
    "mac_boot_id",
    "parse_key",
    "siphash24",
]
