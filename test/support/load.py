"""A loaded machine beside a test: busy-loop processes that take cores, paused while the
test's child only computes (a fit on recorded data runs the same with or without them)."""

from __future__ import annotations

import signal
import subprocess
import sys


class BusyCores:
    """Busy-loop processes: ``busy(n)`` starts n more (on 2 cores, n = 2 takes both);
    ``pause()`` and ``resume()`` stop and continue all of them, and ``changes`` lists the
    pauses and resumes that changed their state; ``close()`` kills them."""

    def __init__(self) -> None:
        self._hogs: list[subprocess.Popen[bytes]] = []
        self.changes: list[str] = []

    @property
    def is_paused(self) -> bool:
        return self.changes[-1:] == ["pause"]

    def __call__(self, n: int) -> None:
        self._hogs.extend(
            subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)
        )
        if self.is_paused:
            self._signal(signal.SIGSTOP)

    def pause(self) -> None:
        if not self.is_paused:
            self._signal(signal.SIGSTOP)
            self.changes.append("pause")

    def resume(self) -> None:
        if self.is_paused:
            self._signal(signal.SIGCONT)
            self.changes.append("resume")

    def close(self) -> None:
        for hog in self._hogs:
            hog.kill()  # a stopped process dies of SIGKILL too
            hog.wait()
        self._hogs.clear()

    def _signal(self, number: int) -> None:
        for hog in self._hogs:
            hog.send_signal(number)
