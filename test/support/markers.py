"""The markers kept honest: what a run that leaves a marker's tests out takes away (rclpy,
the firmware's programs, Chromium), and pytest's reading of ``-m`` to tell which it leaves
out. test/conftest.py applies it in ``pytest_configure``."""

from __future__ import annotations

import functools
import importlib.abc
import itertools
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from _pytest.mark.expression import Expression  # -m's own parser (pytest is pinned)

#: The markers of what a test needs (registered in pyproject.toml).
NEEDS = ("ros", "simavr", "browser", "slow")
#: The markers of how `make test` schedules a live test (pyproject.toml): they need nothing,
#: so a ``-m`` may name them without leaving out any marker of NEEDS.
SCHEDULING = ("parallel",)
#: The programs a run without a marker's tests replaces by stand-ins that fail: every
#: firmware build and run (host or AVR, the emulator's too) starts with make.
BLOCKED_PROGRAMS = {
    "simavr": ("make", "avr-gcc", "simavr"),
    "browser": ("chromium", "chromium-browser", "google-chrome"),
}
#: RMW_IMPLEMENTATION of a run without the ros tests: rcl refuses it, so a node or any
#: process that imports rclpy exits at once (status 102, naming this value).
BLOCKED_RMW = "rmw_none_this_run_leaves_out_the_tests_marked_ros"


def _carries(marks: frozenset[str], name: str, /, **kwargs: object) -> bool:
    return not kwargs and name in marks


def leaves_out(markexpr: str, marker: str) -> bool:
    """Whether ``-m markexpr`` selects no test marked ``marker``, whatever other markers of
    NEEDS or SCHEDULING it carries too."""
    if not markexpr:
        return False
    expression = Expression.compile(markexpr)
    others = [m for m in (*NEEDS, *SCHEDULING) if m != marker]
    return not any(
        expression.evaluate(functools.partial(_carries, frozenset({marker, *extra})))
        for k in range(len(others) + 1)
        for extra in itertools.combinations(others, k)
    )


class NoRclpy(importlib.abc.MetaPathFinder):
    """Imports of rclpy fail, as on a machine without ROS 2: a test module that imports it
    with ``pytest.importorskip`` is skipped, any other use is an error naming the marker."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> None:
        if fullname.partition(".")[0] == "rclpy":
            raise ModuleNotFoundError(
                "rclpy is blocked: this run leaves out the tests marked ros (as if ROS 2 were "
                "not installed)",
                name=fullname,
            )


def stand_ins(folder: Path, marker: str) -> list[str]:
    """Failing stand-ins in ``folder`` for the programs of ``marker``'s tests; their names."""
    for program in BLOCKED_PROGRAMS[marker]:
        script = folder / program
        script.write_text(
            f"#!/bin/sh\necho '{program} is blocked: this run leaves out the tests marked "
            f"{marker}; mark a test that runs it @pytest.mark.{marker}' >&2\nexit 127\n"
        )
        script.chmod(0o755)
    return list(BLOCKED_PROGRAMS[marker])
