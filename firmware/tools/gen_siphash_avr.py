#!/usr/bin/env python3
"""Write firmware/core/siphash_avr.S: SipHash's rounds for the ATmega, all state in registers.

The four 64-bit words fill all 32 registers; the rounds are unrolled, so rotations by whole
bytes cost nothing (the generator renames which register holds which byte) and only the
1-3 bit remainders are shifted (13 = 16 - 3, 17 = 16 + 1, 21 = 24 - 3). A call loads the
words from ``siphash_avr_v`` (32 bytes, little-endian v0..v3), runs 2 or 4 rounds and
stores them back. core/siphash.c uses it on the AVR; the host build runs the C rounds, and
the shared vectors and the authenticated simavr tests check both. Rerun after editing:
    python3 firmware/tools/gen_siphash_avr.py
"""

from __future__ import annotations

from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "core" / "siphash_avr.S"
SAVED = [*range(2, 18), 28, 29]  # call-saved registers of the avr-gcc ABI


class Words:
    """Which register holds byte i of word w, and the code written so far."""

    def __init__(self) -> None:
        self.reg = [[8 * w + i for i in range(8)] for w in range(4)]
        self.code: list[str] = []

    def emit(self, *lines: str) -> None:
        self.code += [f"    {line}" for line in lines]

    def add(self, a: int, b: int) -> None:
        for i in range(8):
            self.emit(f"{'add' if i == 0 else 'adc'} r{self.reg[a][i]}, r{self.reg[b][i]}")

    def xor(self, a: int, b: int) -> None:
        for i in range(8):
            self.emit(f"eor r{self.reg[a][i]}, r{self.reg[b][i]}")

    def rotl_bytes(self, w: int, k: int) -> None:
        """Rotate left by 8k bits: a renaming, no code."""
        self.reg[w] = [self.reg[w][(i - k) % 8] for i in range(8)]

    def rotl1(self, w: int) -> None:
        r = self.reg[w]
        self.emit(f"bst r{r[7]}, 7", f"lsl r{r[0]}", *(f"rol r{r[i]}" for i in range(1, 8)))
        self.emit(f"bld r{r[0]}, 0")

    def rotr1(self, w: int) -> None:
        r = self.reg[w]
        self.emit(f"bst r{r[0]}, 0", f"lsr r{r[7]}", *(f"ror r{r[i]}" for i in range(6, -1, -1)))
        self.emit(f"bld r{r[7]}, 7")

    def sip_round(self) -> None:
        self.add(0, 1)
        self.rotl_bytes(1, 2)
        for _ in range(3):
            self.rotr1(1)  # 13
        self.xor(1, 0)
        self.rotl_bytes(0, 4)  # 32
        self.add(2, 3)
        self.rotl_bytes(3, 2)  # 16
        self.xor(3, 2)
        self.add(0, 3)
        self.rotl_bytes(3, 3)
        for _ in range(3):
            self.rotr1(3)  # 21
        self.xor(3, 0)
        self.add(2, 1)
        self.rotl_bytes(1, 2)
        self.rotl1(1)  # 17
        self.xor(1, 2)
        self.rotl_bytes(2, 4)  # 32


def function(rounds: int) -> list[str]:
    """siphash_avr_rounds<rounds>: load, run, store (the registers' final names)."""
    words = Words()
    for _ in range(rounds):
        words.sip_round()
    name = f"siphash_avr_rounds{rounds}"
    lines = [f".global {name}", f".type {name}, @function", f"{name}:"]
    lines += [f"    push r{r}" for r in SAVED]
    state = [(w, i) for w in range(4) for i in range(8)]
    lines += [f"    lds r{8 * w + i}, siphash_avr_v+{8 * w + i}" for w, i in state]
    lines += words.code
    lines += [f"    sts siphash_avr_v+{8 * w + i}, r{words.reg[w][i]}" for w, i in state]
    lines.append("    clr r1")
    lines += [f"    pop r{r}" for r in reversed(SAVED)]
    lines += ["    ret", f".size {name}, .-{name}", ""]
    return lines


def main() -> None:
    """Write the assembly file."""
    head = [
        "/* SipHash rounds with the state in r0-r31 (written by firmware/tools/gen_siphash_avr.py;",
        " * do not edit). Interrupts may run: avr-gcc's handlers save r0/r1 and clear r1. */",
        "#ifdef __AVR__",
        "",
        ".section .bss",
        ".global siphash_avr_v",
        ".type siphash_avr_v, @object",
        "siphash_avr_v:",
        "    .zero 32",
        ".size siphash_avr_v, 32",
        "",
        ".section .text",
    ]
    OUT.write_text("\n".join([*head, *function(2), *function(4), "#endif", ""]))


if __name__ == "__main__":
    main()
