"""``snake demo``: the real firmware in simavr driven by the gait, its servos moving the
robot's simulated body (the plant) and measured on their pots, the MFM prediction beside it,
the comparison and the recorder; then the report, the bag and the per-joint RMS error."""

from __future__ import annotations

import datetime as dt_module
from pathlib import Path
from typing import TYPE_CHECKING

from snake_dynamics.gaits import GAITS
from snake_dynamics.model import SnakeModel
from snake_ros.paths import robot_config
from snake_viz.compare import MEASURED_TOPIC

from ..comparison import compare_bag
from ..emulator import Emulator
from ..feasibility import check_servos_follow
from ..graph import DESIRED, demo_graph
from ..runner import run_graph
from .options import compensate_options, positive, report_warning

if TYPE_CHECKING:
    from .options import Subparsers

#: The demo's gait: it travels about 10 cm/s on the table (bench/README.md).
DEMO_GAIT = "sidewinding"


def register(sub: Subparsers) -> None:
    """Add ``snake demo`` to the ``snake`` command."""
    p = sub.add_parser(
        "demo", help="the emulated robot, MFM prediction, comparison and recording, ~20 s"
    )
    p.add_argument("--duration", type=positive, default=20.0, help="run time [s] (default: 20)")
    p.add_argument(
        "--gait",
        choices=sorted(GAITS),
        default=DEMO_GAIT,
        help=f"gait, with config/gaits.yaml's parameters (default: {DEMO_GAIT}, which crawls "
        "visibly on the table)",
    )
    p.add_argument("--output", "-o", type=Path, help="output folder (default: runs/demo-...)")
    p.add_argument(
        "--robot",
        default="robot_table",
        help="robot config of the prediction, the driver and the plant's body (default: "
        "robot_table: robot.yaml with the pots calibrated, free on the floor; e.g. snake "
        "identify's overlay)",
    )
    body = p.add_mutually_exclusive_group()
    body.add_argument(
        "--plant",
        type=Path,
        help="the emulated robot's servos, body, pots, floor and pose sensor (default: "
        "config/plant_floor.yaml; a robot config with a fixed tail: config/plant.yaml)",
    )
    body.add_argument(
        "--no-plant",
        action="store_true",
        help="no plant: the pulses drive nothing and the robot reports the firmware's estimates",
    )
    compensate_options(p)
    p.set_defaults(
        run=lambda a: run(
            duration=a.duration,
            gait=a.gait,
            output=a.output,
            robot=a.robot,
            plant=None if a.no_plant else (a.plant or default_plant(a.robot)),
            compensate=a.compensate,
            force=a.force,
        )
    )


def default_plant(robot: str) -> Path:
    """The demo's plant for ``robot``: the table (config/plant_floor.yaml) under a robot
    that lies on a floor, the fixed-tail plant (config/plant.yaml) under any other."""
    model = SnakeModel.from_yaml(robot_config(robot))
    on_floor = model.base == "floating" and model.ground is not None and not model.wheels
    return robot_config("plant_floor" if on_floor else "plant")


def run(
    *,
    duration: float,
    gait: str,
    output: Path | None,
    robot: str,
    plant: Path | None,
    compensate: bool,
    force: bool,
) -> int:
    """Run the demo graph on the emulated robot for ``duration`` seconds, then report: the
    prediction against the robot, and the robot against the desired gait.

    Args:
        gait: gait name; empty for the one in config/gaits.yaml.
        output: the run's folder (None: ``runs/demo-<time>``): ``bag/``, ``logs/``, the live
            ``compare/`` report and the offline ``report/``.
        robot: robot config of the prediction, the driver and the plant's body.
        plant: the emulated robot's plant file (None: no plant).
        compensate: commands pre-shaped for the servos of ``robot`` (docs/mfm.md eq. 213).
        force: run a gait the servos cannot follow (eq. 215) instead of refusing it.

    Returns:
        The graph's exit status (0, or 130 after Ctrl-C).

    Raises:
        InfeasibleGaitError: the servos cannot follow the gait, without ``force``.
    """
    warning = check_servos_follow(robot, gait, force=force)
    if warning:
        report_warning(warning)
    out = output or Path("runs") / f"demo-{dt_module.datetime.now():%Y%m%d-%H%M%S}"
    bag = out / "bag"
    with Emulator(plant=plant, robot=robot) as emulator:
        body = f", its servos moving the plant of {plant}" if plant else ", no plant"
        print(f"emulated robot: the ATmega2560 firmware in simavr on {emulator.endpoint}{body}")
        graph = demo_graph(emulator.endpoint, out, gait=gait, robot=robot, compensate=compensate)
        code = run_graph(
            graph, output=out / "logs", duration=duration, quiet=True, outside=emulator.exit_reason
        )
    if plant:
        print(f"plant: {emulator.plant_report or 'no report (it did not end normally)'}")
    if code not in (0, 130):
        return code
    report = compare_bag(bag, out / "report", robot_config=robot)
    print()
    print("per-joint error, MFM prediction vs the emulated robot (from the recorded bag):")
    print(report.table())
    tracking = compare_bag(
        bag, out / "tracking", robot_config=robot, topics=(DESIRED[1], MEASURED_TOPIC), plots=False
    )
    shaped = "compensated commands" if compensate else "the gait as commands"
    print()
    print(f"per-joint error, the emulated robot vs the desired gait ({shaped}):")
    print(tracking.table())
    print()
    print(f"comparison report: {report.folder}/ (live report of compare_node: {out / 'compare'}/)")
    print(f"tracking report:   {tracking.folder}/ (the robot against /joint_desired)")
    print(f"bag:               {bag}/")
    print(f"replay it:         snake replay {bag} --loop    (then: snake view)")
    print(f"compare offline:   snake compare {bag}")
    print("web view, live:    snake view   (beside snake hardware --emulate --dynamics)")
    return code
