"""How long one Ctrl-C takes to stop a whole graph, as JSON on stdout.

Runs ``snake hardware --emulate --dynamics`` (gait_node, driver_node, dynamics_node and
compare_node against the real firmware in simavr: the graph with the most to do at
shutdown, compare_node's report among it), waits until every node is ready and has run for
``--run`` seconds, then sends SIGINT to the process group (as a terminal's Ctrl-C does) and
times the exit. Also reports the runner's own "stopped in" figure, that every node exited
with status 0, and whether the driver logged an I/O error (the emulator vanishing before
it). ``--load N`` keeps N busy processes running meanwhile. Target: under 3 s, loaded.

    python bench/shutdown.py [--repeat 5] [--run 5] [--load 1] [--output FILE.json]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from report import emit  # bench/report.py (this folder is on sys.path)

ROOT = Path(__file__).resolve().parents[1]
SNAKE = Path(sys.executable).parent / "snake"
#: Longest wait for the graph to be ready, and then to exit [s] (a stuck run is a result).
TIMEOUT_S = 120.0


def one_run(run_s: float, folder: Path) -> dict[str, object]:
    """Start the graph, Ctrl-C it ``run_s`` seconds after it is ready; what happened."""
    out = folder / "stdout.txt"
    with out.open("w") as sink:
        process = subprocess.Popen(
            [
                str(SNAKE),
                "hardware",
                "--emulate",
                "--dynamics",
                "--no-rviz",
                "-q",
                "-o",
                str(folder / "logs"),
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=folder,
        )
    deadline = time.monotonic() + TIMEOUT_S
    while "all nodes ready" not in out.read_text():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"the graph did not get ready: {out.read_text()[-2000:]}")
        time.sleep(0.05)
    time.sleep(run_s)
    start = time.monotonic()
    os.killpg(process.pid, signal.SIGINT)
    try:
        status = process.wait(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        status = process.wait()
    elapsed = time.monotonic() - start
    text = out.read_text()
    stopped = re.search(r"stopped in ([\d.]+) s", text)
    driver_log = (folder / "logs" / "driver_node.log").read_text()
    return {
        "exit_s": round(elapsed, 3),
        "runner_stopped_in_s": float(stopped.group(1)) if stopped else None,
        "status": status,
        "nodes_exit_0": text.count("exit status 0"),
        "nodes": len(re.findall(r"exit status -?\d+", text)),
        "driver_io_error": bool(re.search(r"I/O error|Errno 5", driver_log)),
        "report_written": "report on shutdown: wrote"
        in (folder / "logs" / "compare_node.log").read_text(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs (default 5)")
    parser.add_argument("--run", type=float, default=5.0, help="seconds before Ctrl-C")
    parser.add_argument("--load", type=int, default=0, help="busy processes meanwhile")
    parser.add_argument("--output", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    if not SNAKE.exists():
        print(
            f"bench/shutdown.py: {SNAKE} is missing: make (installs the package)", file=sys.stderr
        )
        return 2
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.load)]
    runs = []
    try:
        for k in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="snake-shutdown-") as tmp:
                runs.append(one_run(args.run, Path(tmp)))
            print(f"run {k + 1}/{args.repeat}: {runs[-1]}", file=sys.stderr)
    finally:
        for hog in hogs:
            hog.kill()
    exits = [float(r["exit_s"]) for r in runs]  # type: ignore[arg-type]
    result = {
        "benchmark": "shutdown",
        "graph": "snake hardware --emulate --dynamics",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "load_processes": args.load,
        "run_s": args.run,
        "exit_s": {"median": sorted(exits)[len(exits) // 2], "max": max(exits)},
        "every_node_exit_0": all(r["nodes_exit_0"] == r["nodes"] for r in runs),
        "driver_io_errors": sum(bool(r["driver_io_error"]) for r in runs),
        "reports_written": sum(bool(r["report_written"]) for r in runs),
        "runs": runs,
    }
    emit(result, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
