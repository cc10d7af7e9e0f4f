"""``snake simulate --ground``: a gait on the ground, the joints following it exactly, the
tail free (snake_dynamics.floating.literal, docs/mfm.md eqs. 221-238); and ``snake simulate`` of a
robot on wheels (``ground: wheels``: the servos and Kane's wheeled model, eqs. 415-417).
Travel, speed, heading drift and cost of transport on stdout and in the run folder."""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from pathlib import Path
from typing import Any

from snake_dynamics.errors import SimulationError
from snake_dynamics.floating.literal import FloatingRun, locomotion, lying_state, on_the_ground
from snake_dynamics.floating.recursive import simulate_prescribed_fast
from snake_dynamics.gaits import Gait
from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim.wheeled import simulate_wheeled
from snake_viz.offline import write_ground_run

from .arguments import UsageError
from .progress import ProgressBar

#: Samples kept per second of simulated time [Hz].
SAMPLE_RATE_HZ = 100.0


def simulate_on_the_ground(
    args: argparse.Namespace, model: SnakeModel, gait: Gait, config: dict[str, Any], out: Path
) -> int:
    """Run ``gait`` on ``model`` lying on its ground and write the run to ``out``.

    Raises:
        UsageError: options that do not apply on the ground, or a step the ground refuses.
    """
    if args.servo_stiffness or args.servo_damping or args.method != "fast":
        raise UsageError(
            "--ground runs the joints exactly on the gait (the compiled floating MFM): drop "
            "--servo-stiffness, --servo-damping and --method"
        )
    grounded = on_the_ground(model)
    ground = grounded.ground
    assert ground is not None  # on_the_ground always gives one
    every = max(1, round(1.0 / (SAMPLE_RATE_HZ * args.dt)))
    bar = ProgressBar(f"simulating {args.duration:g} s on the ground") if not args.quiet else None

    wall = time.perf_counter()
    try:
        run = simulate_prescribed_fast(
            grounded, gait, args.duration, args.dt, lying_state(grounded), every, bar
        )
    except SimulationError as exc:
        raise UsageError(str(exc)) from None
    wall = time.perf_counter() - wall
    config = {
        **config,
        "ground": dataclasses.asdict(ground),
        "gravity_mps2": grounded.gravity.tolist(),
        "wall_time_s": wall,
    }
    return _report(args, model, run, config, "on the ground", wall, out)


def simulate_on_wheels(
    args: argparse.Namespace, model: SnakeModel, gait: Gait, config: dict[str, Any], out: Path
) -> int:
    """Run ``gait`` as the servos' reference of ``model`` on its wheels (``ground: wheels``,
    snake_dynamics.sim.wheeled) and write the run to ``out``.

    Raises:
        UsageError: options that do not apply on wheels.
    """
    if args.ground or args.method != "fast":
        raise UsageError(
            f"{model.name} rolls on wheels (ground: wheels) and runs Kane's wheeled model: "
            "drop --ground and --method"
        )
    n = model.n_joints
    if args.servo_stiffness or args.servo_damping:
        servo = ServoModel.pd(args.servo_stiffness, args.servo_damping, n)
    else:
        servo = ServoModel.from_yaml(Path(config["robot"]), model.joint_names)
    every = max(1, round(1.0 / (SAMPLE_RATE_HZ * args.dt)))
    bar = ProgressBar(f"simulating {args.duration:g} s on wheels") if not args.quiet else None
    wall = time.perf_counter()
    try:
        run = simulate_wheeled(model, gait, args.duration, args.dt, servo, every, bar)
    except SimulationError as exc:
        raise UsageError(str(exc)) from None
    wall = time.perf_counter() - wall
    config = {**config, "ground": "wheels", "servo": servo.describe(), "wall_time_s": wall}
    return _report(args, model, run, config, "on wheels", wall, out)


def _report(
    args: argparse.Namespace,
    model: SnakeModel,
    run: FloatingRun,
    config: dict[str, Any],
    where: str,
    wall: float,
    out: Path,
) -> int:
    """Write the run's files and print its travel (eq. 238)."""
    travel = locomotion(model, run)
    files = write_ground_run(out, run, model.joint_names, travel, config, plots=not args.no_plots)
    cot = f"{travel.cost_of_transport:.3g}" if math.isfinite(travel.cost_of_transport) else "inf"
    print(f"robot {model.name} ({model.n_joints} joints) {where}, gait {args.gait}")
    print(f"simulated {args.duration:g} s at dt = {args.dt * 1e3:g} ms in {wall:.1f} s wall time")
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
    return 0
