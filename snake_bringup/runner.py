"""Runs a node graph as child processes where ``ros2 launch`` is missing (``snake sim``,
``snake hardware``, ``snake demo``, ``snake replay``): the same :class:`NodeSpec` list the
launch files read, started, watched and stopped.

Start-up: every node runs in its own session (a terminal's Ctrl-C reaches it only through
the runner) and gets SIGTERM if the runner dies. Nodes marked ``starts_first`` (the
recorder) are started and waited for before the others; ``--duration`` counts from the
moment every node of this package has logged :data:`READY_TEXT` (a loaded machine's slow
start-up does not eat into the run).

A required node that exits with an error once every node is ready is handled as its
:attr:`NodeSpec.on_failure` says, and the robot link stays up unless it is the link itself:

- ``restart`` (gait_node, dynamics_node, compare_node, ...): started again after
  :data:`RESTART_DELAYS_S` (1, 2, 4 s: at most three restarts; a node that then ran
  :data:`RECOVERED_AFTER_S` has recovered and its count starts again), each announced in one
  line with the end of its log; after the last, the runner gives up on it with an error
  line and the rest of the graph keeps running. Each run of the node logs to its own file
  (``<name>.log``, ``<name>.restart1.log``, ...).
- ``report`` (the recorder: its bag folder exists, a restart could not record into it): an
  error line; the rest keeps running (``snake bag repair`` reads the bag it left).
- ``stop`` (driver_node, the robot link: a restart would set up and enable the robot without
  an operator; the firmware's watchdog holds or goes limp without commands; replay_node, the
  graph's source): the graph stops.

Nodes given up on make the run end with an error (:class:`RunError`) when it stops. A node
exiting with status 0 has finished (a replay at the end of its bag): the graph stops
normally. A failure during start-up (before every node is ready) stops the graph: a node
that cannot start would not start on a retry either. ``snake hardware --emulate`` also
stops the graph when the emulated robot (simavr) exits.

Everything a run writes goes to its folder (:func:`run_folder`): each node's output in
``<name>.log``, the parameter files in ``params/``, the command lines in ``commands.txt``,
and the nodes' own ROS log files in ``ros_log/`` (their ``ROS_LOG_DIR``).

Stopping (Ctrl-C, ``--duration``, or as above): one SIGINT to every node
but the ``starts_first`` ones, all at once; when they have exited, one SIGINT to those (the
recorder keeps everything the others sent); SIGTERM, then SIGKILL, only for a node that
outlives its wait.
"""

from __future__ import annotations

import contextlib
import datetime as dt_module
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO

import yaml

from snake_ros import READY_TEXT
from snake_ros.paths import PACKAGE

from .errors import BringupError
from .graph import NodeSpec
from .process import die_with_parent

#: How long the nodes of one stop wave get to exit after SIGINT, then after SIGTERM [s].
STOP_WAITS_S = (8.0, 3.0)
#: Longest time from starting a node to its ready line before the run fails [s].
STARTUP_TIMEOUT_S = 120.0
#: How often the runner looks at its children [s].
POLL_S = 0.05
#: Waits before the successive restarts of a failed node [s]; then the runner gives up.
RESTART_DELAYS_S = (1.0, 2.0, 4.0)
#: A node that has run this long since its last start has recovered: its restarts count
#: from zero again [s].
RECOVERED_AFTER_S = 60.0


class RunError(BringupError, RuntimeError):
    """A graph that cannot run: a node missing, failing at start-up or never ready."""


@dataclass
class Child:
    """A node process, its log, the thread copying its output, and whether it is ready."""

    spec: NodeSpec
    process: subprocess.Popen[str]
    log: Path
    copier: threading.Thread
    ready: threading.Event = field(default_factory=threading.Event)
    started: float = field(default_factory=time.monotonic)  # [s], monotonic

    @property
    def reports_ready(self) -> bool:
        """Nodes of this package log :data:`READY_TEXT`; others (RViz, ...) are not waited for."""
        return self.spec.package == PACKAGE


def find_executable(spec: NodeSpec) -> Path | None:
    """Where ``spec``'s executable is installed: ``<prefix>/lib/<package>/<executable>`` for
    each ament prefix (colcon and apt installs), or, for this package installed by pip, the
    console script beside the Python interpreter.
    """
    prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    for prefix in [*prefixes, sys.prefix]:
        candidate = Path(prefix) / "lib" / spec.package / spec.executable
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    if spec.package == PACKAGE:
        candidate = Path(sys.executable).parent / spec.executable
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def skip_reason(spec: NodeSpec, executable: Path | None) -> str | None:
    """Why ``spec`` cannot run here (None if it can)."""
    if executable is None:
        where = f"lib/{spec.package}/{spec.executable} under AMENT_PREFIX_PATH"
        if spec.package == PACKAGE:
            return f"{spec.executable} is not installed (no {where} or beside {sys.executable})"
        return f"not installed (no {where}; it comes with a full ROS 2 install, not from PyPI)"
    if spec.needs_display and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return "no display ($DISPLAY and $WAYLAND_DISPLAY are unset)"
    return None


def ros_command(
    spec: NodeSpec, executable: Path, params_dir: Path
) -> tuple[list[str], dict[Path, str]]:
    """The command line that runs ``spec`` as ``launch_ros`` would, and the parameter files
    it needs written first: dict parameters go to ``params_dir/<name>.<i>.yaml`` (a file
    keeps long strings such as the URDF intact).
    """
    cmd = [str(executable), *spec.arguments, "--ros-args", "-r", f"__node:={spec.name}"]
    if spec.namespace:
        cmd += ["-r", f"__ns:=/{spec.namespace}"]
    files: dict[Path, str] = {}
    for i, params in enumerate(spec.parameters):
        path = params if isinstance(params, Path) else params_dir / f"{spec.name}.{i}.yaml"
        if not isinstance(params, Path):
            files[path] = yaml.safe_dump({"/**": {"ros__parameters": dict(params)}})
        cmd += ["--params-file", str(path)]
    for source, target in spec.remappings:
        cmd += ["-r", f"{source}:={target}"]
    return cmd, files


def _copy_output(stream: IO[str], log: IO[str], prefix: str | None, ready: threading.Event) -> None:
    """Copy a child's output to its log file (and to stdout, prefixed, unless quiet); set
    ``ready`` at its ready line."""
    with log:
        for line in stream:
            log.write(line)
            log.flush()
            if READY_TEXT in line:
                ready.set()
            if prefix is not None:
                print(f"{prefix}{line}", end="", flush=True)


def run_folder(label: str, output: Path | None) -> Path:
    """The folder of a run: ``output``, or ``runs/<label>-<date>-<time>`` without one.
    Everything the run writes goes below it."""
    return output or Path("runs") / f"{label}-{dt_module.datetime.now():%Y%m%d-%H%M%S}"


def node_environment(folder: Path) -> dict[str, str]:
    """The environment of a node whose log goes to ``folder``: this process's, with
    unbuffered Python output and ROS 2's log files in ``folder/ros_log`` (else rcl writes
    them to ``~/.ros/log``, outside the run's folder)."""
    return {**os.environ, "PYTHONUNBUFFERED": "1", "ROS_LOG_DIR": str(folder / "ros_log")}


def start_child(spec: NodeSpec, cmd: list[str], log: Path, quiet: bool) -> Child:
    """Start one node in its own session (so Ctrl-C reaches it only through the runner) and
    the thread that copies its output; its ROS log files go beside ``log``
    (:func:`node_environment`)."""
    process = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
        start_new_session=True,
        preexec_fn=die_with_parent,
        env=node_environment(log.parent),
    )
    assert process.stdout is not None
    ready = threading.Event()
    copier = threading.Thread(
        target=_copy_output,
        args=(process.stdout, log.open("w"), None if quiet else f"[{spec.name}] ", ready),
        daemon=True,
    )
    copier.start()
    return Child(spec, process, log, copier, ready)


def _signal(children: Sequence[Child], sig: int) -> None:
    for child in children:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.process.pid, sig)


def _wait(children: Sequence[Child], seconds: float) -> list[Child]:
    """Wait up to ``seconds`` for ``children`` to exit; the ones still running."""
    deadline = time.monotonic() + seconds
    for child in children:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.process.wait(timeout=max(0.0, deadline - time.monotonic()))
    return [c for c in children if c.process.poll() is None]


def stop_children(children: Sequence[Child]) -> None:
    """Stop every child: SIGINT (the Ctrl-C a node expects) to all but the ``starts_first``
    ones at once, then to those; SIGTERM and then SIGKILL for any that outlives its wait."""
    first = [c for c in children if not c.spec.starts_first]
    last = [c for c in children if c.spec.starts_first]
    for wave in (first, last):
        running = [c for c in wave if c.process.poll() is None]
        _signal(running, signal.SIGINT)
        running = _wait(running, STOP_WAITS_S[0])
        _signal(running, signal.SIGTERM)
        for child in _wait(running, STOP_WAITS_S[1]):
            print(f"{child.spec.full_name} did not stop: killed", file=sys.stderr)
            _signal([child], signal.SIGKILL)
            child.process.wait(timeout=STOP_WAITS_S[1])
    for child in children:
        child.copier.join(timeout=STOP_WAITS_S[1])


def _tail(path: Path, lines: int = 5) -> str:
    text = path.read_text(errors="replace").splitlines() if path.is_file() else []
    return "\n".join(f"    {line}" for line in text[-lines:])


def _failed(child: Child) -> RunError:
    return RunError(
        f"{child.spec.full_name} exited with status {child.process.returncode}; "
        f"the end of {child.log}:\n{_tail(child.log)}"
    )


class _Watch:
    """The runner's view of a running graph: why it should stop, if it should, and the
    restarts of failed nodes (see the module docstring)."""

    def __init__(self, children: list[Child]) -> None:
        self.children = children
        self.signals: list[str] = []
        self.ended: Child | None = None
        self.outside: str | None = None  # something the graph needs, outside it, ended
        self.failures: list[str] = []  # nodes given up on, for the final error
        self.restarts: dict[str, int] = {}  # node -> restarts since it last recovered
        self.due: list[tuple[float, Child]] = []  # (monotonic time [s], failed child)
        self._handled: set[int] = set()  # pids whose exit was handled

    def supervise(self) -> bool:
        """Handle the required nodes that exited (restart, report or stop); True when the
        graph must stop."""
        for child in self.children:
            code = child.process.poll()
            if code is None or child.spec.optional or child.process.pid in self._handled:
                continue
            self._handled.add(child.process.pid)
            name, tail = child.spec.full_name, f"the end of {child.log}:\n{_tail(child.log)}"
            if code == 0 or child.spec.on_failure == "stop":
                self.ended = child
                return True
            count = self.restarts.get(name, 0)
            if time.monotonic() - child.started >= RECOVERED_AFTER_S:
                count = 0
            if child.spec.on_failure == "restart" and count < len(RESTART_DELAYS_S):
                delay = RESTART_DELAYS_S[count]
                self.restarts[name] = count + 1
                self.due.append((time.monotonic() + delay, child))
                print(
                    f"{name} exited with status {code}: restart {count + 1} of "
                    f"{len(RESTART_DELAYS_S)} in {delay:g} s; {tail}",
                    flush=True,
                )
                continue
            why = (
                f"gave up after {count} restarts"
                if child.spec.on_failure == "restart"
                else "not restarted"
            )
            failure = f"{name} exited with status {code}, {why}; {tail}"
            self.failures.append(failure)
            print(f"error: {failure}\nthe rest of the graph keeps running", file=sys.stderr)
        return bool(self.signals) or self.outside is not None

    def restart_due(self, commands: dict[str, list[str]], out: Path, quiet: bool) -> None:
        """Start again the failed nodes whose wait is over."""
        now = time.monotonic()
        for entry in [e for e in self.due if e[0] <= now]:
            self.due.remove(entry)
            old = entry[1]
            name = old.spec.full_name
            log = out / f"{old.spec.name}.restart{self.restarts[name]}.log"
            child = start_child(old.spec, commands[name], log, quiet)
            self.children[self.children.index(old)] = child
            print(f"restarted {name} (pid {child.process.pid}); its log: {log}", flush=True)

    def on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.signals.append(signal.Signals(signum).name)

    def stopping(self) -> bool:
        """A signal came, or a required node exited (kept in :attr:`ended`)."""
        if self.ended is None:
            self.ended = next(
                (c for c in self.children if not c.spec.optional and c.process.poll() is not None),
                None,
            )
        return bool(self.signals) or self.ended is not None

    def wait_ready(self, children: Sequence[Child], started: float) -> bool:
        """Wait until every child of this package in ``children`` is ready; False if the
        graph is stopping first.

        Raises:
            RunError: one is not ready after :data:`STARTUP_TIMEOUT_S`.
        """
        waiting = [c for c in children if c.reports_ready]
        while not all(c.ready.is_set() for c in waiting):
            if self.stopping():
                return False
            if time.monotonic() - started > STARTUP_TIMEOUT_S:
                late = ", ".join(c.spec.full_name for c in waiting if not c.ready.is_set())
                raise RunError(f"not ready after {STARTUP_TIMEOUT_S:g} s: {late} (see the logs)")
            time.sleep(POLL_S)
        return True


def _plan(
    graph: Sequence[NodeSpec], out: Path
) -> tuple[list[tuple[NodeSpec, list[str] | None, str | None]], dict[Path, str]]:
    """Each node's command (None: skipped, with the reason) and the parameter files.

    Raises:
        RunError: a required node is not installed.
    """
    plan: list[tuple[NodeSpec, list[str] | None, str | None]] = []
    files: dict[Path, str] = {}
    for spec in graph:
        exe = find_executable(spec)
        reason = skip_reason(spec, exe)
        if reason is not None and not spec.optional:
            raise RunError(f"cannot start {spec.full_name}: {reason} (pip install . first)")
        cmd = None
        if exe is not None and reason is None:
            cmd, needed = ros_command(spec, exe, out / "params")
            files.update(needed)
        plan.append((spec, cmd, reason))
    return plan, files


def run_graph(
    graph: Sequence[NodeSpec],
    *,
    output: Path,
    duration: float | None = None,
    quiet: bool = False,
    dry_run: bool = False,
    outside: Callable[[], str | None] | None = None,
    on_ready: Callable[[], None] | None = None,
) -> int:
    """Start the graph's nodes, run them for ``duration`` seconds after every node is ready
    (or until Ctrl-C, or until the graph must stop), then stop them all. Failed nodes are
    restarted, reported or stop the graph (module docstring). A required node that exits
    with status 0 has finished (a replay at the end of its bag): the run ends normally.

    Args:
        graph: the nodes.
        output: the run's folder (:func:`run_folder`): logs, parameter files, ROS logs.
        duration: run time after every node is ready [s] (None: until Ctrl-C).
        quiet: only the logs, not the terminal.
        dry_run: print the commands only; start and write nothing.
        outside: polled while the graph runs: why something the graph needs outside it
            (the emulated robot) has ended, or None while it runs; the graph then stops.
        on_ready: called once, when every node is ready.

    Returns:
        0, or 130 after Ctrl-C / SIGTERM.

    Raises:
        RunError: a node is missing, never gets ready, stops the graph with an error, or
            was given up on; or ``outside`` ended.
    """
    plan, files = _plan(graph, output)
    if dry_run:
        for spec, cmd, reason in plan:
            print(shlex.join(cmd) if cmd else f"# {spec.full_name} skipped: {reason}")
        return 0

    output.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        path.chmod(0o600)  # owner only: a parameter file may hold the auth_key
        path.write_text(text)
    (output / "commands.txt").write_text("".join(f"{shlex.join(c)}\n" for _, c, _ in plan if c))
    children: list[Child] = []
    watch = _Watch(children)
    previous = {s: signal.signal(s, watch.on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    start = time.monotonic()
    try:
        first_ready = False
        for spec, cmd, reason in sorted(plan, key=lambda p: not p[0].starts_first):
            if cmd is None:
                print(f"skipped {spec.full_name}: {reason}")
                continue
            if not spec.starts_first and not first_ready:  # the recorder is listening
                if not watch.wait_ready(children, start):
                    break
                first_ready = True
            child = start_child(spec, cmd, output / f"{spec.name}.log", quiet)
            children.append(child)
            print(f"started {spec.full_name} (pid {child.process.pid})", flush=True)
        if watch.wait_ready(children, start):
            print(f"all nodes ready after {time.monotonic() - start:.1f} s", flush=True)
            if on_ready is not None:
                on_ready()
            until = "Ctrl-C" if duration is None else f"{duration:g} s or Ctrl-C"
            print(f"running until {until}; logs in {output}/", flush=True)
            ready = time.monotonic()
            commands = {spec.full_name: cmd for spec, cmd, _ in plan if cmd is not None}
            while not watch.supervise():
                if duration is not None and time.monotonic() - ready >= duration:
                    break
                watch.outside = outside() if outside is not None else None
                watch.restart_due(commands, output, quiet)
                time.sleep(POLL_S)
    finally:
        stopping = time.monotonic()
        stop_children(children)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    for child in children:
        print(f"{child.spec.full_name}: exit status {child.process.returncode}")
    print(
        f"ran {stopping - start:.1f} s, stopped in {time.monotonic() - stopping:.1f} s; "
        f"logs in {output}/"
    )
    if watch.ended is not None and watch.ended.process.returncode != 0:
        raise _failed(watch.ended)
    if watch.outside is not None:
        raise RunError(f"{watch.outside}: the graph stopped")
    if watch.failures:
        raise RunError("; ".join(watch.failures))
    return 130 if watch.signals else 0
