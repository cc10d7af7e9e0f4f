"""``snake sim``: the simulation graph (the one ``simulation.launch.py`` starts) without
``ros2 launch``, run by :func:`snake_bringup.runner.run_graph`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from snake_ros.paths import load_robot

from ..feasibility import check_robot_config
from ..graph import simulation_graph
from ..runner import run_folder, run_graph
from .options import gaits_note, graph_options, played_gait

if TYPE_CHECKING:
    from .options import Subparsers


def register(sub: Subparsers) -> None:
    """Add ``snake sim`` to the ``snake`` command."""
    p = sub.add_parser(
        "sim", help="run the simulation graph (gait -> MFM dynamics -> ...) without ros2 launch"
    )
    graph_options(p, "sim")
    p.set_defaults(
        run=lambda a: run(
            robot=a.robot,
            gait=a.gait or "",
            gaits=a.gaits,
            rviz=not a.no_rviz,
            use_sim_time=a.use_sim_time,
            duration=a.duration,
            output=a.output,
            quiet=a.quiet,
            dry_run=a.dry_run,
        )
    )


def run(
    *,
    robot: str,
    gait: str,
    gaits: Path | None,
    rviz: bool,
    use_sim_time: bool,
    duration: float | None,
    output: Path | None,
    quiet: bool,
    dry_run: bool,
) -> int:
    """Run the simulation graph until ``duration`` [s] (None: Ctrl-C); logs in ``output``
    (None: ``runs/sim-<robot>-<gait>-<time>``); ``gait`` (empty: the ``gaits`` file's, else
    config/gaits.yaml's) with the ``gaits`` file's gait parameters (None: none).

    Raises:
        GaitsFileError: the ``gaits`` file cannot be played.
        ModelError, CalibrationError: the robot config cannot be read (one line).
    """
    gait, parameters = played_gait(gait, gaits)
    the_robot = load_robot(robot)  # once; handed down
    check_robot_config(the_robot)
    graph = simulation_graph(
        the_robot, gait, rviz=rviz, use_sim_time=use_sim_time, gait_parameters=parameters
    )
    if gaits:
        print(f"{'# ' if dry_run else ''}{gaits_note(gaits, gait, parameters)}")
    out = run_folder(f"sim-{Path(robot).stem}-{gait or 'default'}", output)
    return run_graph(graph, output=out, duration=duration, quiet=quiet, dry_run=dry_run)
