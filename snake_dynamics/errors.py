"""Exception hierarchy of the dynamics core: libraries raise, entry points print one line."""

from __future__ import annotations


class SnakeDynamicsError(Exception):
    """Base class of every error the dynamics core raises on purpose."""


class ModelError(SnakeDynamicsError, ValueError):
    """A robot description that cannot describe a physical snake."""


class StateError(SnakeDynamicsError, ValueError):
    """A joint state (q, q_dot, tau, ...) of the wrong shape or with non-finite values."""


class GaitError(SnakeDynamicsError, ValueError):
    """A gait name or gait parameter that cannot be used."""


class SimulationError(SnakeDynamicsError, RuntimeError):
    """A simulation that cannot go on (bad settings, or the state left the finite numbers)."""
