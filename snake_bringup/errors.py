"""The bringup's error base: every error snake_bringup raises on purpose (a graph that cannot
run, an emulator that cannot start, a command-line mistake, ...) derives from
:class:`BringupError`, itself a :class:`snake_dynamics.errors.SnakeError`: the ``snake``
command catches that one base and prints its message on one line."""

from __future__ import annotations

from snake_dynamics.errors import SnakeError


class BringupError(SnakeError):
    """Base class of every error the graphs, the runner, the emulator and the ``snake``
    command raise on purpose; the message says what to fix."""


class UsageError(BringupError):
    """A command-line mistake (an option's value, options that do not go together)."""
