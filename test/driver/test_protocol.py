"""The Python codec (snake_driver.protocol) against the vectors the C firmware also checks
(firmware/test/vectors), published CRC/SipHash check values, and hostile byte streams."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from snake_driver import protocol as p

VECTOR_DIR = Path(__file__).resolve().parents[2] / "firmware" / "test" / "vectors"
KEY = bytes(range(16))


@dataclasses.dataclass(frozen=True)
class Vector:
    """One vector file: the frame's bytes and what they mean."""

    name: str
    frame: bytes
    message: p.Message
    direction: p.Direction
    seq: int
    key: bytes | None
    counter: int | None
    boot_id: int


def _message(cls: type[p.Message], fields: dict[str, list[int]]) -> p.Message:
    kwargs: dict[str, object] = {}
    for f in dataclasses.fields(cls):
        values = fields[f.name]
        if f.name == "counters":
            kwargs[f.name] = p.Counters(*values)
        elif f.name == "flags":
            kwargs[f.name] = p.Flag(values[0])
        elif f.name == "watchdog_action":
            kwargs[f.name] = p.WatchdogAction(values[0])
        elif f.name == "enable":
            kwargs[f.name] = bool(values[0])
        elif f.type == "tuple[int, ...]":
            kwargs[f.name] = tuple(values)
        else:
            kwargs[f.name] = values[0]
    return cls(**kwargs)  # type: ignore[arg-type]


def load_vector(path: Path) -> Vector:
    """Parse one vector file (format: firmware/test/vectors/README.md)."""
    lines = [ln.split() for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
    text = {ln[0]: ln[1:] for ln in lines}
    classes = {cls.__name__: cls for cls in p.MESSAGE_CLASSES.values()}
    fields = {
        k: [int(x) for x in v]
        for k, v in text.items()
        if k not in ("message", "frame", "frame_key")
    }
    assert fields["frame_type"][0] == classes[text["message"][0]].TYPE
    return Vector(
        name=path.stem,
        frame=bytes.fromhex("".join(text["frame"])),
        message=_message(classes[text["message"][0]], fields),
        direction=p.Direction(fields["frame_direction"][0]),
        seq=fields["frame_seq"][0],
        key=bytes.fromhex(text["frame_key"][0]) if "frame_key" in text else None,
        counter=fields["frame_counter"][0] if "frame_counter" in fields else None,
        boot_id=fields["frame_boot_id"][0] if "frame_boot_id" in fields else 0,
    )


VECTORS = [load_vector(path) for path in sorted(VECTOR_DIR.glob("*.txt"))]


def test_every_message_type_has_a_vector() -> None:
    assert {type(v.message) for v in VECTORS} == set(p.MESSAGE_CLASSES.values())
    assert any(v.key is not None for v in VECTORS)


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v.name)
def test_vector_encodes_byte_exact(vector: Vector) -> None:
    encoder = p.Encoder(
        vector.key, vector.direction, vector.seq, vector.counter or 0, vector.boot_id
    )
    assert encoder.encode(vector.message).hex(" ") == vector.frame.hex(" ")


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v.name)
def test_vector_decodes_to_its_fields(vector: Vector) -> None:
    decoder = p.Decoder(vector.key, vector.direction, vector.boot_id)
    [(frame, message)] = decoder.feed_messages(vector.frame)
    assert message == vector.message
    assert (frame.seq, frame.counter) == (vector.seq, vector.counter)
    assert decoder.stats == p.DecoderStats(frames_ok=1)


def test_crc_check_value() -> None:
    # CRC-16/CCITT-FALSE check value from Williams' CRC catalogue
    assert p.crc16(b"123456789") == 0x29B1


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v.name)
def test_crc_goes_low_byte_first_over_len_to_the_byte_before_it(vector: Vector) -> None:
    """PROTOCOL.md in words (issue 11: the byte order was never stated): the CRC covers LEN
    up to the byte before it and is sent low byte first, as every integer."""
    frame = vector.frame
    assert frame[-2:] == p.crc16(frame[1:-2]).to_bytes(2, "little")


@pytest.mark.parametrize(
    ("length", "expected"),
    [(0, 0x726FDB47DD0E0E31), (8, 0x93F5F5799A932462), (15, 0xA129CA6149BE45E5)],
)
def test_siphash_reference_vectors(length: int, expected: int) -> None:
    # SipHash paper (Aumasson & Bernstein 2012), appendix A: key 00..0f, message 00..len-1
    assert p.siphash24(KEY, bytes(range(length))) == expected


def _ping(seq: int, key: bytes | None = None, counter: int = 0) -> bytes:
    return p.Encoder(key, p.Direction.TO_MCU, seq, counter).encode(p.Ping(0x1122334455667788))


def test_resync_after_garbage_and_bad_length() -> None:
    decoder = p.Decoder(direction=p.Direction.TO_MCU)
    garbage = bytes([0x00, p.SYNC, 0xFF, p.SYNC, 0x03, 0x01, 0x55, 0x13])
    frames = decoder.feed(garbage + _ping(7))
    assert [f.seq for f in frames] == [7]
    assert decoder.stats.bad_length >= 1


def test_truncated_frame_then_good_frame() -> None:
    decoder = p.Decoder(direction=p.Direction.TO_MCU)
    frames = decoder.feed(_ping(1)[:-4] + _ping(2))
    assert [f.seq for f in frames] == [2]
    assert decoder.stats.bad_crc >= 1


def test_byte_by_byte_feeding() -> None:
    decoder = p.Decoder(direction=p.Direction.TO_MCU)
    stream = _ping(1) + _ping(2) + _ping(3)
    frames = [f for b in stream for f in decoder.feed(bytes([b]))]
    assert [f.seq for f in frames] == [1, 2, 3]


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v.name)
def test_every_flipped_bit_is_rejected(vector: Vector) -> None:
    for bit in range(8 * len(vector.frame)):
        bad = bytearray(vector.frame)
        bad[bit // 8] ^= 1 << (bit % 8)
        decoder = p.Decoder(vector.key, vector.direction, vector.boot_id)
        assert decoder.feed(bytes(bad)) == [], f"bit {bit} flipped went unnoticed"


def test_sequence_gaps_are_counted() -> None:
    decoder = p.Decoder(direction=p.Direction.TO_MCU)
    decoder.feed(_ping(0xFFFE) + _ping(0xFFFF) + _ping(2) + _ping(1) + _ping(3))
    assert decoder.stats.seq_gaps == 2  # 0 and 1 missing at the wrap; the late 1 is no gap


def _with_crc(frame: bytearray) -> bytes:
    frame[-2:] = p.crc16(bytes(frame[1:-2])).to_bytes(2, "little")
    return bytes(frame)


def test_mac_rejects_wrong_key_alteration_replay_and_reflection() -> None:
    decoder = p.Decoder(KEY, p.Direction.TO_MCU)
    good = _ping(1, KEY, 10)
    assert len(decoder.feed(good)) == 1
    assert decoder.feed(good) == []
    assert decoder.stats.replayed == 1

    assert decoder.feed(_ping(2, bytes(16), 11)) == []
    altered = bytearray(_ping(3, KEY, 12))
    altered[p.HEADER_LEN] ^= 1
    assert decoder.feed(_with_crc(altered)) == []
    assert decoder.feed(_ping(4)) == []  # plain frame in authenticated mode
    reflected = p.Encoder(KEY, p.Direction.TO_HOST, 5, 13).encode(p.Ping(1))
    assert decoder.feed(reflected) == []
    assert decoder.stats.bad_auth == 4

    assert [f.counter for f in decoder.feed(_ping(6, KEY, 14))] == [14]
    assert decoder.stats.frames_ok == 2


def test_plain_decoder_rejects_authenticated_frames() -> None:
    decoder = p.Decoder(direction=p.Direction.TO_MCU)
    assert decoder.feed(_ping(1, KEY, 1)) == []
    assert decoder.stats.bad_auth == 1


def test_replay_window() -> None:
    window = p.ReplayWindow()
    assert window.accept(100)
    assert not window.accept(100)
    assert window.accept(98)  # late, inside the window
    assert not window.accept(98)
    assert window.accept(140)
    assert not window.accept(100)  # now too old
    assert window.accept(140 - p.REPLAY_WINDOW + 1)
    assert not window.accept(140 - p.REPLAY_WINDOW)


@pytest.mark.parametrize(
    "message",
    [
        p.SetTargets((40000,)),
        p.SetTargets(()),
        p.SetTargets((0,) * 5, first=12),
        p.SetTargets((0,), duration_ms=-1),
        p.ConfigChannel(16),
        p.ConfigChannel(0, direction=0),
        p.Ping(-1),
        p.ConfigSystem(watchdog_ms=70000),
        p.Telemetry(0, p.Flag(0), 0, p.Counters(), (0,), ()),
        p.Telemetry(0, p.Flag(0), 0, p.Counters(), (0,), (0,), feedback_mask=0x10000),
        p.ConfigFeedback(16),
        p.ConfigFeedback(0, adc_hi=-1),
        p.ConfigFeedback(0, angle_lo_cdeg=40000),
    ],
)
def test_encoding_out_of_range_raises(message: p.Message) -> None:
    with pytest.raises(p.FieldRangeError):
        p.Encoder().encode(message)


def test_bad_keys_raise() -> None:
    with pytest.raises(p.AuthKeyError):
        p.Encoder(key=b"short")
    with pytest.raises(p.AuthKeyError):
        p.Decoder(key=bytes(17))


def test_keys_from_hex() -> None:
    assert p.parse_key("") is None and p.parse_key("  ") is None
    assert p.parse_key(" 000102030405060708090A0B0C0D0E0F\n") == KEY
    secret = "000102030405060708090a0b0c0d0e0"
    for bad, why in (
        (secret, "got 31 characters"),
        (secret + "ff", "got 33 characters"),
        (secret + "g", "got other characters"),
        ("00 01 02 03 04 05 06 07 08 09 0a", "got other characters"),  # 32 with spaces
    ):
        with pytest.raises(p.AuthKeyError, match=f"must be 32 hex digits .*{why}") as info:
            p.parse_key(bad)
        assert secret not in str(info.value)  # an error message does not leak the key


def test_undecodable_payloads_are_counted_not_raised() -> None:
    encoder = p.Encoder(direction=p.Direction.TO_HOST)
    decoder = p.Decoder()
    stream = p.encode_frame(p.MsgType.PONG, b"\x00" * 11, 1) + p.encode_frame(0x7F, b"", 2)
    stream += encoder.encode(p.Pong(1, 2, 3))
    assert [m for _, m in decoder.feed_messages(stream)] == [p.Pong(1, 2, 3)]
    assert decoder.stats.bad_payload == 2
    with pytest.raises(p.PayloadError):
        p.Frame(0x7F, 0, b"").message()


def test_decoder_never_raises_on_random_bytes() -> None:
    pytest.importorskip("hypothesis")
    from hypothesis import given, settings
    from hypothesis import strategies as st

    plain_vector = next(v for v in VECTORS if v.key is None)
    frame = plain_vector.frame

    @settings(max_examples=300, deadline=None)
    @given(garbage=st.binary(max_size=300), key=st.sampled_from([None, KEY]))
    def check(garbage: bytes, key: bytes | None) -> None:
        decoder = p.Decoder(key, p.Direction.TO_MCU)
        decoder.feed_messages(garbage)
        # a good frame after any garbage is found once enough bytes follow to flush it
        plain = p.Decoder(None, plain_vector.direction)
        found = plain.feed(garbage + frame + bytes(p.HEADER_LEN + p.MAX_PAYLOAD + 10))
        assert any(f.payload == frame[p.HEADER_LEN : -p.CRC_LEN] for f in found)

    check()


def test_decoder_accounts_for_every_well_framed_frame() -> None:
    """Structure-aware fuzz: frames with a valid CRC (and, authenticated, a valid MAC and a
    rising counter) around random types and payloads, each maybe with one bit flipped. Random
    bytes almost never pass the CRC; these reach payload decoding and the MAC and replay
    checks. Every intact frame is accepted (decoded, or counted as an undecodable payload),
    every flipped one rejected, and the decoder never raises."""
    pytest.importorskip("hypothesis")
    from hypothesis import given, settings
    from hypothesis import strategies as st

    frame_spec = st.tuples(
        st.sampled_from([*list(p.MsgType), 0x00, 0x3F, 0x7F]),  # known types and unknown ones
        st.binary(max_size=p.MAX_PAYLOAD),
        st.none() | st.integers(min_value=0),  # a bit to flip (taken modulo the frame's bits)
    )

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(specs=st.lists(frame_spec, max_size=12), key=st.sampled_from([None, KEY]))
    def check(specs: list[tuple[int, bytes, int | None]], key: bytes | None) -> None:
        decoder = p.Decoder(key, p.Direction.TO_HOST)
        stream, intact = b"", 0
        for seq, (msg_type, payload, flip) in enumerate(specs):
            frame = bytearray(
                p.encode_frame(
                    int(msg_type),
                    payload,
                    seq,
                    key=key,
                    counter=seq + 1,
                    direction=p.Direction.TO_HOST,
                )
            )
            if flip is None:
                intact += 1
            else:
                frame[flip // 8 % len(frame)] ^= 1 << flip % 8
            stream += bytes(frame)
        # the stream ends with a known-good frame and enough zeros to flush a bad length
        last = p.Encoder(key, p.Direction.TO_HOST, counter=1 << 20).encode(p.Pong(1, 2, 3))
        decoded = decoder.feed_messages(stream + last + bytes(p.HEADER_LEN + p.MAX_PAYLOAD + 12))
        s = decoder.stats
        assert decoded and decoded[-1][1] == p.Pong(1, 2, 3)
        # intact frames are all accepted (or, of the host's own types, counted as echoed); a
        # flipped bit never yields an extra frame (a false frame inside a damaged one passes
        # CRC-16 with odds 2^-16: the run is derandomised)
        assert intact <= s.frames_ok + s.echoed - 1 <= len(specs), s
        assert len(decoded) + s.bad_payload == s.frames_ok, s

    check()


def test_mac_binds_the_boot_id() -> None:
    """Frames recorded in one boot never verify in another; PING always MACs with boot id 0
    and PONG with the id it carries, so a host that does not know the id can learn it."""
    host = p.Encoder(KEY, p.Direction.TO_MCU, counter=1, boot_id=5)
    enable = host.encode(p.Enable(True))
    ping = host.encode(p.Ping(9))
    mcu = p.Decoder(KEY, p.Direction.TO_MCU, boot_id=6)  # the MCU restarted: boot 6
    assert mcu.feed(enable) == []
    assert mcu.stats.bad_auth == 1
    assert [f.msg_type for f in mcu.feed(ping)] == [p.MsgType.PING]
    mcu.boot_id = 5
    assert [f.msg_type for f in mcu.feed(host.encode(p.Enable(True)))] == [p.MsgType.ENABLE]

    pong = p.Encoder(KEY, p.Direction.TO_HOST, counter=1, boot_id=99).encode(p.Pong(9, 1, 6))
    for known in (0, 6, 1234):  # the host's guess does not matter for a pong
        assert [m for _, m in p.Decoder(KEY, boot_id=known).feed_messages(pong)] == [
            p.Pong(9, 1, 6)
        ]
    assert p.mac_boot_id(p.Direction.TO_HOST, p.MsgType.PONG, b"", 3) == 0
    assert p.mac_boot_id(p.Direction.TO_HOST, p.MsgType.TELEMETRY, b"", 3) == 3


def test_own_frames_echoed_back_are_counted_not_returned() -> None:
    host_frames = p.Encoder().encode(p.Ping(1)) + p.Encoder().encode(p.Enable(True))
    decoder = p.Decoder()
    assert (
        decoder.feed(
            host_frames + p.Encoder(direction=p.Direction.TO_HOST).encode(p.Pong(1, 2, 3))
        )[0].msg_type
        == p.MsgType.PONG
    )
    assert (decoder.stats.echoed, decoder.stats.frames_ok) == (2, 1)
    mcu = p.Decoder(direction=p.Direction.TO_MCU)
    assert mcu.feed(p.Encoder(direction=p.Direction.TO_HOST).encode(p.Pong(1, 2, 3))) == []
    assert mcu.stats.echoed == 1


def test_payload_limit_is_per_direction() -> None:
    """Host -> MCU frames carry at most 40 payload bytes (the MCU waits for no longer
    candidate); MCU -> host frames up to 120."""
    assert p.MAX_PAYLOAD_TO_MCU == 40 and p.PROTOCOL_VERSION == 3
    assert len(p.SetTargets((0,) * 16).payload()) <= p.MAX_PAYLOAD_TO_MCU
    with pytest.raises(p.FieldRangeError):
        p.encode_frame(0x3F, bytes(41), 0)
    long_frame = p.encode_frame(0x7F, bytes(41), 0, direction=p.Direction.TO_HOST)
    assert len(p.Decoder().feed(long_frame)) == 1
    mcu = p.Decoder(direction=p.Direction.TO_MCU)
    assert mcu.feed(long_frame) == []
    assert mcu.stats.bad_length == 1


def test_telemetry_of_16_channels_fits_and_flags_measured_angles() -> None:
    """v3 telemetry: 31 + 4n bytes (95 for 16 channels, within the 120-byte limit); bit i of
    feedback_mask marks channel i's angle as measured, the others are estimates."""
    t = p.Telemetry(1, p.Flag(0), 0, p.Counters(), (0,) * 16, (1500,) * 16, 0x8005)
    assert len(t.payload()) == 95 <= p.MAX_PAYLOAD
    assert [c for c in range(16) if t.measured(c)] == [0, 2, 15]
    assert p.Telemetry.from_payload(t.payload()) == t
    off = p.ConfigFeedback(3, on=False)
    assert off.payload() == b"\x03"
    assert p.ConfigFeedback.from_payload(off.payload()) == off
    with pytest.raises(p.PayloadError):
        p.ConfigFeedback.from_payload(bytes(5))


def test_frames_before_the_boot_id_is_known_are_unverified() -> None:
    """A host that does not know the boot id yet (Decoder.boot_id None) takes pongs (they
    carry it) and counts the MCU's other frames as unverified, not as bad_auth."""
    mcu = p.Encoder(KEY, p.Direction.TO_HOST, counter=1, boot_id=9)
    decoder = p.Decoder(KEY, boot_id=None)
    telemetry = p.Telemetry(1, p.Flag(0), 0, p.Counters(), (0,), (0,))
    stream = mcu.encode(telemetry) + mcu.encode(p.Pong(5, 6, 9)) + mcu.encode(telemetry)
    assert [m for _, m in decoder.feed_messages(stream)] == [p.Pong(5, 6, 9)]
    assert (decoder.stats.unverified, decoder.stats.bad_auth) == (2, 0)
    decoder.boot_id = 9
    assert [m for _, m in decoder.feed_messages(mcu.encode(telemetry))] == [telemetry]
