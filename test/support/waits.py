"""Waiting for a condition, never for a time; a child process a test interrupts as Ctrl-C does,
and one that runs in the background of a test."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
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


@contextlib.contextmanager
def background(
    command: list[str], *, cwd: Path, env: Mapping[str, str], ctrl_c: bool = False
) -> Iterator[subprocess.Popen[str]]:
    """``command`` running, its stdout and stderr on pipes; killed (if still up) and reaped
    when the block ends. ``ctrl_c``: in a session of its own with SIGINT at its default, for
    a test that sends Ctrl-C to its process group."""
    session: dict[str, Any] = {"start_new_session": True, "preexec_fn": default_sigint}
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **(session if ctrl_c else {}),
    )
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=30)
