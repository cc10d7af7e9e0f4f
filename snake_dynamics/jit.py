"""The one way the package compiles a kernel: numba's njit with an on-disk cache.

Every compiled module (:mod:`snake_dynamics.mfm.spatial`, :mod:`snake_dynamics.ground.kernel`,
the floating, flexible and simulator kernels) decorates its kernels with :func:`compiled`,
so the flags are written once. ``cache=True``: the first call in a fresh checkout compiles
for a few seconds, later processes load the cache (which does not notice a change in a
callee of another module: delete the ``__pycache__/*.nb[ic]`` files after editing one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

_F = TypeVar("_F", bound=Callable[..., Any])


def compiled(fn: _F) -> _F:
    """numba.njit with an on-disk cache, typed for mypy."""
    return cast(_F, numba.njit(cache=True, fastmath=True, nogil=True, error_model="numpy")(fn))
