"""The driver's error base: every error snake_driver raises on purpose derives from
:class:`DriverError`, itself a :class:`snake_dynamics.errors.SnakeError` (the project's one
base, which the ``snake`` command and the nodes catch at their boundary)."""

from __future__ import annotations

from snake_dynamics.errors import SnakeError


class DriverError(SnakeError):
    """Base class of every error the servo driver (protocol, transports, calibration) raises
    on purpose; the message says what to fix."""
