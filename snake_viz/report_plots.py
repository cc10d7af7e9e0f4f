"""Draws a comparison report's plots in a process of its own.

``compare_node`` writes the report's numbers (CSV, tables, summary) itself, which takes a
fraction of a second, and hands the plots to this program, which outlives the node: Ctrl-C
stops the node at once however long matplotlib takes on a loaded machine.

    python -m snake_viz.report_plots FOLDER [--robot CONFIG]

Reads ``FOLDER/aligned.csv``, writes ``joint_angles.png``, ``joint_errors.png``,
``traces.png`` (with ``--robot``) and, last, ``plots.log``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from snake_dynamics.errors import SnakeError
from snake_dynamics.model import SnakeModel

from .compare_report import read_aligned, write_plots


def start_plotter(folder: Path, robot_config: Path | None) -> subprocess.Popen[bytes]:
    """Start this program on ``folder`` in a session of its own (a Ctrl-C or SIGTERM to the
    caller's process group does not reach it); its output goes to ``folder/plots.out``."""
    package_root = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(filter(None, (package_root, os.environ.get("PYTHONPATH"))))
    cmd = [sys.executable, "-m", "snake_viz.report_plots", str(folder)]
    if robot_config is not None:
        cmd += ["--robot", str(robot_config)]
    with (folder / "plots.out").open("wb") as out:
        return subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PYTHONPATH": path},
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; exit status 0, or 2 with one line on stderr for a bad folder or robot."""
    parser = argparse.ArgumentParser(
        prog="python -m snake_viz.report_plots", description="draw a comparison report's plots"
    )
    parser.add_argument("folder", type=Path, help="report folder (holding aligned.csv)")
    parser.add_argument("--robot", type=Path, help="robot YAML (adds the traces plot)")
    args = parser.parse_args(argv)
    try:
        aligned = read_aligned(args.folder / "aligned.csv")
        model = SnakeModel.from_yaml(args.robot) if args.robot is not None else None
        written = write_plots(args.folder, aligned, model)
    except (SnakeError, OSError) as exc:
        print(f"report_plots: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {', '.join(p.name for p in written)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
