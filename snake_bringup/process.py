"""Child processes that go when ``snake`` goes (Linux ``PR_SET_PDEATHSIG``), and the emulated
robot's, which take the CPU first where the user may let them."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

from .errors import BringupError

#: prctl option: the signal a process gets when its parent dies (linux/prctl.h).
PR_SET_PDEATHSIG = 1
#: libc's prctl, resolved now: a ``preexec_fn`` runs between fork and exec, where loading
#: a library could deadlock on a lock another thread held at the fork.
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None


def die_with_parent() -> None:
    """In a child, before it runs (``preexec_fn``): get SIGTERM if the parent dies (Linux;
    elsewhere nothing)."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM)


#: The emulated robot's CPU priority where the user may raise it: a real robot has its own
#: processor, which the host's nodes cannot take, while the emulator shares the host's cores.
#: A real-time policy (round robin, the lowest real-time priority) runs it as soon as it
#: wakes; the kernel's real-time throttling (95 % of a core by default) bounds it.
ROBOT_RT_PRIORITY = 1
#: Where no real-time policy is allowed: a higher weight under the normal policy (which
#: still lets it wait a few time slices for a core).
ROBOT_NICE = -10


#: The environment variable that keeps the emulated robot at the parent's priority
#: ("normal"; default "raised"): to see how the stack copes with a robot that falls behind.
ROBOT_PRIORITY_ENV = "SNAKE_ROBOT_PRIORITY"


def robot_priority_raised() -> bool:
    """Whether the emulated robot's processes raise their priority (:data:`ROBOT_PRIORITY_ENV`).

    Raises:
        BringupError: the variable is neither "raised" nor "normal".
    """
    value = os.environ.get(ROBOT_PRIORITY_ENV, "raised")
    if value not in ("raised", "normal"):
        raise BringupError(f"{ROBOT_PRIORITY_ENV} must be raised or normal, got {value!r}")
    return value == "raised"


def raise_robot_priority() -> None:
    """This process at :data:`ROBOT_RT_PRIORITY` where the user may (root, CAP_SYS_NICE or
    RLIMIT_RTPRIO), else at :data:`ROBOT_NICE` where the user may (RLIMIT_NICE), else as it
    was (:func:`priority` tells which); nothing where :data:`ROBOT_PRIORITY_ENV` says
    "normal". Threads it starts later inherit it. (The Emulator checks the variable before it
    starts the robot's processes, so a wrong value raises there, not here.)"""
    if not robot_priority_raised():
        return
    try:
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(ROBOT_RT_PRIORITY))
    except OSError:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, 0, ROBOT_NICE)


def robot_process() -> None:
    """In simavr's runner before it runs (``preexec_fn``): :func:`die_with_parent` and
    :func:`raise_robot_priority`. (The plant raises its own once its kernels are compiled:
    a compilation at a real-time priority would hold a core for seconds.)"""
    die_with_parent()
    raise_robot_priority()


def priority(pid: int = 0) -> str:
    """A process's CPU priority as one word: ``rr:P`` (round robin, real-time priority P),
    ``fifo:P``, or ``nice:N`` (the normal policy at nice N)."""
    policy = os.sched_getscheduler(pid)
    if policy in (os.SCHED_RR, os.SCHED_FIFO):
        kind = "rr" if policy == os.SCHED_RR else "fifo"
        return f"{kind}:{os.sched_getparam(pid).sched_priority}"
    return f"nice:{os.getpriority(os.PRIO_PROCESS, pid)}"
