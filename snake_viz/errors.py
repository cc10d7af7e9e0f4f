"""The viewer's error base: every error snake_viz raises on purpose derives from
:class:`VizError`, itself a :class:`snake_dynamics.errors.SnakeError` (the project's one base,
which the ``snake`` command and the nodes catch at their boundary)."""

from __future__ import annotations

from snake_dynamics.errors import SnakeError


class VizError(SnakeError):
    """Base class of every error of the comparison, bags and views; the message says what
    to fix."""
