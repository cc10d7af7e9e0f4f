"""A node's process ends as soon as the node has cleaned up (snake_ros.common.end_process), and
``snake`` as soon as nothing of its own is left running (snake_bringup.cli.console): the
interpreter's teardown took 0.3-0.7 s of each node's and 1.3 s of ``snake``'s Ctrl-C.

References: an ``atexit`` handler that writes a file (it runs in a normal exit, not here), the
exit status and the output the process flushed first; no wall-clock threshold.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.ros, pytest.mark.parallel]  # snake_ros.common imports rclpy (no node)

SCRIPT = """
import atexit, sys
from pathlib import Path
atexit.register(lambda: Path(sys.argv[1]).write_text("teardown ran"))
print("flushed first", end="")
if sys.argv[2] == "end_process":
    from snake_ros.common import end_process
    end_process(3)
sys.exit(3)
"""


@pytest.mark.parametrize("how", ["end_process", "sys.exit"])
def test_end_process_skips_the_teardown_and_keeps_status_and_output(
    tmp_path: Path, how: str
) -> None:
    marker = tmp_path / "teardown"
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(marker), how], capture_output=True, text=True
    )
    assert proc.returncode == 3 and proc.stdout == "flushed first", proc.stderr
    assert marker.exists() is (how == "sys.exit")  # the reference: a normal exit runs it


CONSOLE = """
import atexit, sys, threading
from pathlib import Path
import snake_bringup.cli as cli
atexit.register(lambda: Path(sys.argv[1]).write_text("teardown ran"))
cli.main = lambda: 130  # a graph command's status after Ctrl-C
if sys.argv[2] == "thread":  # something of its own still running: a Dask client's thread
    threading.Thread(target=threading.Event().wait, args=(0.5,)).start()
cli.console()
"""


@pytest.mark.parametrize("running", ["nothing", "thread"])
def test_snake_ends_at_once_only_when_nothing_of_its_own_runs(tmp_path: Path, running: str) -> None:
    """After a graph (its nodes waited for) ``console`` ends the process at once; with a
    thread still running it exits normally, the thread joined and atexit run."""
    marker = tmp_path / "teardown"
    proc = subprocess.run(
        [sys.executable, "-c", CONSOLE, str(marker), running], capture_output=True, text=True
    )
    assert proc.returncode == 130, proc.stderr
    assert marker.exists() is (running == "thread")
