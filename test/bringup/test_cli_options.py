"""Every ``snake`` option is named once: an option several subcommands take is declared by
one function of ``snake_bringup/cli/options.py``, never again in a subcommand's module.

Reference: the source itself (every ``add_argument`` call in ``snake_bringup/cli``, read with
``ast``), and the parser ``snake`` builds (which subcommands take each option)."""

from __future__ import annotations

import argparse
import ast
from collections import defaultdict
from pathlib import Path

from snake_bringup.cli import build_parser

CLI = Path(__file__).resolve().parents[2] / "snake_bringup" / "cli"
#: Two options that share a name only: ``snake view``'s web server port, the robot link's
#: serial device or bridge port.
NAMESAKES = {"--port"}


def declarations() -> dict[str, list[str]]:
    """Option string -> the ``module:line`` of each ``add_argument`` naming it."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and str(arg.value).startswith("-"):
                        found[str(arg.value)].append(f"{path.name}:{node.lineno}")
    return found


def test_every_option_is_named_in_one_place() -> None:
    found = declarations()
    assert {"--robot", "--output", "--scheduler", "--set"} <= set(found)  # the scan sees them
    twice = {name: where for name, where in found.items() if len(where) > 1}
    assert set(twice) <= NAMESAKES, twice


def test_options_of_several_subcommands_live_in_options_py() -> None:
    """An option that two or more subcommands take is declared in options.py (or is one of
    the :data:`NAMESAKES`)."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    takers: dict[str, set[str]] = defaultdict(set)
    for name, sub in commands.choices.items():
        for action in sub._actions:
            for option in action.option_strings:
                if option.startswith("--") and option != "--help":
                    takers[option].add(name)
    shared = {option for option, names in takers.items() if len(names) > 1}
    assert {"--robot", "--output", "--quiet", "--scheduler", "--duration"} <= shared
    found = declarations()
    elsewhere = {
        option: found[option]
        for option in shared - NAMESAKES
        if any(not where.startswith("options.py:") for where in found[option])
    }
    assert not elsewhere, elsewhere
