"""The ``snake`` command: offline simulation, gait and URDF tools, the demo.

Errors a user can cause (a bad file, a bad gait parameter, a simulation that diverges)
end in one line ``snake: error: ...`` and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import datetime as dt_module
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from snake_dynamics import GAITS, SnakeDynamicsError, SnakeModel, make_gait, simulate_gait
from snake_dynamics.gaits import gait_parameters
from snake_dynamics.urdf import to_urdf, write_urdf

from .paths import robot_config
from .progress import ProgressBar


class UsageError(Exception):
    """A command-line mistake, reported in one line."""


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (np.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (np.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value


def _gait_params(pairs: Sequence[str]) -> dict[str, float]:
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--set expects NAME=VALUE, got {pair!r}")
        try:
            params[key.strip()] = float(value)
        except ValueError:
            raise UsageError(f"--set {key}: expected a number, got {value!r}") from None
    return params


def _load_model(spec: str) -> SnakeModel:
    return SnakeModel.from_yaml(robot_config(spec))


# ------------------------------------------------------------------------ subcommands
def cmd_simulate(args: argparse.Namespace) -> int:
    """Prescribed gait -> inverse dynamics -> RK4 forward simulation, written to a folder."""
    from snake_viz.offline import summarise, write_run

    model = _load_model(args.robot)
    params = _gait_params(args.set)
    gait = make_gait(args.gait, model, **params)
    steps = round(args.duration / args.dt)
    if steps < 1 or abs(steps * args.dt - args.duration) > 1e-9 * max(1.0, args.duration):
        raise UsageError(
            f"--duration {args.duration} s must be a whole number of --dt {args.dt} s steps"
        )
    out = (
        args.output
        or Path("runs")
        / f"simulate-{model.name}-{args.gait}-{dt_module.datetime.now():%Y%m%d-%H%M%S}"
    )
    bar = (
        ProgressBar(f"simulating {args.duration:g} s", stream=sys.stderr)
        if not args.quiet
        else None
    )
    wall = time.perf_counter()
    result = simulate_gait(
        model,
        gait,
        args.duration,
        args.dt,
        stiffness=args.servo_stiffness,
        damping=args.servo_damping,
        method=args.method,
        progress=bar,
    )
    wall = time.perf_counter() - wall
    commanded = np.array([gait(float(t)).q for t in result.t])
    summary = summarise(result, commanded, model.name, args.gait, wall)
    config = {
        "robot": str(robot_config(args.robot)),
        "gait": args.gait,
        "gait_parameters": {k: params.get(k, v[0]) for k, v in gait_parameters(args.gait).items()},
        "duration_s": args.duration,
        "dt_s": args.dt,
        "servo_stiffness_nm_per_rad": args.servo_stiffness,
        "servo_damping_nms_per_rad": args.servo_damping,
        "method": args.method,
    }
    files = write_run(Path(out), result, commanded, summary, config, plots=not args.no_plots)
    for line in summary.lines():
        print(line)
    print(f"wrote {len(files)} files to {out}/ ({', '.join(p.name for p in files)})")
    return 0


def cmd_gaits(args: argparse.Namespace) -> int:
    """List the gaits and their parameters."""
    for name, spec in GAITS.items():
        print(f"{name}: {spec.description}")
        for key, (default, low, high, unit) in spec.params.items():
            print(f"    {key} = {default:g} {unit}  (range {low:g} .. {high:g})")
    return 0


def cmd_urdf(args: argparse.Namespace) -> int:
    """Print or write the URDF generated from a robot config."""
    model = _load_model(args.robot)
    if args.output is None:
        sys.stdout.write(to_urdf(model))
    else:
        print(f"wrote {write_urdf(model, args.output)}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """The demo: a short offline simulation of the 8-joint robot with plots."""
    demo = argparse.Namespace(
        robot="robot",
        gait="serpenoid",
        duration=args.duration,
        dt=0.001,
        set=[],
        servo_stiffness=0.0,
        servo_damping=0.0,
        method="fast",
        output=args.output,
        no_plots=False,
        quiet=False,
    )
    code = cmd_simulate(demo)
    print("open the plots (joint_angles.png, torques.png, energy.png) in the folder above")
    return code


# ------------------------------------------------------------------------------ parser
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="snake", description="mfm_snake: MFM snake robot dynamics, gaits and tools"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "simulate", help="offline MFM simulation of a gait (the paper's validation loop)"
    )
    p.add_argument(
        "--robot", default="robot", help="robot YAML file or config name (default: robot)"
    )
    p.add_argument(
        "--gait", default="serpenoid", choices=sorted(GAITS), help="gait (default: serpenoid)"
    )
    p.add_argument(
        "--duration", type=_positive, default=10.0, help="simulated time [s] (default: 10)"
    )
    p.add_argument("--dt", type=_positive, default=0.001, help="RK4 step [s] (default: 0.001)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="gait parameter, repeatable (see `snake gaits`)",
    )
    p.add_argument(
        "--servo-stiffness",
        type=_non_negative,
        default=0.0,
        metavar="KP",
        help="servo feedback k_p [N m/rad] around the gait (default 0: pure feed-forward)",
    )
    p.add_argument(
        "--servo-damping",
        type=_non_negative,
        default=0.0,
        metavar="KD",
        help="servo feedback k_d [N m s/rad] (default 0)",
    )
    p.add_argument(
        "--method", choices=["fast", "literal"], default="fast", help="dynamics implementation"
    )
    p.add_argument("--output", "-o", type=Path, help="output folder (default: runs/simulate-...)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("gaits", help="list gaits and their parameters")
    p.set_defaults(func=cmd_gaits)

    p = sub.add_parser("urdf", help="URDF of a robot config (stdout or --output)")
    p.add_argument(
        "--robot", default="robot", help="robot YAML file or config name (default: robot)"
    )
    p.add_argument("--output", "-o", type=Path, help="file to write")
    p.set_defaults(func=cmd_urdf)

    p = sub.add_parser("demo", help="run the demo")
    p.add_argument(
        "--duration", type=_positive, default=5.0, help="simulated time [s] (default: 5)"
    )
    p.add_argument("--output", "-o", type=Path, help="output folder")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``snake`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (SnakeDynamicsError, UsageError) as exc:
        print(f"snake: error: {exc}", file=sys.stderr)
    except OSError as exc:
        print(f"snake: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
    except KeyboardInterrupt:
        print("snake: interrupted", file=sys.stderr)
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
