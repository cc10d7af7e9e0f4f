"""``snake demo``: its options, the gait it plays, then one call of
:func:`snake_bringup.demo.demo_once` (the emulated robot, the MFM prediction, the comparison
and the recorder; then the report, the bag and the per-joint RMS error) or, with ``--tour``,
of :func:`snake_bringup.demo.demo_tour`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from snake_dynamics.sim import load_plant
from snake_ros.paths import load_robot, robot_config

from ..demo import DEMO_GAIT, DEMO_GAIT_PARAMETERS, default_plant, demo_once, demo_tour
from .options import (
    compensate_options,
    duration_option,
    gait_option,
    gaits_note,
    gaits_option,
    output_option,
    plant_option,
    played_gait,
    report_warning,
    robot_option,
)

if TYPE_CHECKING:
    from .options import Subparsers


def register(sub: Subparsers) -> None:
    """Add ``snake demo`` to the ``snake`` command."""
    p = sub.add_parser(
        "demo", help="the emulated robot, MFM prediction, comparison and recording, ~20 s"
    )
    duration_option(p, "run time [s] (default: 20)", 20.0)
    gait_option(
        p,
        None,
        f"gait (default: the --gaits file's, else {DEMO_GAIT} with 0.8 rad at 0.6 Hz, "
        "which crawls visibly on the table)",
    )
    gaits_option(p)
    output_option(p, "output folder (default: runs/demo-...)")
    robot_option(
        p,
        "robot_table",
        "robot config of the prediction, the driver and the plant's body (default: "
        "robot_table: robot.yaml with the pots calibrated, free on the floor; e.g. snake "
        "identify's overlay)",
    )
    body = p.add_mutually_exclusive_group()
    plant_option(
        body,
        "the emulated robot's servos, body, pots, floor and pose sensor (default: "
        "config/plant_mujoco.yaml, the table on MuJoCo with every effect the model leaves "
        "out; plant_floor: the same table on the model's own simulator; a robot config with "
        "a fixed tail: config/plant.yaml)",
        None,
    )
    body.add_argument(
        "--no-plant",
        action="store_true",
        help="no plant: the pulses drive nothing and the robot reports the firmware's estimates",
    )
    compensate_options(p)
    p.add_argument(
        "--tour",
        action="store_true",
        help="the whole story (what make demo runs, a few minutes): the demo, snake identify "
        "(servos and floor), the demo with the identified overlay, and compensated; then a "
        "table of the three runs",
    )
    p.set_defaults(
        run=lambda a: run(
            duration=a.duration,
            gait=a.gait or "",
            gaits=a.gaits,
            output=a.output,
            robot=a.robot,
            plant=a.plant,
            no_plant=a.no_plant,
            compensate=a.compensate,
            force=a.force,
            tour=a.tour,
        )
    )


def run(
    *,
    duration: float,
    gait: str,
    gaits: Path | None,
    output: Path | None,
    robot: str,
    plant: Path | None,
    compensate: bool,
    force: bool,
    tour: bool = False,
    no_plant: bool = False,
) -> int:
    """``snake demo``: one run (:func:`snake_bringup.demo.demo_once`), or with ``tour`` the
    whole story (:func:`snake_bringup.demo.demo_tour`), of ``gait`` (empty: the ``gaits``
    file's, else :data:`DEMO_GAIT`) with :data:`DEMO_GAIT_PARAMETERS` (on the table: a robot
    config with a floating base) and the ``gaits`` file's gait parameters over
    config/gaits.yaml's, on the emulated robot of ``plant`` (None: :func:`default_plant`,
    unless ``no_plant``). The robot is read once here and handed down; the plant file is
    checked here, before anything starts. Returns the exit status.

    Raises:
        GaitsFileError: the ``gaits`` file cannot be played.
        ModelError: the robot config or the plant file is invalid (one line naming the file
            and the key).
    """
    the_robot = load_robot(robot)
    plant = None if no_plant else (plant or default_plant(the_robot))
    if plant is not None:
        load_plant(robot_config(str(plant)), the_robot.joint_names)
    gait, from_file = played_gait(gait, gaits, DEMO_GAIT)
    on_table = the_robot.model.base == "floating"
    table = DEMO_GAIT_PARAMETERS if on_table else {}
    parameters = {
        name: {**table.get(name, {}), **from_file.get(name, {})} for name in {**table, **from_file}
    }
    if gaits:
        print(gaits_note(gaits, gait, parameters))
    if tour:
        return demo_tour(
            duration=duration,
            gait=gait,
            gait_parameters=parameters,
            output=output,
            robot=the_robot,
            plant=plant,
            warn=report_warning,
        )
    return demo_once(
        duration=duration,
        gait=gait,
        gait_parameters=parameters,
        output=output,
        robot=the_robot,
        plant=plant,
        compensate=compensate,
        force=force,
        warn=report_warning,
    ).code
