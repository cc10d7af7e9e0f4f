"""``snake demo``'s work: one run of the demo graph on the emulated robot (the real firmware
in simavr driven by the gait, its servos moving the robot's simulated body, the plant,
measured on their pots; the MFM prediction beside it, the comparison and the recorder), then
its reports; and the tour (``snake demo --tour``, ``make demo``): the demo, ``snake
identify``, the demo with the identified overlay and compensated, and a table of the three
runs: the reality gap between the prediction and the robot, and between the robot and the
gait, before and after identification and compensation.

On the table the emulated robot is config/plant_mujoco.yaml, a plant that is not the model (its
body, floor and joints on MuJoCo, every effect the model leaves out at its default;
docs/hardware.md, "A plant that is not the model"); ``--plant plant_floor`` is the table on the
robot config's own simulator with other numbers."""

from __future__ import annotations

import datetime as dt_module
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from snake_dynamics.robot import Robot
from snake_ros.paths import load_robot, robot_config
from snake_viz.compare import MEASURED_TOPIC
from snake_viz.compare_report import ReportSummary
from snake_viz.path_compare import SIM_CLOCK_MAX_AHEAD_S

from .comparison import compare_bag
from .emulator import Emulator
from .feasibility import check_servos_follow
from .graph import DESIRED, demo_graph
from .identification.commands import identify
from .runner import run_graph

#: The demo's gait: lateral undulation, which crawls about 5 cm/s head first on the table
#: (bench/README.md).
DEMO_GAIT = "serpenoid"
#: The demo's parameters of its gaits, over config/gaits.yaml's: the serpenoid the floor
#: stage of ``snake identify`` crawls. The table robot's flat-bottomed bodies stay upright
#: and slide where cylinders rolled: sidewinding with a pitch wave over 0.1 rad puts a servo
#: of the table's (robot_table_true) or of its identified overlay on its torque-speed line
#: more than a tenth of a period (eq. 217), and with 0.1 rad the robot turns on the spot
#: (heading drifts of 110-300 deg in 13 s). This one: under 0.5 % of the run on the line,
#: 5.4 cm/s straight ahead (`snake simulate --robot robot_table_true --ground`).
DEMO_GAIT_PARAMETERS: dict[str, dict[str, float]] = {
    "serpenoid": {"amplitude": 0.8, "frequency": 0.6}
}


def default_plant(robot: Robot) -> Path:
    """The demo's plant for ``robot``: the table on MuJoCo with every effect the model leaves
    out (config/plant_mujoco.yaml) under a robot that lies on a floor, the fixed-tail plant
    (config/plant.yaml) under any other. ``--plant plant_floor`` is the same table on the
    robot config's own MFM simulator."""
    model = robot.model
    on_floor = model.base == "floating" and model.ground is not None and not model.wheels
    return robot_config("plant_mujoco" if on_floor else "plant")


@dataclass(frozen=True)
class DemoRun:
    """What one demo run left: the graph's exit status and, after a normal end, its reports
    (the prediction against the robot; the robot against the desired gait)."""

    code: int
    report: ReportSummary | None = None
    tracking: ReportSummary | None = None


def demo_once(
    *,
    duration: float,
    gait: str,
    gait_parameters: Mapping[str, Mapping[str, float]],
    output: Path | None,
    robot: Robot,
    plant: Path | None,
    compensate: bool,
    force: bool,
    warn: Callable[[str], None],
) -> DemoRun:
    """Run the demo graph on the emulated robot for ``duration`` seconds, then report: the
    prediction against the robot, and the robot against the desired gait.

    Args:
        gait: gait name; empty for the one in config/gaits.yaml.
        gait_parameters: gait parameters by gait, replacing config/gaits.yaml's.
        output: the run's folder (None: ``runs/demo-<time>``): ``bag/``, ``logs/``, the live
            ``compare/`` report and the offline ``report/``.
        robot: the robot (read once by the command) of the prediction, the driver and the
            plant's body.
        plant: the emulated robot's plant file (None: no plant).
        compensate: commands pre-shaped for the servos of ``robot`` (docs/mfm.md eq. 213).
        force: run a gait the servos cannot follow (eq. 215) instead of refusing it.
        warn: says a warning (e.g. a gait the servos follow only just) in one line.

    Returns:
        The graph's exit status (0, or 130 after Ctrl-C) and the reports.

    Raises:
        InfeasibleGaitError: the servos cannot follow the gait, without ``force``.
    """
    warning = check_servos_follow(robot, gait, force=force, overrides=gait_parameters)
    if warning:
        warn(warning)
    out = output or Path("runs") / f"demo-{dt_module.datetime.now():%Y%m%d-%H%M%S}"
    bag = out / "bag"
    with Emulator(plant=plant, robot=str(robot.path)) as emulator:
        body = f", its servos moving the plant of {plant}" if plant else ", no plant"
        print(f"emulated robot: the ATmega2560 firmware in simavr on {emulator.endpoint}{body}")
        graph = demo_graph(
            emulator.endpoint,
            out,
            gait=gait,
            robot=robot,
            compensate=compensate,
            gait_parameters=gait_parameters,
        )
        code = run_graph(
            graph,
            output=out / "logs",
            duration=duration,
            quiet=True,
            outside=emulator.exit_reason,
            on_ready=emulator.graph_ready,
        )
    if plant:
        print(f"plant: {emulator.plant_report or 'no report (it did not end normally)'}")
    if code not in (0, 130):
        return DemoRun(code)
    # the recorder stamps arrivals on the robot's /clock, which lags its poses under load
    ahead = SIM_CLOCK_MAX_AHEAD_S
    report = compare_bag(bag, out / "report", robot, pose_max_ahead=ahead)
    print()
    print("per-joint error, MFM prediction vs the emulated robot (from the recorded bag):")
    print(report.table())
    tracking = compare_bag(
        bag,
        out / "tracking",
        robot,
        topics=(DESIRED[1], MEASURED_TOPIC),
        plots=False,
        pose_max_ahead=ahead,
    )
    shaped = "compensated commands" if compensate else "the gait as commands"
    print()
    print(f"per-joint error, the emulated robot vs the desired gait ({shaped}):")
    print(replace(tracking, travel=None, path=None, timing=None).table())
    print()
    print(f"comparison report: {report.folder}/ (live report of compare_node: {out / 'compare'}/)")
    print(f"tracking report:   {tracking.folder}/ (the robot against /joint_desired)")
    print(f"bag:               {bag}/")
    print(f"replay it:         snake replay {bag} --loop    (then: snake view)")
    print(f"compare offline:   snake compare {bag}")
    print("web view, live:    snake view   (beside snake hardware --emulate --dynamics)")
    return DemoRun(code, report, tracking)


def _joints_rms(summary: ReportSummary | None) -> str:
    """The RMS over every joint of the per-joint RMS errors [deg], or n/a."""
    values = [r for r in summary.rms if math.isfinite(r)] if summary is not None else []
    if not values:
        return "n/a"
    return f"{math.degrees(math.sqrt(sum(r * r for r in values) / len(values))):.2f}"


def tour_table(runs: Sequence[tuple[str, DemoRun]]) -> str:
    """The tour's summary: per run, the joints' RMS error of the prediction against the robot
    and of the robot against the gait, the predicted and measured travel, the path error,
    and whether the run's timing held (untrusted: its commands or clock jumped)."""
    lines = [
        f"{'run':<28} {'prediction vs robot':>19} {'robot vs gait':>13} "
        f"{'travel predicted / measured':>28} {'path error':>10} {'timing':>9}",
        f"{'':<28} {'RMS [deg]':>19} {'RMS [deg]':>13} {'[m]':>28} {'RMS [cm]':>10} {'':>9}",
    ]
    for label, result in runs:
        path = result.report.path if result.report is not None else None
        metrics = path.comparison.metrics if path is not None and path.comparison else None
        travel = (
            f"{metrics.predicted.displacement:.3f} / {metrics.measured.displacement:.3f}"
            if metrics is not None
            else "n/a"
        )
        error = f"{metrics.rms_error * 100:.1f}" if metrics is not None else "n/a"
        timing = result.report.timing if result.report is not None else None
        held = "n/a" if timing is None else "trusted" if timing.trusted else "UNTRUSTED"
        lines.append(
            f"{label:<28} {_joints_rms(result.report):>19} {_joints_rms(result.tracking):>13} "
            f"{travel:>28} {error:>10} {held:>9}"
        )
    return "\n".join(lines)


def demo_tour(
    *,
    duration: float,
    gait: str,
    gait_parameters: Mapping[str, Mapping[str, float]],
    output: Path | None,
    robot: Robot,
    plant: Path | None,
    warn: Callable[[str], None],
) -> int:
    """The whole story on the emulated robot: the demo with the robot config's servos and
    floor, ``snake identify`` (servos, then the floor), the demo with the identified overlay,
    and with compensated commands; then a table of the three runs.

    Returns:
        0, or the first failing run's status.
    """
    out = output or Path("runs") / f"demo-tour-{dt_module.datetime.now():%Y%m%d-%H%M%S}"
    runs: list[tuple[str, DemoRun]] = []

    def stage(title: str, label: str, folder: str, config: Robot, compensate: bool) -> int:
        print(f"== {title}")
        result = demo_once(
            duration=duration,
            gait=gait,
            gait_parameters=gait_parameters,
            output=out / folder,
            robot=config,
            plant=plant,
            compensate=compensate,
            force=False,
            warn=warn,
        )
        runs.append((label, result))
        print()
        return result.code

    title = f"1/4: the demo, predicting with {robot.path.stem}'s servos and floor"
    code = stage(title, "robot config", "1-nominal", robot, False)
    if code:
        return code
    print("== 2/4: snake identify on the same emulated robot: its servos, then its floor")
    identified = out / "2-identify"
    report = identify(
        robot=robot,
        endpoint=None,
        key_hex="",
        plant=plant,
        validation_gait="serpenoid",
        gait_params={},
        validation_time=8.0,
        from_bags=None,
        output=identified,
        plots=True,
        say=lambda text: print(f"[identify] {text}", flush=True),
    )
    print(report)
    print()
    overlay = load_robot(identified / "robot_identified.yaml")
    for title, label, folder, compensate in (
        ("3/4: the demo with the identified overlay", "identified", "3-identified", False),
        ("4/4: the same, commands compensated", "identified, compensated", "4-compensated", True),
    ):
        code = stage(title, label, folder, overlay, compensate)
        if code:
            return code
    print(
        f"the tour ({out}/): the same emulated robot, predicted and commanded three ways; the "
        "reality gap before and after identification and compensation"
    )
    print(tour_table(runs))
    return 0
