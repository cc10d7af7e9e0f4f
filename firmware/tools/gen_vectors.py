#!/usr/bin/env python3
"""Write the shared protocol test vectors (firmware/test/vectors/*.txt).

The vectors are generated once by the Python codec and checked in; the C unit tests
(firmware/test) and the Python tests (test/driver/test_protocol.py) both check every one of them,
so the two implementations must agree byte for byte. Rerun only when the protocol changes:
    python3 firmware/tools/gen_vectors.py
"""

from __future__ import annotations

import sys
from dataclasses import astuple, fields
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from snake_driver.protocol import (  # noqa: E402
    ConfigChannel,
    ConfigFeedback,
    ConfigSystem,
    Counters,
    Direction,
    Enable,
    Encoder,
    ErrorReport,
    Estop,
    Flag,
    Message,
    Ping,
    Pong,
    SetTargets,
    Telemetry,
    WatchdogAction,
)

KEY = bytes(range(16))
OUT = ROOT / "firmware" / "test" / "vectors"


def field_lines(msg: Message) -> list[str]:
    """One "name value..." line per field, tuples and nested counters flattened."""
    lines = []
    for f in fields(msg):
        value = getattr(msg, f.name)
        if isinstance(value, Counters):
            value = astuple(value)
        items = value if isinstance(value, tuple) else (int(value),)
        lines.append(" ".join([f.name, *(str(int(v)) for v in items)]))
    return lines


def write(
    name: str, comment: str, msg: Message, seq: int, counter: int | None = None, boot_id: int = 0
) -> None:
    """Encode msg and write its vector file (keyed when counter is given)."""
    direction = Direction.TO_MCU if msg.TYPE < 0x40 else Direction.TO_HOST
    key = KEY if counter is not None else None
    frame = Encoder(key, direction, seq, counter or 0, boot_id).encode(msg)
    lines = [
        f"# {comment}",
        f"message {type(msg).__name__}",
        f"frame_type {int(msg.TYPE)}",
        f"frame_direction {int(direction)}",
        f"frame_seq {seq}",
    ]
    if key is not None:
        lines += [f"frame_key {key.hex()}", f"frame_counter {counter}", f"frame_boot_id {boot_id}"]
    lines.append("frame " + " ".join(f"{b:02x}" for b in frame))
    lines += field_lines(msg)
    (OUT / f"{name}.txt").write_text("\n".join(lines) + "\n")


def main() -> None:
    """Write every vector."""
    OUT.mkdir(parents=True, exist_ok=True)
    write("ping", "ping with a 64-bit host clock", Ping(0x0123456789ABCDEF), 1)
    write("pong", "pong echoing the ping", Pong(0x0123456789ABCDEF, 3_000_000_123, 0xFEDCBA98), 513)
    write(
        "set_targets",
        "four joints over 500 ms",
        SetTargets((-9000, 0, 4500, 9000), 500, 0),
        2,
    )
    write(
        "set_targets_tail",
        "channels 12..15 at once, extreme int16 values",
        SetTargets((-32768, 32767, -1, 1), 0, 12),
        0xFFFF,
    )
    write(
        "config_channel",
        "reversed channel 7 with offset, limits and a narrow pulse range",
        ConfigChannel(7, -1, 350, -6000, 4500, 900, 2100, 12000),
        3,
    )
    write(
        "config_system",
        "watchdog 250 ms limp, telemetry 50 ms, servo 400 deg/s",
        ConfigSystem(250, WatchdogAction.LIMP, 50, 40000),
        4,
    )
    write(
        "config_feedback",
        "channel 9's feedback: reversed pot, 112 counts at +95 deg, 901 at -95 deg",
        ConfigFeedback(9, True, 112, 9500, 901, -9500),
        12,
    )
    write("config_feedback_off", "channel 15's feedback off", ConfigFeedback(15, on=False), 13)
    write("enable", "enable pulses", Enable(True), 5)
    write("disable", "disable pulses", Enable(False), 6)
    write("estop", "emergency stop (empty payload)", Estop(), 7)
    write(
        "telemetry",
        "16 channels, enabled, one limit hit, channels 0, 2 and 15 measured",
        Telemetry(
            123_456_789,
            Flag.ENABLED | Flag.LIMIT_HIT | Flag.MOVING,
            0x8001,
            Counters(1000, 3, 2, 1, 0, 4, 5, 6, 7, 65535),
            tuple(range(-8000, 8000, 1000)),
            tuple(range(1000, 2600, 100)),
            0x8005,
        ),
        42,
    )
    write("error", "refused targets while e-stopped", ErrorReport(3, 2, 77), 43)
    write(
        "auth_set_targets",
        "authenticated set_targets (key 000102..0f)",
        SetTargets((1500, -1500), 20, 3),
        8,
        counter=0x01020304,
        boot_id=0x0A0B0C0D,
    )
    write(
        "auth_ping",
        "authenticated ping (key 000102..0f): MACed with boot id 0 whatever the MCU's is",
        Ping(7),
        10,
        counter=6,
        boot_id=0x0A0B0C0D,
    )
    write(
        "auth_pong",
        "authenticated pong (key 000102..0f): MACed with the boot id it carries",
        Pong(42, 1_000_000, 77),
        9,
        counter=5,
        boot_id=0x0A0B0C0D,
    )
    write(
        "auth_error",
        "authenticated error report from the MCU in boot 3 (key 000102..0f)",
        ErrorReport(2, 5, 300),
        11,
        counter=0xFFFFFFFF,
        boot_id=3,
    )


if __name__ == "__main__":
    main()
