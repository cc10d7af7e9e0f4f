"""Child processes that go when ``snake`` goes (Linux ``PR_SET_PDEATHSIG``)."""

from __future__ import annotations

import ctypes
import signal
import sys

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
