"""The firmware's host build (core/ on a pty) for the link and driver tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIRMWARE = ROOT / "firmware" / "build" / "host" / "snake_fw_posix"


def build_posix() -> Path:
    """``make -C firmware posix`` (skips the test without a C compiler); the binary."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler for the firmware's host build")
    built = subprocess.run(
        ["make", "-C", str(ROOT / "firmware"), "posix"], capture_output=True, text=True, timeout=300
    )
    assert built.returncode == 0, built.stderr
    return FIRMWARE


def start_firmware(
    binary: Path, *args: str, seconds: float = 120.0
) -> tuple[subprocess.Popen[str], str]:
    """The host build for at most ``seconds`` (``args``: e.g. ``--key-file FILE``), and the
    pty it serves."""
    proc = subprocess.Popen(
        [str(binary), "--seconds", f"{seconds:g}", *args], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line.startswith("PTY "), line
    return proc, line.split(" ", 1)[1]
