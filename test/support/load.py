"""A loaded machine beside a test: busy-loop processes that take cores, paused once the
test's child only computes (a fit on recorded data runs the same with or without them)."""

from __future__ import annotations

import signal
import subprocess
import sys


class BusyCores:
    """Busy-loop processes: ``busy(n)`` starts n more (on 2 cores, n = 2 takes both);
    ``pause()`` stops them all (SIGSTOP) for the rest of the test; ``close()`` kills them."""

    def __init__(self) -> None:
        self._hogs: list[subprocess.Popen[bytes]] = []
        self.is_paused = False

    def __call__(self, n: int) -> None:
        self._hogs.extend(
            subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)
        )
        if self.is_paused:
            self.pause()

    def pause(self) -> None:
        for hog in self._hogs:
            hog.send_signal(signal.SIGSTOP)
        self.is_paused = True

    def close(self) -> None:
        for hog in self._hogs:
            hog.kill()  # a stopped process dies of SIGKILL too
            hog.wait()
        self._hogs.clear()
