"""Counting the arithmetic a computation does, by running it on a counting scalar.

A function written for any number type (such as :func:`wheeled_snake.kane_rate`) is run
once with :class:`Counted` numbers; every addition or subtraction, multiplication,
division and elementary function it performs is tallied in an :class:`OperationCount`.
Sign changes are free, as in the usual operation counts of robot dynamics; constants are
created without cost.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable


@dataclasses.dataclass
class OperationCount:
    """Tallies of the operations of one computation.

    Attributes:
        additions: additions and subtractions.
        multiplications: multiplications.
        divisions: divisions.
        functions: elementary function calls (sin, cos).
    """

    additions: int = 0
    multiplications: int = 0
    divisions: int = 0
    functions: int = 0

    def number(self, value: float) -> Counted:
        """A counting scalar holding ``value`` and tallying into this count."""
        return Counted(float(value), self)

    def function(self, f: Callable[[float], float]) -> Callable[[Counted], Counted]:
        """``f`` (e.g. ``math.cos``) on counting scalars, one function call each."""

        def counted(x: Counted) -> Counted:
            self.functions += 1
            return Counted(f(x.value), self)

        return counted

    @property
    def cos(self) -> Callable[[Counted], Counted]:
        """Counted cosine."""
        return self.function(math.cos)

    @property
    def sin(self) -> Callable[[Counted], Counted]:
        """Counted sine."""
        return self.function(math.sin)


def _value(x: Counted | float) -> float:
    return x.value if isinstance(x, Counted) else float(x)


class Counted:
    """A float that tallies the arithmetic done with it (see :class:`OperationCount`)."""

    __slots__ = ("count", "value")

    def __init__(self, value: float, count: OperationCount) -> None:
        self.value = value
        self.count = count

    def __repr__(self) -> str:
        return f"Counted({self.value!r})"

    def __float__(self) -> float:
        return self.value

    def _add(self, value: float) -> Counted:
        self.count.additions += 1
        return Counted(value, self.count)

    def __add__(self, other: Counted | float) -> Counted:
        return self._add(self.value + _value(other))

    def __radd__(self, other: float) -> Counted:
        return self._add(_value(other) + self.value)

    def __sub__(self, other: Counted | float) -> Counted:
        return self._add(self.value - _value(other))

    def __rsub__(self, other: float) -> Counted:
        return self._add(_value(other) - self.value)

    def __mul__(self, other: Counted | float) -> Counted:
        self.count.multiplications += 1
        return Counted(self.value * _value(other), self.count)

    __rmul__ = __mul__

    def __truediv__(self, other: Counted | float) -> Counted:
        self.count.divisions += 1
        return Counted(self.value / _value(other), self.count)

    def __rtruediv__(self, other: float) -> Counted:
        self.count.divisions += 1
        return Counted(_value(other) / self.value, self.count)

    def __neg__(self) -> Counted:
        return Counted(-self.value, self.count)
