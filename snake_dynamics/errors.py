"""Exception hierarchy of the dynamics core: libraries raise, entry points print one line."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .integrators import SimulationResult


class SnakeDynamicsError(Exception):
    """Base class of every error the dynamics core raises on purpose."""


class ModelError(SnakeDynamicsError, ValueError):
    """A robot description that cannot describe a physical snake."""


class StateError(SnakeDynamicsError, ValueError):
    """A joint state (q, q_dot, tau, ...) of the wrong shape or with non-finite values."""


class SingularConfigurationError(StateError):
    """A shape where the kinematic snake's local connection is not defined (its wheel
    constraints are dependent there); the message says which and what to do instead."""


class GaitError(SnakeDynamicsError, ValueError):
    """A gait name or gait parameter that cannot be used."""


class SimulationError(SnakeDynamicsError, RuntimeError):
    """A simulation that cannot go on (bad settings, or the state left the finite numbers)."""


class IdentificationError(SnakeDynamicsError, ValueError):
    """A recording or experiment that cannot identify a servo; the message says why."""


class DivergenceError(SimulationError):
    """A run whose state left the finite numbers; it keeps the finite part of the run.

    Attributes:
        t: time of the first sample that is not finite [s].
        result: the run up to the sample before it (t = 0, dt, ..., t - dt).
    """

    def __init__(self, message: str, t: float, result: SimulationResult) -> None:
        super().__init__(message)
        self.t = t
        self.result = result
