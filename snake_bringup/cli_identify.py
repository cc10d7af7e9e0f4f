"""``snake identify``: identify the servo model on the robot (emulated or real).

Through the driver's link (:class:`snake_driver.link.DriverLink`, the core of driver_node)
it plays the identification experiment (:class:`snake_dynamics.sim.identification.Excitation`:
steps and a chirp on every joint within its limits), then a validation gait the fit never
sees, records both as bags (the commands, the servos' commanded angles from the pulses the
firmware reports, and the measured angles), fits the servo parameters by least squares
(:func:`snake_dynamics.sim.identification.fit_servo`), writes them as a robot config overlay, and
prints and writes a report: the fitted values with standard errors and the validation
gait's prediction error with the robot config's servo model and with the fitted one.
``--from-bags DIR`` fits an earlier run's bags again, offline.

``snake_bringup.cli`` calls :func:`register`; errors a user can cause raise
:class:`IdentifyError` or :class:`snake_dynamics.sim.identification.IdentificationError`.
"""

from __future__ import annotations

import argparse
import datetime as dt_module
import json
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from snake_driver.calibration import CalibrationError, ServoMap, load_servo_map
from snake_driver.link import DriverLink, Measurement
from snake_driver.protocol import AuthKeyError, parse_key
from snake_driver.transport import make_transport
from snake_dynamics.gaits import Gait, make_gait
from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import NOMINAL, ServoModel, ServoParams
from snake_dynamics.sim.identification import (
    FITTED,
    Excitation,
    Recording,
    ServoFit,
    fit_servo,
    predict,
    rms_error,
)
from snake_ros.paths import robot_config
from snake_viz.bag import BagError, BagRecorder, open_reader, typestore

from .arguments import name_values, positive, robot_link_options
from .emulator import Emulator, Endpoint
from .plant_bridge import pulse_map

#: Topics of the identification bags.
COMMANDS = "/joint_commands"
MEASURED = "/measured/joint_states"
SERVO_TARGETS = "/measured/servo_targets"
JOINT_STATE = "sensor_msgs/msg/JointState"
#: The command rate [Hz] (driver_node's default send rate).
COMMAND_RATE = 50.0
#: A clock-sync ping every this many commands (5 Hz, driver_node's ping_rate).
PING_EVERY = 10
#: Rest after each phase [s]: the robot settles, and the next phase starts from rest.
REST_S = 1.0
#: How long to wait for the link's first telemetry [s].
CONNECT_TIMEOUT_S = 15.0


class IdentifyError(RuntimeError):
    """Identification cannot run or go on; the message says why and what to do."""


def register(subparsers: Any) -> None:
    """Add ``identify`` to the ``snake`` command."""
    p = subparsers.add_parser(
        "identify",
        help="identify the servo model on the robot (emulated or real): overlay and report",
        description=(
            "Play steps and a chirp on every joint through the driver, then a validation "
            "gait; record both (bags), fit the servo parameters by least squares, write "
            "them as a robot config overlay and a report (fitted values with standard "
            "errors, validation error before and after, plots)."
        ),
    )
    p.add_argument(
        "--robot",
        default="robot_feedback",
        help="robot config with feedback on every joint (default: robot_feedback)",
    )
    p.add_argument("--emulate", action="store_true", help="identify the emulated robot")
    p.add_argument(
        "--plant",
        type=Path,
        help="with --emulate: the emulated robot's plant file (default: config/plant.yaml)",
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
        "--from-bags",
        type=Path,
        metavar="DIR",
        help="fit the bags of an earlier run's folder again (no robot)",
    )
    p.add_argument("--output", "-o", type=Path, help="output folder (default: runs/identify-...)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    p.set_defaults(func=cmd_identify)


# ------------------------------------------------------------------ the robot's part
@dataclass
class Take:
    """One phase played on the robot.

    Attributes:
        commands: (host time [s], targets [rad]) as sent.
        measurements: the telemetry received meanwhile.
    """

    commands: list[tuple[float, dict[str, float]]]
    measurements: list[Measurement]


def _connect(link: DriverLink, say: Callable[[str], None]) -> None:
    """Poll until the link's session has its first stamped telemetry."""
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while time.monotonic() < deadline:
        measurements, events = link.poll(0.02)
        for event in events:
            say(f"link: {event.message}")
        if link.connected and any(m.stamp is not None for m in measurements):
            return
        link.ping()
    reason = link.lost_reason or "no stamped telemetry"
    raise IdentifyError(
        f"no session with the robot within {CONNECT_TIMEOUT_S:g} s ({reason}): check "
        "--transport/--port/--key and that the robot is powered"
    )


def play(
    link: DriverLink,
    trajectory: Gait,
    duration: float,
    say: Callable[[str], None],
    label: str,
) -> Take:
    """Send the trajectory's angles at :data:`COMMAND_RATE` for ``duration`` seconds, then
    rest for :data:`REST_S`, keeping every report.

    Raises:
        IdentifyError: the link was lost on the way.
    """
    names = link.servos.joint_names
    period = 1.0 / COMMAND_RATE
    take = Take([], [])
    start = time.monotonic()
    total = duration + REST_S
    next_note = 0.0
    k = 0
    while (elapsed := time.monotonic() - start) < total:
        t = min(elapsed, duration)
        q = trajectory.evaluate(t).q if elapsed < duration else np.zeros(len(names))
        targets = dict(zip(names, (float(x) for x in q), strict=True))
        link.send_targets(targets, int(period * 1000))
        take.commands.append((link.now(), targets))
        if k % PING_EVERY == 0:
            for event in link.ping():  # the clock mapping's pings, as driver_node's
                say(f"link: {event.message}")
        k += 1
        while True:
            wait = start + k * period - time.monotonic()
            measurements, events = link.poll(max(0.0, min(wait, period)))
            take.measurements += measurements
            for event in events:
                say(f"link: {event.message}")
            if not link.connected:
                raise IdentifyError(f"lost the robot during the {label}: {link.lost_reason}")
            if wait <= 0.0:
                break
        if elapsed >= next_note:
            say(f"{label}: {min(elapsed, total):4.1f} / {total:.1f} s")
            next_note += 2.0
    return take


# ------------------------------------------------------------------ bags
def _joint_state(names: Sequence[str], stamp: float, positions: Sequence[float]) -> bytes:
    store = typestore()
    types = store.types
    sec = math.floor(stamp)
    header = types["std_msgs/msg/Header"](
        stamp=types["builtin_interfaces/msg/Time"](sec=sec, nanosec=int((stamp - sec) * 1e9)),
        frame_id="",
    )
    msg = types[JOINT_STATE](
        header=header,
        name=list(names),
        position=np.asarray(positions, dtype=np.float64),
        velocity=np.empty(0),
        effort=np.empty(0),
    )
    return bytes(store.serialize_cdr(msg, JOINT_STATE))


def write_bag(path: Path, take: Take, servos: ServoMap) -> int:
    """The take as a bag: the commands, and per stamped report the servos' commanded angles
    (their pulses through the calibration's inverse) and the measured angles. Returns the
    reports written."""
    names = servos.joint_names
    maps = {c.joint: pulse_map(c) for c in servos.channels}
    bag = BagRecorder(path)
    bag.open()
    for topic in (COMMANDS, SERVO_TARGETS, MEASURED):
        bag.add_topic(topic, JOINT_STATE)
    for stamp, targets in take.commands:
        bag.write(COMMANDS, int(stamp * 1e9), _joint_state(names, stamp, list(targets.values())))
    reports = 0
    for m in take.measurements:
        if m.stamp is None or any(m.pulses_us[n] == 0 for n in names):
            continue  # no clock mapping yet, or a servo not driven yet
        ns = int(m.stamp * 1e9)
        reference = [maps[n].target(m.pulses_us[n]) for n in names]
        bag.write(SERVO_TARGETS, ns, _joint_state(names, m.stamp, reference))
        bag.write(MEASURED, ns, _joint_state(names, m.stamp, [m.positions[n] for n in names]))
        reports += 1
    bag.close()
    return reports


def read_recording(path: Path, names: Sequence[str]) -> Recording:
    """The recording of an identification bag: servo targets and measurements, matched by
    stamp.

    Raises:
        IdentifyError: an unreadable bag, or one without both topics.
    """
    store = typestore()
    series: dict[str, dict[int, list[float]]] = {SERVO_TARGETS: {}, MEASURED: {}}
    try:
        with open_reader(path) as reader:
            connections = [c for c in reader.connections if c.topic in series]
            for connection, _, raw in reader.messages(connections=connections):
                msg: Any = store.deserialize_cdr(raw, connection.msgtype)
                order = [list(msg.name).index(n) for n in names]
                stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
                series[connection.topic][stamp] = [float(msg.position[i]) for i in order]
    except (BagError, ValueError) as exc:
        raise IdentifyError(f"{path}: not an identification bag ({exc})") from None
    stamps = sorted(set(series[SERVO_TARGETS]) & set(series[MEASURED]))
    if len(stamps) < 3:
        raise IdentifyError(
            f"{path}: fewer than 3 reports with both {SERVO_TARGETS} and {MEASURED}"
        )
    return Recording(
        np.array(stamps, dtype=np.float64) * 1e-9,
        np.array([series[SERVO_TARGETS][s] for s in stamps]),
        np.array([series[MEASURED][s] for s in stamps]),
        tuple(names),
    )


# ------------------------------------------------------------------ the command
def _say(quiet: bool) -> Callable[[str], None]:
    def say(text: str) -> None:
        if not quiet:
            print(f"[identify] {text}", file=sys.stderr, flush=True)

    return say


def _gait_params(pairs: Sequence[str]) -> dict[str, float]:
    """The validation gait's parameters: the defaults with ``--gait-param`` over them."""
    return {"amplitude": 0.6, "frequency": 0.8, **name_values(pairs, "--gait-param")}


def _start_params(servo: ServoModel) -> ServoParams:
    """The fit's starting guess: the config's first servo, with a finite torque-speed line."""
    first = servo.joints[0]
    if math.isfinite(first.stall_torque) and math.isfinite(first.no_load_speed):
        return first
    return NOMINAL


@contextmanager
def _robot_link(
    args: argparse.Namespace, servos: ServoMap, robot: Path, say: Callable[[str], None]
) -> Iterator[DriverLink]:
    """The driver's link to the robot: the emulated one (started here) or the real one."""
    try:
        key = parse_key(args.key or "")
    except AuthKeyError as exc:
        raise IdentifyError(f"--key: {exc}") from None
    emulator = None
    endpoint = Endpoint(args.transport, args.port, args.host)
    if args.emulate:
        plant = args.plant or robot_config("plant")
        emulator = Emulator(plant=plant, robot=str(robot), key_hex=args.key or None)
        endpoint = emulator.start()
        say(f"emulated robot (firmware ELF in simavr, plant {plant}) on {endpoint}")
    try:
        link = DriverLink(
            make_transport(endpoint.transport, endpoint.port, endpoint.host),
            servos,
            now=time.time,
            key=key,
        )
        try:
            _connect(link, say)
            yield link
        finally:
            link.enable(False)
            link.close()
    finally:
        if emulator is not None:
            emulator.stop()


def cmd_identify(args: argparse.Namespace) -> int:
    """Run the experiment and the validation on the robot (or read their bags), fit, and
    write the overlay and the report."""
    say = _say(args.quiet)
    robot = robot_config(args.robot).resolve()
    try:
        model, servos = load_servo_map(robot)
    except CalibrationError as exc:
        raise IdentifyError(str(exc)) from None
    names = model.joint_names
    missing = [c.joint for c in servos.channels if c.feedback is None]
    if missing and args.from_bags is None:
        raise IdentifyError(
            f"{robot}: {', '.join(missing)} ha{'s' if len(missing) == 1 else 've'} no feedback "
            "(servos.joints.<joint>.feedback): identification needs measured angles "
            "(config/robot_feedback.yaml shows the calibration)"
        )
    config_servo = ServoModel.from_yaml(robot, names)
    validation = make_gait(args.validation_gait, model, **_gait_params(args.gait_param))
    out = args.output or Path("runs") / f"identify-{dt_module.datetime.now():%Y%m%d-%H%M%S}"
    bags = args.from_bags or out
    if args.from_bags is None:
        if out.exists() and any(out.iterdir()):
            raise IdentifyError(f"{out} exists and is not empty; choose a new folder (-o)")
        out.mkdir(parents=True, exist_ok=True)
        excitation = Excitation.within(model.joint_limits[:, 0], model.joint_limits[:, 1])
        with _robot_link(args, servos, robot, say) as link:
            for label, trajectory, seconds in (
                ("experiment", excitation, excitation.duration),
                ("validation", validation, args.validation_time),
            ):
                take = play(link, trajectory, seconds, say, label)
                reports = write_bag(out / f"{label}_bag", take, servos)
                say(f"{label}: {len(take.commands)} commands, {reports} reports -> {label}_bag")
    else:
        out.mkdir(parents=True, exist_ok=True)
    experiment = read_recording(bags / "experiment_bag", names)
    check = read_recording(bags / "validation_bag", names)
    say(f"fitting {len(FITTED)} parameters to {experiment.t.size} reports x {len(names)} joints")
    fit = fit_servo(
        model,
        experiment,
        _start_params(config_servo),
        progress=lambda k, rms: (
            say(f"fit: prediction {k}, RMS {math.degrees(rms):.3f} deg") if k % 10 == 0 else None
        ),
    )
    before = rms_error(predict(model, config_servo, check), check.measured)
    fitted_model = ServoModel.uniform(fit.params, len(names), "identified")
    after = rms_error(predict(model, fitted_model, check), check.measured)
    overlay = write_overlay(out / "robot_identified.yaml", robot, fit, before, after)
    summary = report_text(fit, config_servo, names, before, after, overlay)
    (out / "report.md").write_text(summary)
    (out / "fit.json").write_text(
        json.dumps(
            {
                "robot": str(robot),
                "params": asdict(fit.params),
                "stderr": fit.stderr,
                "dead_time_after_pulse": fit.dead_time_after_pulse,
                "fit_rms_rad": fit.rms.tolist(),
                "validation_rms_before_rad": before.tolist(),
                "validation_rms_after_rad": after.tolist(),
                "config_servo": config_servo.describe(),
                "evaluations": fit.evaluations,
            },
            indent=2,
        )
    )
    if not args.no_plots:
        plot(out, model, experiment, check, config_servo, fitted_model)
    print(summary)
    return 0


def write_overlay(
    path: Path, robot: Path, fit: ServoFit, before: np.ndarray, after: np.ndarray
) -> Path:
    """The fitted servo as a robot config overlay on ``robot`` (``base:``)."""
    servo = {k: float(f"{v:.6g}") for k, v in asdict(fit.params).items()}
    header = (
        "# Servo model identified by `snake identify` (docs/mfm.md, eqs. 207-210): the fitted\n"
        f"# servo at every joint, over {robot.name}. Validation gait RMS error, all joints:\n"
        f"# {math.degrees(_overall(before)):.3f} deg with the config's servo model, "
        f"{math.degrees(_overall(after)):.3f} deg with this one.\n"
        "# Use it as any robot config: --robot <this file>, robot_config:=<this file>.\n"
    )
    doc = {"base": str(robot), "servo": {"defaults": servo, "joints": {}}}
    path.write_text(header + yaml.safe_dump(doc, sort_keys=False))
    return path


def _overall(rms: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(rms))))


_UNITS = {
    "dead_time": "s",
    "deadband": "rad",
    "stiffness": "N m/rad",
    "damping": "N m s/rad",
    "stall_torque": "N m",
    "no_load_speed": "rad/s",
}


def report_text(
    fit: ServoFit,
    config_servo: ServoModel,
    names: Sequence[str],
    before: np.ndarray,
    after: np.ndarray,
    overlay: Path,
) -> str:
    """The report (Markdown): fitted values, validation errors, where the overlay is."""
    start = config_servo.joints[0]
    lines = [
        "# Servo identification",
        "",
        f"Before: {config_servo.describe()}",
        "",
        "| parameter | fitted | std. error | config | unit |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for name in FITTED:
        value, err = getattr(fit.params, name), fit.stderr[name]
        lines.append(
            f"| {name} | {value:.4g} | {err:.2g} | {getattr(start, name):.4g} | {_UNITS[name]} |"
        )
    lines += [
        "",
        f"Fit: {fit.evaluations} predictions, {fit.samples} residuals, RMS "
        f"{math.degrees(_overall(fit.rms)):.3f} deg (each joint's constant pot offset removed).",
        "Torques are relative to the robot config's body inertia (no torque sensor).",
        "",
        "Validation gait (not used by the fit), RMS prediction error [deg]:",
        "",
        "| joint | config servo | identified | ratio |",
        "| --- | ---: | ---: | ---: |",
    ]
    for k, name in enumerate(names):
        ratio = before[k] / after[k] if after[k] > 0 else math.inf
        lines.append(
            f"| {name} | {math.degrees(before[k]):.3f} | {math.degrees(after[k]):.3f} "
            f"| {ratio:.1f} |"
        )
    total_b, total_a = _overall(before), _overall(after)
    lines.append(
        f"| all | {math.degrees(total_b):.3f} | {math.degrees(total_a):.3f} "
        f"| {total_b / total_a if total_a > 0 else math.inf:.1f} |"
    )
    lines += ["", f"Overlay: {overlay} (use it with --robot)", ""]
    return "\n".join(lines)


def plot(
    out: Path,
    model: SnakeModel,
    experiment: Recording,
    check: Recording,
    before: ServoModel,
    after: ServoModel,
) -> None:
    """``steps.png`` (the experiment's steps: measured, the config's servo model, the fitted
    one) and ``validation.png`` (the validation gait, the same three)."""
    from snake_viz.offline import panel_grid, pyplot

    plt = pyplot()
    for name, rec in (("steps", experiment), ("validation", check)):
        curves = {
            "measured": rec.measured,
            "config servo": predict(model, before, rec),
            "identified": predict(model, after, rec),
        }
        n = len(rec.joint_names)
        rows, cols = panel_grid(n)
        fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 2.6 * rows), squeeze=False)
        for k, joint in enumerate(rec.joint_names):
            ax = axes[k // cols][k % cols]
            ax.plot(rec.t - rec.t[0], np.degrees(rec.reference[:, k]), "k:", lw=0.8, label="pulses")
            for label, q in curves.items():
                offset = np.mean(rec.measured[:, k] - q[:, k]) if label != "measured" else 0.0
                ax.plot(rec.t - rec.t[0], np.degrees(q[:, k] + offset), lw=1.0, label=label)
            ax.set_title(joint)
            ax.set_xlabel("t [s]")
            ax.set_ylabel("angle [deg]")
        axes[0][0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / f"{name}.png", dpi=90)
        plt.close(fig)
