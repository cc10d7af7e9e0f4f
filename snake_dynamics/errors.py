"""The project's error base and the dynamics core's errors: libraries raise, entry points
(the ``snake`` command, the nodes) catch :class:`SnakeError` and print its message on one line.

:class:`SnakeError` lives here, in the lowest package, so that every package of the project
(the driver, the viewer, the bringup) derives its own errors from it.
"""

from __future__ import annotations


class SnakeError(Exception):
    """Base class of every error mfm_snake raises on purpose: a message a user can act on."""


class SnakeDynamicsError(SnakeError):
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
