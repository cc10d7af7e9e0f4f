"""A gait on the ground (``snake simulate --ground``, ``snake sweep``): the snake free on its
ground under its servos (snake_dynamics.sim.crawler, docs/mfm.md eqs. 240-242), or with its
joints following the gait exactly, the ideal-servo limit (snake_dynamics.floating, eqs.
221-238); and a robot on wheels
(``ground: wheels``: the servos and Kane's wheeled model, eqs. 415-417). Travel, speed,
heading drift and cost of transport on stdout and in the run folder."""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from snake_dynamics.floating import (
    FloatingRun,
    locomotion,
    lying_state,
    on_the_ground,
    simulate_prescribed_fast,
)
from snake_dynamics.gaits import Gait
from snake_dynamics.model import SnakeModel
from snake_dynamics.robot import Robot
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim import saturated_share, simulate_crawling, simulate_wheeled
from snake_viz.offline import write_ground_run

from .progress import ProgressBar

#: Samples kept per second of simulated time [Hz].
SAMPLE_RATE_HZ = 100.0

#: How a run with prescribed joints names its servos.
IDEAL = "ideal: the joints exactly on the gait (prescribed, eq. 228)"


def simulate_on_the_ground(
    model: SnakeModel,
    gait: Gait,
    duration: float,
    dt: float,
    servo: ServoModel | None,
    every: int,
    progress: Callable[[float], None] | None = None,
) -> FloatingRun:
    """``gait`` on ``model`` lying straight on its ground (:func:`on_the_ground`) for
    ``duration`` [s] at step ``dt`` [s], every ``every``-th step kept: under ``servo``
    (eqs. 240-242), or with the joints exactly on the gait when ``servo`` is None (eq. 228).

    Raises:
        snake_dynamics.errors.SimulationError: a step the ground refuses, or a state that
            left the finite numbers.
    """
    grounded = on_the_ground(model)
    if servo is None:
        return simulate_prescribed_fast(
            grounded, gait, duration, dt, lying_state(grounded), every, progress
        )
    return simulate_crawling(grounded, gait, duration, dt, servo, every, progress)


def ground_servos(
    robot: Robot, stiffness: float, damping: float, ideal: bool = False
) -> ServoModel | None:
    """The servos of a run on the ground or on wheels: None with ``ideal`` (prescribed
    joints), PD servos with the gains given (k_p [N m/rad], k_d [N m s/rad]), else the robot
    config's ``servo:`` section (:attr:`Robot.servo`; nominal MG996R servos without one)."""
    if ideal:
        return None
    if stiffness or damping:
        return ServoModel.pd(stiffness, damping, robot.model.n_joints)
    return robot.servo


def run_on_the_ground(
    model: SnakeModel,
    gait: Gait,
    config: Mapping[str, Any],
    out: Path,
    *,
    duration: float,
    dt: float,
    servo: ServoModel | None,
    plots: bool,
    quiet: bool,
) -> None:
    """Run ``gait`` on ``model`` lying on its ground for ``duration`` seconds (step ``dt``
    [s]) under ``servo`` (None: the joints exactly on the gait), write the run to ``out``
    and print its travel.

    Args:
        config: what the run's summary.json records of its settings (``gait`` and ``robot``
            among them); the ground's parameters, the servos and the wall time are added.

    Raises:
        snake_dynamics.errors.SimulationError: a step the ground refuses.
    """
    grounded = on_the_ground(model)
    ground = grounded.ground
    assert ground is not None  # on_the_ground always gives one
    every = max(1, round(1.0 / (SAMPLE_RATE_HZ * dt)))
    bar = ProgressBar(f"simulating {duration:g} s on the ground") if not quiet else None
    wall = time.perf_counter()
    run = simulate_on_the_ground(model, gait, duration, dt, servo, every, bar)
    wall = time.perf_counter() - wall
    written = {
        **config,
        "ground": dataclasses.asdict(ground),
        "gravity_mps2": grounded.gravity.tolist(),
        "servo": IDEAL if servo is None else servo.describe(),
        "wall_time_s": wall,
    }
    where = "on the ground, " + ("ideal servos" if servo is None else "under its servos")
    if servo is not None:
        share = saturated_share(run, servo)
        written["servo_saturated_share"] = dict(zip(model.joint_names, share.tolist(), strict=True))
    _report(model, run, written, where, wall, out, duration=duration, dt=dt, plots=plots)
    if servo is not None:
        k = int(np.argmax(share))
        print(
            f"servos at their torque-speed limit: {model.joint_names[k]} {share[k]:.1%} of the "
            "run (the most); the efforts in run.csv are the servo torques"
        )


def run_on_wheels(
    robot: Robot,
    gait: Gait,
    config: Mapping[str, Any],
    out: Path,
    *,
    duration: float,
    dt: float,
    servo_stiffness: float,
    servo_damping: float,
    plots: bool,
    quiet: bool,
) -> None:
    """Run ``gait`` as the servos' reference of the robot on its wheels (``ground: wheels``,
    snake_dynamics.sim.wheeled), write the run to ``out`` and print its travel.

    Args:
        servo_stiffness: the servos' k_p [N m/rad]; with ``servo_damping`` [N m s/rad] both
            0, the robot config's servo model (:attr:`Robot.servo`).

    Raises:
        snake_dynamics.errors.SimulationError: a step the model refuses.
    """
    model = robot.model
    servo = ground_servos(robot, servo_stiffness, servo_damping)
    assert servo is not None  # never ideal on wheels
    every = max(1, round(1.0 / (SAMPLE_RATE_HZ * dt)))
    bar = ProgressBar(f"simulating {duration:g} s on wheels") if not quiet else None
    wall = time.perf_counter()
    run = simulate_wheeled(model, gait, duration, dt, servo, every, bar)
    wall = time.perf_counter() - wall
    written = {**config, "ground": "wheels", "servo": servo.describe(), "wall_time_s": wall}
    _report(model, run, written, "on wheels", wall, out, duration=duration, dt=dt, plots=plots)


def _report(
    model: SnakeModel,
    run: FloatingRun,
    config: dict[str, Any],
    where: str,
    wall: float,
    out: Path,
    *,
    duration: float,
    dt: float,
    plots: bool,
) -> None:
    """Write the run's files and print its travel (eq. 238)."""
    travel = locomotion(model, run)
    files = write_ground_run(out, run, model.joint_names, travel, config, plots=plots)
    cot = f"{travel.cost_of_transport:.3g}" if math.isfinite(travel.cost_of_transport) else "inf"
    print(f"robot {model.name} ({model.n_joints} joints) {where}, gait {config['gait']}")
    print(f"simulated {duration:g} s at dt = {dt * 1e3:g} ms in {wall:.1f} s wall time")
    print(
        f"travelled {travel.distance:.4f} m (centre of mass): mean speed "
        f"{travel.mean_speed * 100:.3f} cm/s, forward {travel.forward_speed * 100:.3f} cm/s"
    )
    print(
        f"heading drift {math.degrees(travel.heading_drift):.2f} deg; cost of transport {cot} "
        f"({travel.positive_work:.4g} J of positive joint work)"
    )
    print(f"wrote {len(files)} files to {out}/ ({', '.join(p.name for p in files)})")
    sys.stdout.flush()
