"""The one way the package compiles a kernel: numba's njit with an on-disk cache.

Every compiled module (:mod:`snake_dynamics.mfm.spatial`, :mod:`snake_dynamics.ground.kernel`,
the floating, flexible and simulator kernels) decorates its kernels with :func:`compiled`,
so the flags are written once. ``cache=True``: the first call in a fresh checkout compiles
for a few seconds, later processes load the cache (which does not notice a change in a
callee of another module: delete the ``__pycache__/*.nb[ic]`` files after editing one).

A kernel's part that takes the floating workspace (a tuple of 19 arrays) is :func:`inlined`
into its compiled callers: a call copies every array's pointer, shape and strides, about a
sixth of the crawl's rate (bench/notes/2026-12-07-servo-crawl-kernel.md). The floating
kernels inline the spatial kernels they share with the fixed base through
:func:`inlined_twin` (another 3 % of the rate).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar, cast

import numba

_F = TypeVar("_F", bound=Callable[..., Any])


_FLAGS: dict[str, Any] = {"cache": True, "fastmath": True, "nogil": True, "error_model": "numpy"}
#: numba's IR inlining where numba is at least requirements.txt's 0.68 (the crawl compiles in
#: 19 s of CPU there, as without it). Debian 12's numba 0.56 had not compiled the crawl with
#: it after 10 min (`snake simulate --ground` in test_debian_python; 30 s without), so an
#: older numba calls these kernels instead: the same results, a sixth slower.
INLINE: Literal["always", "never"] = "always" if numba.version_info.short >= (0, 68) else "never"


def compiled(fn: _F) -> _F:
    """numba.njit with an on-disk cache, typed for mypy."""
    return cast(_F, numba.njit(**_FLAGS)(fn))


def inlined(fn: _F) -> _F:
    """:func:`compiled`, and inlined into every compiled caller (numba's ``inline="always"``,
    at the IR level; see :data:`INLINE`) instead of called; a call from Python runs it as
    :func:`compiled` does."""
    return cast(_F, numba.njit(inline=INLINE, **_FLAGS)(fn))


def inlined_twin(kernel: _F) -> _F:
    """The :func:`compiled` ``kernel``'s own Python function again, :func:`inlined`: for the
    callers of a kernel whose other callers keep calling it (the floating base inlines
    :mod:`snake_dynamics.mfm.spatial`'s kernels, the fixed base calls them). Both share the
    kernel's source, and its cache (the callee's code is the same either way)."""
    source: _F = cast(Any, kernel).py_func
    return inlined(source)
