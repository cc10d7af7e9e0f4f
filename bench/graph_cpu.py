"""What each process of ``snake demo``'s graph costs in CPU, and whether the run's clocks held,
as JSON on stdout (and a Markdown table on stderr).

Runs ``snake demo --duration S`` (the recorder, gait_node, driver_node against the real
firmware in simavr with the plant, pose_sensor_node, dynamics_node, compare_node, the
robot_state_publishers) and reads every process of the graph's tree from ``/proc/<pid>/stat``
(user + system CPU, all its threads) when the runner says the graph is running and again
``S - 0.5`` s later. Each process's figure is its CPU seconds per second of that window:
per simulated second too, since the demo runs on the emulated robot's clock, paced to real
time. On a machine shared with other work the wall-time figures (the plant's max behind, the
jumps) are noisy; the CPU seconds of each node are not, so the machine's own load over the
window is reported beside them (``machine_busy``: the fraction of every core busy, from
``/proc/stat``).

From the run's offline report (``report/summary.json``, :mod:`snake_viz.timing`): the largest
jump of gait_node's command stamps and of the robot's telemetry stamps beyond their periods,
and whether the run is trusted; from the plant's end line: the emulated robot's max behind
the wall clock, at and after the graph's start.

    python bench/graph_cpu.py [--seconds 20] [--repeat 1] [--output FILE.json]
                              [--keep DIR] [--clock [--stall S]]

``--keep DIR`` keeps each run's demo folder (bag, reports, logs) and output as ``DIR/run<k>``
for a look at where a jump happened. ``--clock`` also subscribes to /clock and
/joint_commands from this process (one more reader, best effort) and counts the command
steps over ``--stall`` (default ``STALL_S``), and of those the ones /clock itself made (no
/clock message between the two commands): the graph's clock stalled, not gait_node; beside
them the longest step of each (``command_step_max_s``, ``clock_step_max_s``). A command
step over the stall bound with /clock messages inside it is gait_node's own wait.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from report import emit  # bench/report.py (this folder is on sys.path)

SNAKE = Path(sys.executable).parent / "snake"
#: Longest wait for the graph to be running, and then for the demo to end [s].
TIMEOUT_S = 180.0
#: The runner's line once every node is ready and the run's clock starts.
RUNNING = "running until"
#: Poll period of the demo's output [s].
POLL_S = 0.05
TICKS = os.sysconf("SC_CLK_TCK")
#: A command step longer than this is counted by ``--clock`` [s].
STALL_S = 0.06
#: ``--clock``'s queue per topic: 10 s of /clock at 100 Hz [messages].
LISTENER_DEPTH = 1000


class StampLog:
    """The stamps [s] of /clock and /joint_commands, heard from this process while it runs
    (rclpy in a thread of its own, on the demo's ROS domain)."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import JointState

        self.clock: list[float] = []
        self.commands: list[float] = []
        self._context = rclpy.Context()
        self._context.init()
        self._node = rclpy.create_node("graph_cpu_stamps", context=self._context)
        # a deep queue: a listener that waits for a core must not drop the stamps it counts
        # (a /clock message lost here would count as a stall of the graph's clock)
        qos = QoSProfile(
            history=HistoryPolicy.KEEP_LAST,
            depth=LISTENER_DEPTH,
            reliability=ReliabilityPolicy.BEST_EFFORT,
        )
        self._node.create_subscription(
            Clock, "/clock", lambda m: self.clock.append(stamp_s(m.clock)), qos
        )
        self._node.create_subscription(
            JointState,
            "/joint_commands",
            lambda m: self.commands.append(stamp_s(m.header.stamp)),
            qos,
        )
        self._executor = SingleThreadedExecutor(context=self._context)
        self._executor.add_node(self._node)
        self._thread = threading.Thread(target=self._executor.spin, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop listening."""
        self._executor.shutdown()
        self._node.destroy_node()
        self._context.try_shutdown()
        self._thread.join(timeout=5.0)

    def stalls(self, stall_s: float = STALL_S) -> dict[str, float]:
        """Command steps over ``stall_s`` [s], of those the ones with no /clock between, and
        the longest step of the commands' and of /clock's stamps [s]."""
        clock = sorted(set(self.clock))
        commands = sorted(set(self.commands))
        steps = [(a, b) for a, b in itertools.pairwise(commands) if b - a > stall_s]
        of_clock = sum(
            1 for a, b in steps if bisect.bisect_right(clock, a) == bisect.bisect_left(clock, b)
        )
        return {
            "command_steps_over_stall": len(steps),
            "of_them_clock_stalls": of_clock,
            "command_step_max_s": round(longest_step(commands), 4),
            "clock_step_max_s": round(longest_step(clock), 4),
        }


def longest_step(stamps: list[float]) -> float:
    """The longest step between consecutive sorted stamps [s] (0 for fewer than two)."""
    return max((b - a for a, b in itertools.pairwise(stamps)), default=0.0)


def stamp_s(stamp: object) -> float:
    """A builtin_interfaces/Time as seconds."""
    return float(stamp.sec) + float(stamp.nanosec) * 1e-9  # type: ignore[attr-defined]


def children_of() -> dict[int, list[int]]:
    """Every process's children, from /proc/<pid>/stat."""
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            tree.setdefault(int(fields[1]), []).append(int(entry.name))
    return tree


def descendants(root: int) -> list[int]:
    """``root`` and every process below it."""
    tree, out, todo = children_of(), [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += tree.get(pid, [])
    return out


def label(pid: int) -> str:
    """A process's name in the table: the ROS node's, else its program or module."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return f"pid {pid}"
    for arg in argv:
        if arg.startswith("__node:="):
            return arg.removeprefix("__node:=")
    if "-m" in argv:
        return argv[argv.index("-m") + 1].rsplit(".", 1)[-1]
    names = [Path(a).name for a in argv if a]
    if names and names[0].startswith("python") and len(names) > 1:
        return names[1]
    return names[0] if names else f"pid {pid}"


def cpu_seconds(pids: list[int]) -> dict[int, tuple[str, float]]:
    """(label, user + system CPU seconds) of each live process of ``pids``."""
    out = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[pid] = (label(pid), (int(fields[11]) + int(fields[12])) / TICKS)
    return out


def machine_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of every core, from /proc/stat."""
    values = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values)


def one_run(
    seconds: float, folder: Path, clock: bool = False, stall_s: float = STALL_S
) -> dict[str, object]:
    """One demo; the CPU of each process over its running window, the timing figures
    (``clock``: and :meth:`StampLog.stalls` over ``stall_s`` [s])."""
    stamps = StampLog() if clock else None
    out = folder / "stdout.txt"
    with out.open("w") as sink:
        process = subprocess.Popen(
            [str(SNAKE), "demo", "--duration", f"{seconds:g}", "-o", str(folder / "demo")],
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=folder,
        )
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while RUNNING not in out.read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the demo did not start: {out.read_text()[-2000:]}")
            time.sleep(POLL_S)
        start, machine_start = time.monotonic(), machine_ticks()
        before = cpu_seconds(descendants(process.pid))
        time.sleep(seconds - 0.5)
        after = cpu_seconds(descendants(process.pid))
        window = time.monotonic() - start
        busy, total = (b - a for a, b in zip(machine_start, machine_ticks(), strict=True))
        process.wait(timeout=TIMEOUT_S)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if stamps is not None:
            stamps.close()
    text = out.read_text()
    cpu: dict[str, float] = {}
    for pid, (name, spent) in after.items():
        if pid in before:
            cpu[name] = cpu.get(name, 0.0) + spent - before[pid][1]
    summary = json.loads((folder / "demo" / "report" / "summary.json").read_text())
    behind = re.search(r"max_behind_ms=([\d.]+) running_behind_ms=([\d.]+)", text)
    return {
        "window_s": round(window, 2),
        "machine_busy": round(busy / total, 3),
        "cpu_per_s": {k: round(v / window, 3) for k, v in sorted(cpu.items(), key=lambda x: -x[1])},
        "command_jump_s": summary.get("command_jump_s"),
        "clock_jump_s": summary.get("clock_jump_s"),
        "trusted": summary.get("trusted"),
        "max_behind_ms": float(behind.group(1)) if behind else None,
        "running_behind_ms": float(behind.group(2)) if behind else None,
        **(stamps.stalls(stall_s) if stamps is not None else {}),
    }


def table(runs: list[dict[str, object]]) -> str:
    """Markdown: one row per process, one column per run (CPU seconds per second)."""
    names: list[str] = []
    for run in runs:
        names += [n for n in run["cpu_per_s"] if n not in names]  # type: ignore[attr-defined]
    head = "| process | " + " | ".join(f"run {k + 1}" for k in range(len(runs))) + " |"
    lines = [head, "|---|" + "---:|" * len(runs)]
    for name in names:
        cells = [f"{r['cpu_per_s'].get(name, 0.0):.3f}" for r in runs]  # type: ignore[attr-defined]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    for key in ("machine_busy", "command_jump_s", "clock_jump_s", "max_behind_ms",
                "running_behind_ms", "trusted", "command_steps_over_stall",
                "of_them_clock_stalls", "command_step_max_s", "clock_step_max_s"):  # fmt: skip
        if key in runs[0]:
            lines.append(f"| {key} | " + " | ".join(str(r[key]) for r in runs) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="demo duration (default 20)")
    parser.add_argument("--repeat", type=int, default=1, help="runs (default 1)")
    parser.add_argument("--output", type=Path, help="also write the JSON here")
    parser.add_argument("--keep", type=Path, help="keep each run's folder as DIR/run<k>")
    parser.add_argument(
        "--clock", action="store_true", help="also count the command steps /clock made"
    )
    parser.add_argument(
        "--stall",
        type=float,
        default=STALL_S,
        help=f"with --clock: count command steps longer than this [s] (default {STALL_S:g}; "
        "0.03 is the issue's 20 ms beyond the 10 ms period)",
    )
    args = parser.parse_args()
    if not SNAKE.exists():
        print(f"bench/graph_cpu.py: {SNAKE} is missing: run make", file=sys.stderr)
        return 2
    if args.keep is not None and args.keep.exists() and any(args.keep.iterdir()):
        print(
            f"bench/graph_cpu.py: --keep {args.keep} is not empty: name a new folder",
            file=sys.stderr,
        )
        return 2
    runs = []
    for k in range(args.repeat):
        if args.keep is not None:
            folder = args.keep / f"run{k + 1}"
            folder.mkdir(parents=True)
            runs.append(one_run(args.seconds, folder, args.clock, args.stall))
        else:
            with tempfile.TemporaryDirectory(prefix="snake-graph-cpu-") as tmp:
                runs.append(one_run(args.seconds, Path(tmp), args.clock, args.stall))
        print(f"run {k + 1}/{args.repeat} done", file=sys.stderr)
    print(table(runs), file=sys.stderr)
    emit(
        {
            "benchmark": "graph CPU of snake demo",
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
            "seconds": args.seconds,
            **({"stall_s": args.stall} if args.clock else {}),
            "runs": runs,
        },
        args.output,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
