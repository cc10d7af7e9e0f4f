"""``snake simulate``: prescribed gait -> inverse dynamics -> RK4 forward simulation, written
to a folder; ``--ground`` (and a robot on wheels) runs :mod:`snake_bringup.locomotion`.

A run that leaves the commanded gait (tracking error over ``--tolerance``, or a state that
stops being finite) writes its files and prints its summary, then ends with one line
``snake: error: ...`` and exit status :data:`OFF_GAIT_STATUS`.
"""

from __future__ import annotations

import datetime as dt_module
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from snake_dynamics import make_gait
from snake_dynamics.flexible.snake import ElasticRun, elastic_arm, simulate_elastic
from snake_dynamics.gaits import gait_parameters
from snake_dynamics.mfm.integrators import DivergenceError, motion_samples, simulate_gait
from snake_ros.paths import load_robot

from ..errors import UsageError
from ..locomotion import ground_servos, run_on_the_ground, run_on_wheels
from ..progress import ProgressBar
from .options import (
    dt_option,
    duration_option,
    gait_option,
    ideal_servos_option,
    name_values,
    no_plots_option,
    non_negative,
    output_option,
    positive,
    quiet_option,
    report_error,
    robot_option,
    set_option,
)

if TYPE_CHECKING:
    from snake_viz.offline import RunSummary

    from .options import Subparsers

#: Exit status of a ``snake simulate`` run that left the gait (its files are written).
OFF_GAIT_STATUS = 3
#: Servo gains that keep every gait on the 20-body model within 5e-9 rad for 10 s.
SERVO_HINT = "--servo-stiffness 2 --servo-damping 0.05"


def register(sub: Subparsers) -> None:
    """Add ``snake simulate`` to the ``snake`` command."""
    p = sub.add_parser(
        "simulate", help="offline MFM simulation of a gait (the paper's validation loop)"
    )
    robot_option(p)
    gait_option(p)
    duration_option(p, "simulated time [s] (default: 10)", 10.0)
    dt_option(p)
    set_option(p, "gait parameter, repeatable (see `snake gaits`)")
    p.add_argument(
        "--servo-stiffness",
        type=non_negative,
        default=0.0,
        metavar="KP",
        help="servo feedback k_p [N m/rad] around the gait (default 0: pure feed-forward)",
    )
    p.add_argument(
        "--servo-damping",
        type=non_negative,
        default=0.0,
        metavar="KD",
        help="servo feedback k_d [N m s/rad] (default 0)",
    )
    p.add_argument(
        "--method", choices=["fast", "literal"], default="fast", help="dynamics implementation"
    )
    p.add_argument(
        "--tolerance",
        type=positive,
        default=0.05,
        metavar="RAD",
        help="largest acceptable |commanded - simulated| joint angle [rad]; beyond it the "
        f"files are written and the command exits with status {OFF_GAIT_STATUS} (default: 0.05)",
    )
    p.add_argument(
        "--ground",
        action="store_true",
        help="the snake free on the ground under gravity (its robot file's ground:, else the "
        "defaults), driven by its servos (the robot file's servo:, or --servo-stiffness and "
        "--servo-damping): reports travel, speed, heading drift and cost of transport; implied "
        "by a robot file with base: floating and a ground:",
    )
    ideal_servos_option(
        p,
        "on the ground: the joints exactly on the gait (prescribed), the limit of stiff, "
        "fast servos",
    )
    output_option(p, "output folder (default: runs/simulate-...)")
    no_plots_option(p, "skip the PNG plots")
    quiet_option(p, "no progress bar")
    p.set_defaults(
        run=lambda a: run(
            robot=a.robot,
            gait=a.gait,
            duration=a.duration,
            dt=a.dt,
            params=name_values(a.set, "--set"),
            servo_stiffness=a.servo_stiffness,
            servo_damping=a.servo_damping,
            method=a.method,
            tolerance=a.tolerance,
            ground=a.ground,
            ideal_servos=a.ideal_servos,
            output=a.output,
            plots=not a.no_plots,
            quiet=a.quiet,
        )
    )


def run(
    *,
    robot: str,
    gait: str,
    duration: float,
    dt: float,
    params: Mapping[str, float],
    servo_stiffness: float,
    servo_damping: float,
    method: Literal["fast", "literal"],
    tolerance: float,
    ground: bool,
    ideal_servos: bool,
    output: Path | None,
    plots: bool,
    quiet: bool,
) -> int:
    """Simulate ``gait`` on ``robot`` for ``duration`` seconds and write the run's folder.

    Returns:
        0, or :data:`OFF_GAIT_STATUS` after the files are written if the run left the gait
        (its one-line report on stderr, see :func:`off_gait`).

    Raises:
        UsageError: a duration that is not a whole number of steps, or options that do not
            apply to the robot or to ``--ground``.
        snake_dynamics.errors.SnakeDynamicsError: the robot or gait cannot be used.
    """
    from snake_viz.offline import summarise, write_run

    the_robot = load_robot(robot)  # once; handed down
    model = the_robot.model
    arm = elastic_arm(the_robot)  # None: every link rigid
    trajectory = make_gait(gait, model, **params)
    steps = round(duration / dt)
    if steps < 1 or abs(steps * dt - duration) > 1e-9 * max(1.0, duration):
        raise UsageError(f"--duration {duration} s must be a whole number of --dt {dt} s steps")
    out = output or Path("runs") / (
        f"simulate-{model.name}-{gait}-{dt_module.datetime.now():%Y%m%d-%H%M%S}"
    )
    config: dict[str, Any] = {
        "robot": str(the_robot.path),
        "gait": gait,
        "gait_parameters": {k: params.get(k, v[0]) for k, v in gait_parameters(gait).items()},
        "duration_s": duration,
        "dt_s": dt,
    }
    if model.wheels:
        if ground or method != "fast":
            raise UsageError(
                f"{model.name} rolls on wheels (ground: wheels) and runs Kane's wheeled model: "
                "drop --ground and --method"
            )
        run_on_wheels(
            the_robot,
            trajectory,
            config,
            out,
            duration=duration,
            dt=dt,
            servo_stiffness=servo_stiffness,
            servo_damping=servo_damping,
            plots=plots,
            quiet=quiet,
        )
        return 0
    ground = ground or (model.base == "floating" and model.ground is not None)
    if ideal_servos and not ground:
        raise UsageError("--ideal-servos applies on the ground: add --ground")
    if ground:
        if method != "fast" or (ideal_servos and (servo_stiffness or servo_damping)):
            raise UsageError(
                "on the ground the compiled floating MFM runs (drop --method); --ideal-servos "
                "puts the joints exactly on the gait (drop --servo-stiffness and --servo-damping)"
            )
        servo = ground_servos(the_robot, servo_stiffness, servo_damping, ideal_servos)
        run_on_the_ground(
            model,
            trajectory,
            config,
            out,
            duration=duration,
            dt=dt,
            servo=servo,
            plots=plots,
            quiet=quiet,
        )
        return 0
    if arm is not None and method != "fast":
        raise UsageError(f"{the_robot.path}: elastic links run their own model: drop --method")
    bar = ProgressBar(f"simulating {duration:g} s", stream=sys.stderr) if not quiet else None
    wall = time.perf_counter()
    diverged_at = None
    elastic: ElasticRun | None = None
    try:
        if arm is None:
            result = simulate_gait(
                model,
                trajectory,
                duration,
                dt,
                stiffness=servo_stiffness,
                damping=servo_damping,
                method=method,
                progress=bar,
            )
        else:
            elastic = simulate_elastic(
                model, arm, trajectory, duration, dt, stiffness=servo_stiffness,
                damping=servo_damping,
            )  # fmt: skip
            result = elastic.joints
    except DivergenceError as exc:
        result, diverged_at = exc.result, exc.t
        if bar is not None and bar.tty:
            bar.stream.write("\n")  # end the unfinished bar's line
    wall = time.perf_counter() - wall
    commanded = np.asarray(motion_samples(trajectory, result.t)[0])
    summary = summarise(
        result,
        commanded,
        model.name,
        gait,
        wall,
        dt=dt,
        tolerance=tolerance,
        diverged_at=diverged_at,
    )
    config |= {
        "servo_stiffness_nm_per_rad": servo_stiffness,
        "servo_damping_nms_per_rad": servo_damping,
        "method": method,
        "tolerance_rad": tolerance,
    }
    if elastic is not None:
        config["elastic_substeps"] = elastic.substeps
    files = write_run(Path(out), result, commanded, summary, config, plots=plots)
    if elastic is not None:
        files.append(elastic.save_npz(Path(out) / "deflections.npz"))
    for line in summary.lines() + ([] if elastic is None else elastic.lines()):
        print(line)
    print(f"wrote {len(files)} files to {out}/ ({', '.join(p.name for p in files)})")
    if not summary.within_tolerance:
        sys.stdout.flush()
        report_error(off_gait(summary, servo_stiffness, servo_damping))
        return OFF_GAIT_STATUS
    return 0


def off_gait(summary: RunSummary, stiffness: float, damping: float) -> str:
    """The one-line report of a run that left the gait: how far, when, where, what to do.

    Args:
        summary: the run's summary (not within its tolerance).
        stiffness: the run's servo k_p [N m/rad].
        damping: the run's servo k_d [N m s/rad].
    """
    error = f"max tracking error {summary.max_tracking_error_rad:.3g} rad"
    tolerance = f"--tolerance {summary.tolerance_rad:g} rad"
    if summary.first_exceeded_s is None:
        where = f"{error}, within {tolerance}"
    else:
        where = (
            f"{error}; over {tolerance} from t = {summary.first_exceeded_s:.4g} s, "
            f"{summary.first_exceeded_joint} first"
        )
    if stiffness == 0.0 and damping == 0.0:
        run, fix = "open-loop replay", f"add servo feedback ({SERVO_HINT})"
    else:
        run = "run"
        fix = (
            f"raise the servo gains (now --servo-stiffness {stiffness:g} "
            f"--servo-damping {damping:g})"
        )
    if summary.diverged_at_s is not None:
        return (
            f"the state left the finite numbers at t = {summary.diverged_at_s:.6g} s ({where}): "
            f"the {run} left the gait; {fix} or use a smaller --dt"
        )
    return f"{where}: the {run} left the gait; {fix}, use a smaller --dt, or raise --tolerance"
