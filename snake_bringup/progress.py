"""A small progress bar on stderr for long work (a line per 10% when not on a terminal)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """Callable with the completed fraction 0..1; draws ``label [#####     ]  45%  2.1 s``."""

    def __init__(self, label: str, stream: TextIO | None = None, width: int = 30) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.tty = self.stream.isatty()
        self.start = time.monotonic()
        self.last_decile = -1

    def __call__(self, fraction: float) -> None:
        fraction = min(max(fraction, 0.0), 1.0)
        elapsed = time.monotonic() - self.start
        if self.tty:
            filled = round(fraction * self.width)
            bar = "#" * filled + " " * (self.width - filled)
            end = "\n" if fraction >= 1.0 else ""
            self.stream.write(f"\r{self.label} [{bar}] {fraction:4.0%} {elapsed:5.1f} s{end}")
            self.stream.flush()
            return
        decile = int(fraction * 10)
        if decile > self.last_decile:
            self.last_decile = decile
            self.stream.write(f"{self.label}: {fraction:.0%} ({elapsed:.1f} s)\n")
            self.stream.flush()
