"""Two hosts on one machine: network namespaces joined by tools/wifi_link.py's link."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType


def wifi_link() -> ModuleType:
    """tools/wifi_link.py, imported as its script runs (tools/ is not a package: its folder
    goes on sys.path)."""
    tools = str(Path(__file__).resolve().parents[2] / "tools")
    if tools not in sys.path:
        sys.path.insert(0, tools)
    return importlib.import_module("wifi_link")


def netns_unavailable() -> str | None:
    """Why network namespaces cannot be made here (tools/wifi_link.py's two hosts), or None."""
    if os.geteuid() != 0:
        return "network namespaces need root (these tests run as root only)"
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2)"
    probe = f"wlprobe{os.getpid()}"
    done = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if done.returncode != 0:
        return f"`ip netns add` fails here: {done.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None
