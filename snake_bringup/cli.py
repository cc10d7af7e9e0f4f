"""The ``snake`` command: offline simulation, gait and URDF tools, the demo.

Errors a user can cause (a bad file, a bad gait parameter) end in one line
``snake: error: ...`` and exit status 2, never a traceback. A ``snake simulate`` run that
leaves the commanded gait (tracking error over ``--tolerance``, or a state that stops being
finite) writes its files and prints its summary, then ends the same way with exit status 3
(:data:`OFF_GAIT_STATUS`).
"""

from __future__ import annotations

import argparse
import datetime as dt_module
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from snake_driver.protocol import AuthKeyError, parse_key
from snake_dynamics import GAITS, SnakeDynamicsError, SnakeModel, make_gait
from snake_dynamics.gaits import gait_parameters
from snake_dynamics.mfm.integrators import DivergenceError, simulate_gait
from snake_dynamics.urdf import to_urdf, write_urdf
from snake_ros.paths import robot_config
from snake_viz.bag import BagError
from snake_viz.compare import CompareError

from .arguments import UsageError, name_values, non_negative, positive, robot_link_options
from .cli_bag import register as register_bag_commands
from .cli_compare import compare_bag
from .cli_compare import register as register_compare
from .cli_ground import simulate_on_the_ground, simulate_on_wheels
from .cli_identify import IdentifyError
from .cli_identify import register as register_identify
from .cli_sweep import register as register_sweep
from .cli_view import register as register_view
from .emulator import Emulator, EmulatorError, Endpoint
from .graph import GraphError, NodeSpec, demo_graph, hardware_graph, simulation_graph
from .progress import ProgressBar
from .runner import RunError, run_graph

if TYPE_CHECKING:
    from snake_viz.offline import RunSummary


#: Exit status of a ``snake simulate`` run that left the gait (its files are written).
OFF_GAIT_STATUS = 3
#: Servo gains that keep every gait on the 20-body model within 5e-9 rad for 10 s.
SERVO_HINT = "--servo-stiffness 2 --servo-damping 0.05"


class OffGaitError(Exception):
    """A simulated run that left the commanded gait (exit status :data:`OFF_GAIT_STATUS`)."""


def _auth_key(key_hex: str | None) -> str:
    """``--key``'s value if it is 32 hex digits ("" without it); else a UsageError."""
    try:
        parse_key(key_hex or "")
    except AuthKeyError as exc:
        raise UsageError(f"--key: {exc}") from None
    return key_hex or ""


def _load_model(spec: str) -> SnakeModel:
    return SnakeModel.from_yaml(robot_config(spec))


# ------------------------------------------------------------------------ subcommands
def cmd_simulate(args: argparse.Namespace) -> int:
    """Prescribed gait -> inverse dynamics -> RK4 forward simulation, written to a folder.

    Raises:
        OffGaitError: after writing the files, if the run left the gait (see
            :func:`_off_gait`).
    """
    from snake_viz.offline import summarise, write_run

    model = _load_model(args.robot)
    params = name_values(args.set, "--set")
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
    config = {
        "robot": str(robot_config(args.robot)),
        "gait": args.gait,
        "gait_parameters": {k: params.get(k, v[0]) for k, v in gait_parameters(args.gait).items()},
        "duration_s": args.duration,
        "dt_s": args.dt,
    }
    if model.wheels:
        return simulate_on_wheels(args, model, gait, config, Path(out))
    if args.ground:
        return simulate_on_the_ground(args, model, gait, config, Path(out))
    bar = (
        ProgressBar(f"simulating {args.duration:g} s", stream=sys.stderr)
        if not args.quiet
        else None
    )
    wall = time.perf_counter()
    diverged_at = None
    try:
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
    except DivergenceError as exc:
        result, diverged_at = exc.result, exc.t
        if bar is not None and bar.tty:
            bar.stream.write("\n")  # end the unfinished bar's line
    wall = time.perf_counter() - wall
    commanded = np.array([gait(float(t)).q for t in result.t])
    summary = summarise(
        result,
        commanded,
        model.name,
        args.gait,
        wall,
        dt=args.dt,
        tolerance=args.tolerance,
        diverged_at=diverged_at,
    )
    config |= {
        "servo_stiffness_nm_per_rad": args.servo_stiffness,
        "servo_damping_nms_per_rad": args.servo_damping,
        "method": args.method,
        "tolerance_rad": args.tolerance,
    }
    files = write_run(Path(out), result, commanded, summary, config, plots=not args.no_plots)
    for line in summary.lines():
        print(line)
    print(f"wrote {len(files)} files to {out}/ ({', '.join(p.name for p in files)})")
    if not summary.within_tolerance:
        raise OffGaitError(_off_gait(summary, args.servo_stiffness, args.servo_damping))
    return 0


def _off_gait(summary: RunSummary, stiffness: float, damping: float) -> str:
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
    """The demo: the real firmware in simavr driven by the gait, its servos moving the robot's
    simulated body (the plant) and measured on their pots, the MFM prediction beside it, the
    comparison and the recorder; then the report, the bag and the per-joint RMS error."""
    out = args.output or Path("runs") / f"demo-{dt_module.datetime.now():%Y%m%d-%H%M%S}"
    bag = out / "bag"
    plant = None if args.no_plant else (args.plant or robot_config("plant"))
    with Emulator(plant=plant, robot=args.robot) as emulator:
        body = f", its servos moving the plant of {plant}" if plant else ", no plant"
        print(f"emulated robot: the ATmega2560 firmware in simavr on {emulator.endpoint}{body}")
        graph = demo_graph(emulator.endpoint, out, gait=args.gait or "", robot=args.robot)
        run = argparse.Namespace(
            output=out / "logs", duration=args.duration, quiet=True, dry_run=False
        )
        code = run_graph(graph, "demo", run, _alive(emulator))
    if plant:
        print(f"plant: {emulator.plant_report or 'no report (it did not end normally)'}")
    if code not in (0, 130):
        return code
    report = compare_bag(bag, out / "report", robot_config=args.robot)
    print()
    print("per-joint error, MFM prediction vs the emulated robot (from the recorded bag):")
    print(report.table())
    print()
    print(f"comparison report: {report.folder}/ (live report of compare_node: {out / 'compare'}/)")
    print(f"bag:               {bag}/")
    print(f"replay it:         snake replay {bag} --loop    (then: snake view)")
    print(f"compare offline:   snake compare {bag}")
    print("web view, live:    snake view   (beside snake hardware --emulate --dynamics)")
    return code


# ------------------------------------------------------------- snake sim: the node graph
def cmd_sim(args: argparse.Namespace) -> int:
    """Run the simulation graph (the one ``simulation.launch.py`` starts) without ros2 launch."""
    graph = simulation_graph(
        args.robot, args.gait or "", rviz=not args.no_rviz, use_sim_time=args.use_sim_time
    )
    return run_graph(graph, f"sim-{Path(args.robot).stem}-{args.gait or 'default'}", args)


def cmd_hardware(args: argparse.Namespace) -> int:
    """Run the hardware graph (the one ``hardware.launch.py`` starts) without ros2 launch;
    with ``--emulate``, against the real firmware in simavr (its authenticated build with
    ``--key``)."""
    label = f"hardware-{Path(args.robot).stem}-{args.gait or 'default'}"
    key = _auth_key(args.key)
    if not args.emulate:
        graph = hardware_graph(
            args.robot,
            args.transport,
            args.port,
            args.host,
            args.gait or "",
            dynamics=args.dynamics,
            rviz=not args.no_rviz,
            use_sim_time=args.use_sim_time,
            auth_key=key,
        )
        return run_graph(graph, label, args)
    bridge = None if args.transport == "serial" else args.transport

    def graph_on(endpoint: Endpoint) -> tuple[NodeSpec, ...]:
        return hardware_graph(
            args.robot,
            endpoint.transport,
            endpoint.port,
            endpoint.host,
            args.gait or "",
            dynamics=args.dynamics,
            rviz=not args.no_rviz,
            use_sim_time=args.use_sim_time,
            auth_key=key,
        )

    if args.dry_run:  # start nothing, the emulator included: its port is not known yet
        where = "PTY" if bridge is None else "PORT"
        print(f"# the emulated robot is not started (--dry-run); {where} is chosen at its start")
        return run_graph(graph_on(Endpoint(args.transport, where)), label, args)
    with Emulator(
        bridge=bridge, key_hex=key or None, plant=args.plant, robot=args.robot
    ) as emulator:
        print(f"emulated robot (the firmware ELF in simavr) on {emulator.endpoint}")
        code = run_graph(graph_on(emulator.endpoint), label, args, _alive(emulator))
    if args.plant:
        print(f"plant: {emulator.plant_report or 'no report (it did not end normally)'}")
    return code


def _alive(emulator: Emulator) -> Callable[[], str | None]:
    """For :func:`run_graph`: why the emulated robot has ended, or None while it runs."""

    def check() -> str | None:
        if emulator.running():
            return None
        last = emulator.output[-1] if emulator.output else "no output"
        return f"the emulated robot (simavr) exited ({last})"

    return check


def cmd_emulate(args: argparse.Namespace) -> int:
    """Run the real firmware in simavr (and a socat bridge) until Ctrl-C or --seconds."""
    emulator = Emulator(
        bridge=args.bridge,
        bridge_port=args.bridge_port,
        seconds=args.seconds,
        key_hex=_auth_key(args.key) or None,
        vcd=args.vcd,
        plant=args.plant,
        robot=args.robot,
    )
    stop: list[int] = []
    previous = {
        s: signal.signal(s, lambda n, f: stop.append(n)) for s in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        endpoint = emulator.start()
        print(f"emulated robot (ATmega2560 firmware in simavr) on {endpoint}", flush=True)
        link = f"transport:={endpoint.transport} port:={endpoint.port}"
        option = f"--transport {endpoint.transport} --port {endpoint.port}"
        if endpoint.transport != "serial":
            link += f" host:={endpoint.host}"
        if args.key:
            link += f" auth_key:={args.key}"
            option += f" --key {args.key}"
        print(f"connect: ros2 launch mfm_snake hardware.launch.py {link}")
        print(f"     or: snake hardware {option}", flush=True)
        while not stop and emulator.running():
            time.sleep(0.1)
    finally:
        emulator.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("emulator stopped")
    if args.plant:
        print(f"plant: {emulator.plant_report or 'no report (it did not end normally)'}")
    return 0


# ------------------------------------------------------------------------------ parser
def _graph_options(p: argparse.ArgumentParser, label: str) -> None:
    """The options every graph command shares."""
    p.add_argument(
        "--robot", default="robot", help="robot YAML file or config name (default: robot)"
    )
    p.add_argument(
        "--gait", choices=sorted(GAITS), help="gait (default: the one in config/gaits.yaml)"
    )
    p.add_argument(
        "--duration", type=positive, metavar="S", help="stop after S seconds (default: Ctrl-C)"
    )
    p.add_argument("--no-rviz", action="store_true", help="do not start RViz")
    p.add_argument("--use-sim-time", action="store_true", help="nodes follow /clock")
    p.add_argument("--output", "-o", type=Path, help=f"log folder (default: runs/{label}-...)")
    p.add_argument("--quiet", "-q", action="store_true", help="only the logs, not the terminal")
    p.add_argument("--dry-run", action="store_true", help="print the commands, start nothing")


def _plant_option(p: argparse.ArgumentParser) -> None:
    """``--plant FILE``: the emulated robot's servos and body (snake_dynamics.sim.plant)."""
    p.add_argument(
        "--plant",
        type=Path,
        metavar="FILE",
        help="emulate the servos, body and feedback pots with this plant file "
        "(e.g. config/plant.yaml; default: no plant, pulses drive nothing)",
    )


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
        "--duration", type=positive, default=10.0, help="simulated time [s] (default: 10)"
    )
    p.add_argument("--dt", type=positive, default=0.001, help="RK4 step [s] (default: 0.001)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="gait parameter, repeatable (see `snake gaits`)",
    )
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
        "defaults), the joints exactly on the gait: reports travel, speed, heading drift and "
        "cost of transport",
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

    p = sub.add_parser(
        "demo", help="the emulated robot, MFM prediction, comparison and recording, ~20 s"
    )
    p.add_argument("--duration", type=positive, default=20.0, help="run time [s] (default: 20)")
    p.add_argument("--gait", choices=sorted(GAITS), help="gait (default: config/gaits.yaml's)")
    p.add_argument("--output", "-o", type=Path, help="output folder (default: runs/demo-...)")
    p.add_argument(
        "--robot",
        default="robot_feedback",
        help="robot config of the prediction, the driver and the plant's body (default: "
        "robot_feedback: robot.yaml with the pots calibrated; e.g. snake identify's overlay)",
    )
    body = p.add_mutually_exclusive_group()
    body.add_argument(
        "--plant",
        type=Path,
        help="the emulated robot's servos, body and pots (default: config/plant.yaml)",
    )
    body.add_argument(
        "--no-plant",
        action="store_true",
        help="no plant: the pulses drive nothing and the robot reports the firmware's estimates",
    )
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser(
        "sim", help="run the simulation graph (gait -> MFM dynamics -> ...) without ros2 launch"
    )
    _graph_options(p, "sim")
    p.set_defaults(func=cmd_sim)

    p = sub.add_parser(
        "hardware", help="run the hardware graph (gait -> driver -> robot) without ros2 launch"
    )
    robot_link_options(
        p, "authenticated mode with this key (with --emulate: the firmware built with it)"
    )
    p.add_argument("--dynamics", action="store_true", help="run the MFM prediction beside it")
    p.add_argument(
        "--emulate",
        action="store_true",
        help="drive the real firmware in simavr instead of a robot (--transport picks pty/tcp/udp)",
    )
    _plant_option(p)
    _graph_options(p, "hardware")
    p.set_defaults(func=cmd_hardware)

    p = sub.add_parser("emulate", help="run the robot's firmware in simavr; print the port")
    p.add_argument("--bridge", choices=["tcp", "udp"], help="also serve it on 127.0.0.1 (Wi-Fi)")
    p.add_argument("--bridge-port", type=int, default=0, help="the bridge's port (default: free)")
    p.add_argument("--seconds", type=positive, help="stop after this much emulated time [s]")
    p.add_argument("--key", metavar="HEX32", help="run the authenticated build with this key")
    p.add_argument("--vcd", type=Path, help="trace the servo pins to this VCD file")
    p.add_argument("--robot", default="robot", help="robot config of the plant's body and channels")
    _plant_option(p)
    p.set_defaults(func=cmd_emulate)

    register_compare(sub)
    register_identify(sub)
    register_sweep(sub)
    register_view(sub)
    register_bag_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``snake`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except OffGaitError as exc:
        print(f"snake: error: {exc}", file=sys.stderr)
        return OFF_GAIT_STATUS
    except (
        SnakeDynamicsError,
        UsageError,
        EmulatorError,
        GraphError,
        RunError,
        CompareError,
        BagError,
        IdentifyError,
    ) as exc:
        print(f"snake: error: {exc}", file=sys.stderr)
    except OSError as exc:
        print(f"snake: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
    except KeyboardInterrupt:
        print("snake: interrupted", file=sys.stderr)
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
