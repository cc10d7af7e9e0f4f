"""snake's runner when nodes fail: a failed node is restarted (bounded, announced), given up
on with an error while the rest keeps running, and the robot link (``on_failure="stop"``)
stops the graph; ``--dry-run`` with ``--emulate`` starts nothing.

The nodes are stand-ins (a script installed as ``lib/mfm_snake/fake_node`` under a
temporary ament prefix) that log each start to a file, say they are ready, fail when told,
and note a clean stop; the runner runs in a subprocess (it owns its signal handlers), with
short restart waits. Every wait is on a condition with a deadline; no assertion is on time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from snake_bringup.cli import hardware, main

ROOT = Path(__file__).resolve().parents[2]
#: The stand-in node: each run appends its pid to <state>/<name>.runs and logs the ready
#: line; once <state>/go exists, runs up to FAIL_<name> exit with status 1; the others wait
#: for SIGINT and then write <state>/<name>.stopped.
FAKE_NODE = """\
import os, signal, sys, time
from pathlib import Path
state = Path(os.environ["FAKE_STATE"])
name = next(a.split(":=")[1] for a in sys.argv if a.startswith("__node:="))
runs = state / f"{name}.runs"
with runs.open("a") as f:
    f.write(f"{os.getpid()}\\n")
run = len(runs.read_text().splitlines())
stop = []
signal.signal(signal.SIGINT, lambda *_: stop.append(1))
print("node ready", flush=True)
fails = int(os.environ.get(f"FAIL_{name}", "0"))
while not stop:
    if run <= fails and (state / "go").exists():
        print(f"{name}: failing on purpose (run {run})", flush=True)
        sys.exit(1)
    time.sleep(0.02)
(state / f"{name}.stopped").write_text("")
"""
#: The runner on the stand-ins: /link (the robot link, on_failure "stop") and /crasher.
RUNNER = """\
import sys
from pathlib import Path
from snake_bringup import runner
from snake_bringup.graph import NodeSpec
runner.RESTART_DELAYS_S = (0.1, 0.2, 0.3)
graph = (
    NodeSpec("mfm_snake", "fake_node", "link", on_failure="stop"),
    NodeSpec("mfm_snake", "fake_node", "crasher"),
)
try:
    sys.exit(runner.run_graph(graph, output=Path(sys.argv[1])))
except runner.RunError as exc:
    print(f"RunError: {exc}", file=sys.stderr)
    sys.exit(2)
"""


@dataclass
class Run:
    """The runner subprocess on the stand-ins and its state folder."""

    process: subprocess.Popen[str]
    state: Path
    out: Path

    def runs(self, name: str) -> int:
        path = self.state / f"{name}.runs"
        return len(path.read_text().splitlines()) if path.is_file() else 0

    def output(self) -> str:
        return (self.out / "runner.out").read_text()

    def wait(self, done: Callable[[], Any], what: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, f"timed out waiting for {what}:\n{self.output()}"
            time.sleep(0.05)

    def stop(self) -> int:
        """Ctrl-C the runner; its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout=60)


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[[dict[str, str]], Run]]:
    prefix = tmp_path / "prefix"
    exe = prefix / "lib" / "mfm_snake" / "fake_node"
    exe.parent.mkdir(parents=True)
    exe.write_text(f"#!{sys.executable}\n{FAKE_NODE}")
    exe.chmod(0o755)
    runs: list[Run] = []

    def launch(fails: dict[str, str]) -> Run:
        state, out = tmp_path / "state", tmp_path / "out"
        state.mkdir()
        out.mkdir()
        env = {**os.environ, "AMENT_PREFIX_PATH": str(prefix), "FAKE_STATE": str(state)}
        env.update({f"FAIL_{name}": n for name, n in fails.items()})
        env["PYTHONPATH"] = str(ROOT)
        with (out / "runner.out").open("w") as sink:
            process = subprocess.Popen(
                [sys.executable, "-c", RUNNER, str(out / "logs")],
                stdout=sink,
                stderr=subprocess.STDOUT,
                text=True,
                env=env,
            )
        run = Run(process, state, out)
        runs.append(run)
        run.wait(lambda: "all nodes ready" in run.output(), "the stand-ins to be ready")
        (state / "go").write_text("")
        return run

    yield launch
    for run in runs:
        if run.process.poll() is None:
            run.process.kill()
            run.process.wait(timeout=10)


def test_a_failed_node_is_restarted_and_the_link_stays_up(start: Callable[..., Run]) -> None:
    run = start({"crasher": "3"})  # fails three times, then runs
    run.wait(lambda: run.runs("crasher") == 4, "the third restart")
    run.wait(lambda: run.output().count("restarted /crasher") == 3, "the third restart's line")
    assert run.stop() == 130, run.output()
    out = run.output()
    for k in (1, 2, 3):
        assert f"/crasher exited with status 1: restart {k} of 3" in out, out
        assert (run.out / "logs" / f"crasher.restart{k}.log").is_file()
    assert "failing on purpose (run 1)" in (run.out / "logs" / "crasher.log").read_text()
    assert run.runs("link") == 1 and (run.state / "link.stopped").is_file()  # never restarted
    assert (run.state / "crasher.stopped").is_file()  # its fourth run, stopped cleanly


def test_a_node_that_keeps_failing_is_given_up_on_and_reported(
    start: Callable[..., Run],
) -> None:
    run = start({"crasher": "99"})
    run.wait(lambda: "error: /crasher exited with status 1, gave up" in run.output(), "give-up")
    assert run.runs("crasher") == 4  # the first run and three restarts
    assert run.process.poll() is None and not (run.state / "link.stopped").exists()  # link up
    assert run.stop() == 2
    assert "RunError: /crasher exited with status 1, gave up after 3 restarts" in run.output()
    assert run.runs("link") == 1 and (run.state / "link.stopped").is_file()


def test_a_failed_link_stops_the_graph_with_an_error(start: Callable[..., Run]) -> None:
    run = start({"link": "1"})
    assert run.process.wait(timeout=60) == 2, run.output()
    assert "RunError: /link exited with status 1" in run.output()
    assert run.runs("link") == 1 and (run.state / "crasher.stopped").is_file()


def test_dry_run_with_emulate_starts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    started: list[Any] = []
    monkeypatch.setattr(hardware, "Emulator", lambda *a, **k: started.append(a) or pytest.fail())
    out = tmp_path / "run"
    for transport in ("serial", "udp"):
        args = ["hardware", "--emulate", "--dynamics", "--dry-run", "--transport", transport]
        assert main([*args, "--no-rviz", "-o", str(out)]) == 0
        printed = capsys.readouterr().out
        assert "driver_node --ros-args" in printed and "dynamics_node --ros-args" in printed
        assert "emulated robot is not started" in printed
    assert started == [] and not out.exists()
