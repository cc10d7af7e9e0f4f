"""Waiting for a condition, never for a time; a child process a test interrupts as Ctrl-C does."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from typing import Any

import pytest


def wait_for(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll ``condition`` until truthy (returned) or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def default_sigint() -> None:
    """``preexec_fn`` of a child a test interrupts as Ctrl-C does: SIGINT back to its default.
    A suite started in the background by a shell without job control inherits SIGINT
    ignored, and a Python child that starts with it ignored never raises KeyboardInterrupt
    (two fresh-clone runs failed the sweep's Ctrl-C test so)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
