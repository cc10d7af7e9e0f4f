"""The small sweep the cluster tests run: its grid, its command and the points it wrote."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from support import cli

#: 2 x 3 points of 4 s simulated (about 0.6 s each): slow enough to kill a worker holding one.
GRID = [
    "--x",
    "amplitude=0.3:0.9:2",
    "--y",
    "frequency=0.5:1.0:3",
    "--duration",
    "4",
    "--no-plots",
]
POINTS = 6


def snake_command(*args: str) -> list[str]:
    """``snake sweep`` of the grid, with ``args``."""
    return [*cli.SNAKE, "sweep", *GRID, *args]


def snake(*args: str) -> subprocess.CompletedProcess[str]:
    """``snake sweep`` of the grid, with ``args``, run to its end."""
    return cli.snake("sweep", *GRID, *args)


def records(folder: Path) -> list[dict[str, Any]]:
    """Every line of ``points.jsonl``, in order (one per point a run finished)."""
    return [json.loads(line) for line in (folder / "points.jsonl").read_text().splitlines()]
