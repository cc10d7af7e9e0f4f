"""SipHash-2-4, the authenticated mode's MAC (firmware/core's siphash.c)."""

from __future__ import annotations

import struct

from .messages import check_key

_MASK64 = 0xFFFF_FFFF_FFFF_FFFF


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _MASK64


def _sip_round(v0: int, v1: int, v2: int, v3: int) -> tuple[int, int, int, int]:
    v0 = (v0 + v1) & _MASK64
    v1 = _rotl(v1, 13) ^ v0
    v0 = _rotl(v0, 32)
    v2 = (v2 + v3) & _MASK64
    v3 = _rotl(v3, 16) ^ v2
    v0 = (v0 + v3) & _MASK64
    v3 = _rotl(v3, 21) ^ v0
    v2 = (v2 + v1) & _MASK64
    v1 = _rotl(v1, 17) ^ v2
    v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def siphash24(key: bytes, data: bytes) -> int:
    """SipHash-2-4 of data under a 16-byte key (Aumasson & Bernstein, 2012), as an int.

    Raises:
        AuthKeyError: if key is not 16 bytes.
    """
    check_key(key)
    k0: int = int.from_bytes(key[:8], "little")
    k1: int = int.from_bytes(key[8:], "little")
    v0, v1 = k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D
    v2, v3 = k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573
    tail = len(data) % 8
    words = list(struct.unpack_from(f"<{len(data) // 8}Q", data))
    words.append(int.from_bytes(data[len(data) - tail :], "little") | (len(data) & 0xFF) << 56)
    for m in words:
        v3 ^= m
        v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
        v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
        v0 ^= m
    v2 ^= 0xFF
    for _ in range(4):
        v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3
