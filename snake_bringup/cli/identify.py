"""``snake identify``: identify the servo model on the robot (emulated or real); the work
is :func:`snake_bringup.identification.commands.identify`, this module parses and calls."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from snake_dynamics.robot import Robot
from snake_ros.paths import robot_config

from ..emulator import Endpoint
from ..identification.commands import SERVO_FITS, default_robot, identify
from .options import (
    auth_key,
    emulate_option,
    name_values,
    no_plots_option,
    output_option,
    plant_option,
    positive,
    quiet_option,
    robot_link_options,
    robot_option,
)

if TYPE_CHECKING:
    from .options import Subparsers


def register(sub: Subparsers) -> None:
    """Add ``snake identify`` to the ``snake`` command."""
    p = sub.add_parser(
        "identify",
        help="identify the servo model (and the floor) on the robot: overlay and report",
        description=(
            "Play steps and a chirp on every joint through the driver, then a validation "
            "gait; record both (bags), fit the servo parameters by least squares, write "
            "them as a robot config overlay and a report (fitted values with standard "
            "errors, validation error before and after, plots). On a floor with a pose "
            "sensor (the emulated robot on a plant with ground: and pose_sensor:), crawl "
            "and fit the floor's friction too, validated on a crawl the fit did not use."
        ),
    )
    robot_option(
        p,
        None,
        "robot config with feedback on every joint (default: robot_feedback; "
        "robot_table for an emulated plant on a floor; with --from-bags, the earlier run's)",
    )
    emulate_option(p, "identify the emulated robot")
    plant_option(
        p, "with --emulate: the emulated robot's plant file (default: config/plant.yaml)", None
    )
    robot_link_options(p, "the firmware's key (authenticated mode)")
    p.add_argument(
        "--validation-gait",
        default="serpenoid",
        help="gait of the validation run, never used by the fit (default: serpenoid)",
    )
    p.add_argument(
        "--gait-param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a parameter of the validation gait (default: amplitude=0.6 frequency=0.8)",
    )
    p.add_argument(
        "--validation-time",
        type=positive,
        default=8.0,
        help="length of the validation run [s] (default: 8)",
    )
    p.add_argument(
        "--floor",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="after the servos, crawl and fit the floor (default: when the emulated plant "
        "has a ground:; the servo stage then runs with the robot held off it)",
    )
    p.add_argument(
        "--crawl-time",
        type=positive,
        default=3.0,
        help="length of each crawl of the floor stage, two fitted and one validation [s] "
        "(default: 3)",
    )
    p.add_argument(
        "--held-out",
        action="store_true",
        help="after the floor's crawls, play two 15 s crawls of gaits neither fit saw and "
        "predict them with the config, the identified servos and floor (and the plant's "
        "truth): 32 s more of the robot's time (default: off)",
    )
    p.add_argument(
        "--fit-backward",
        action="store_true",
        help="fit the floor's mu_backward too (sliding towards the tail; default: "
        "mu_along and mu_across)",
    )
    p.add_argument(
        "--servo-fit",
        choices=SERVO_FITS,
        default=SERVO_FITS[0],
        help="shared: one servo for every joint (default); per-joint: each joint's own "
        "stiffness, damping, stall torque and no-load speed after the shared fit (dead time "
        "and deadband shared; on the MuJoCo robot it fits the joints closer but predicts "
        "crawls no better: docs/cli.md)",
    )
    p.add_argument(
        "--from-bags",
        type=Path,
        metavar="DIR",
        help="fit the bags of an earlier run's folder again (no robot)",
    )
    output_option(p, "output folder (default: runs/identify-...)")
    no_plots_option(p, "skip the PNG plots")
    quiet_option(p, "no progress output")
    p.set_defaults(
        run=lambda a: run(
            robot=a.robot,
            emulate=a.emulate,
            plant=a.plant,
            transport=a.transport,
            port=a.port,
            host=a.host,
            key=auth_key(a.key_file, a.key),
            validation_gait=a.validation_gait,
            gait_params=name_values(a.gait_param, "--gait-param"),
            validation_time=a.validation_time,
            from_bags=a.from_bags,
            output=a.output,
            plots=not a.no_plots,
            quiet=a.quiet,
            floor=a.floor,
            crawl_time=a.crawl_time,
            fit_backward=a.fit_backward,
            servo_fit=a.servo_fit,
            held_out=a.held_out,
        )
    )


def run(
    *,
    robot: str | None,
    emulate: bool,
    plant: Path | None,
    transport: str,
    port: str,
    host: str,
    key: str,
    validation_gait: str,
    gait_params: dict[str, float],
    validation_time: float,
    from_bags: Path | None,
    output: Path | None,
    plots: bool,
    quiet: bool,
    floor: bool | None,
    crawl_time: float,
    fit_backward: bool,
    servo_fit: str = SERVO_FITS[0],
    held_out: bool = False,
) -> int:
    """Identify, with progress on stderr (unless ``quiet``); print the report."""

    def say(text: str) -> None:
        if not quiet:
            print(f"[identify] {text}", file=sys.stderr, flush=True)

    endpoint = None if emulate else Endpoint(transport, port, host)
    real = endpoint is not None
    plant_file = None if plant is None else robot_config(str(plant))  # a file, or a name
    report = identify(
        robot=Robot.load(
            robot_config(robot or default_robot(plant_file, real, from_bags)).resolve()
        ),
        endpoint=endpoint,
        key_hex=key,
        plant=plant_file,
        validation_gait=validation_gait,
        gait_params=gait_params,
        validation_time=validation_time,
        from_bags=from_bags,
        output=output,
        plots=plots,
        say=say,
        floor=floor,
        crawl_time=crawl_time,
        floor_fitted=("mu_along", "mu_across", *(("mu_backward",) if fit_backward else ())),
        servo_fit=servo_fit,
        held_out=held_out,
    )
    print(report)
    return 0
