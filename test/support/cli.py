"""The ``snake`` command of this checkout in a process of its own."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: ``python -m snake_bringup.cli``: the snake command of this checkout.
SNAKE = [sys.executable, "-m", "snake_bringup.cli"]
#: A snake command's environment when it must not see the caller's: this checkout on
#: PYTHONPATH, the system's PATH, a temporary home.
ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": tempfile.gettempdir()}


def snake(
    *args: str, timeout: float = 300.0, cwd: Path = ROOT, env: Mapping[str, str] | None = ENV
) -> subprocess.CompletedProcess[str]:
    """``snake args...`` run to its end (at most ``timeout`` [s]), its output captured;
    ``env`` None: this process's environment."""
    return subprocess.run(
        [*SNAKE, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
    )
