"""The test harness kills what a module left running (test/support/processes.py)."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
from support.processes import reap_children, running_children

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


def test_what_a_module_left_running_is_killed_and_named_and_older_processes_kept() -> None:
    older = subprocess.Popen(SLEEPER)
    try:
        before = running_children()
        child = subprocess.Popen(SLEEPER)
        # a grandchild, as a node under `ip netns exec` or a launcher is
        parent = subprocess.Popen(["sh", "-c", f"{' '.join(SLEEPER[:2])} '{SLEEPER[2]}' & wait"])
        deadline = time.monotonic() + 30.0
        while len(psutil.Process(parent.pid).children()) < 1:
            assert time.monotonic() < deadline, "the grandchild never started"
            time.sleep(0.01)
        grandchild = psutil.Process(parent.pid).children()[0]

        left = reap_children(before)

        assert len(left) == 3, left
        assert sum(line.startswith("sh -c") for line in left) == 1, left
        for pid in (child.pid, parent.pid, grandchild.pid):  # reaped by the harness's wait
            assert not psutil.pid_exists(pid), f"{pid} still runs"
        assert older.poll() is None, "a process started before the module was killed"
        assert reap_children(before) == []
    finally:
        older.kill()
        older.wait()
