"""What a test module leaves running: the processes its tests started that are still up when
it ends (the node of a test that failed before its own teardown, a bring-up whose teardown
timed out). Such a process keeps publishing on the module's ROS domain after the domain is
handed to the next module, and holds Fast DDS's shared-memory ports meanwhile."""

from __future__ import annotations

import psutil

#: Python's own helper processes, which live as long as the interpreter that started them.
INTERPRETER_HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


def running_children() -> set[tuple[int, float]]:
    """This process's descendants now, each as (pid, start time): what a module may keep."""
    found = set()
    for child in psutil.Process().children(recursive=True):
        try:
            found.add((child.pid, child.create_time()))
        except psutil.NoSuchProcess:  # gone meanwhile
            continue
    return found


def reap_children(keep: set[tuple[int, float]], timeout: float = 10.0) -> list[str]:
    """Kill every descendant of this process that is running and not in ``keep`` (from
    :func:`running_children` when the module began), and wait up to ``timeout`` seconds for
    them to go.

    Returns:
        Their command lines, cut to 160 characters (empty when nothing was left running).
    """
    left: list[psutil.Process] = []
    names: list[str] = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() == psutil.STATUS_ZOMBIE or (child.pid, child.create_time()) in keep:
                continue
            cmdline = " ".join(child.cmdline())
            if any(helper in cmdline for helper in INTERPRETER_HELPERS):
                continue
            child.kill()
        except psutil.NoSuchProcess:  # gone meanwhile: nothing was left
            continue
        left.append(child)
        names.append(cmdline[:160])
    psutil.wait_procs(left, timeout=timeout)
    return names
