"""The identification workflow, :func:`identify`: the experiment and a validation gait the
fit never sees, played on the robot and recorded as bags (or an earlier run's bags read
again), the servo parameters fitted by least squares
(:func:`snake_dynamics.sim.identification.fit_servo`, from a start fitted to the experiment's
first seconds while the rest of it plays: :func:`fit_start`), written as a robot config overlay,
and the report (fitted values with standard errors, the validation gait's prediction error
with the config's servo model and with the fitted one) and plots. On a floor with a pose
sensor the floor stage follows (:mod:`.floor`): crawls, the floor's friction fitted with the
identified servos, a validation crawl, the ground in the overlay."""

from __future__ import annotations

import dataclasses
import datetime as dt_module
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
import yaml

from snake_driver.calibration import servos_of
from snake_dynamics.errors import IdentificationError
from snake_dynamics.gaits import make_gait
from snake_dynamics.model import SnakeModel, read_robot_yaml
from snake_dynamics.robot import Robot
from snake_dynamics.servo import NOMINAL, ServoModel, ServoParams
from snake_dynamics.sim.identification import (
    FITTED,
    PER_JOINT,
    Excitation,
    PerJointFit,
    Recording,
    ServoFit,
    fit_servo,
    fit_servo_per_joint,
    predict,
    rms_error,
    seen_from_the_command,
)
from snake_ros.paths import robot_config

from ..emulator import Emulator, Endpoint
from ..plant_bridge import build_plant
from .experiment import IdentifyError, Say, Take, play, robot_link, start_emulator
from .floor import (
    FloorFit,
    FloorResult,
    fit_floor,
    fit_json,
    play_crawls,
    plot_paths,
    report_section,
    stage_plants,
    validate_floor,
    wants_floor,
)
from .heldout import HELD_OUT, Model, judge, judged_json
from .heldout import report_section as heldout_section
from .plots import plot
from .recording import read_recording, write_bag
from .report import report_text, write_fit, write_overlay

#: ``--servo-fit``'s choices: one servo for every joint, or each joint's own (eq. 470).
SERVO_FITS = ("shared", "per-joint")

_T = TypeVar("_T")

#: The validation gait's parameters where none is given.
VALIDATION_DEFAULTS = {"amplitude": 0.6, "frequency": 0.8}
#: The experiment's first seconds [s], its steps (eq. 207), that the servo fit's start is
#: fitted to while the rest of it plays (``experiment_start_bag``).
START_S = 6.0
#: The start fit's stopping tolerance (:func:`fit_servo`'s): a start, not the result (on two
#: runs' bags 49-57 predictions instead of 56-89 at the fit's 1e-4, and the fit from it
#: within 0.02 standard errors of the fit from that slower start).
START_TOLERANCE = 1e-2


def _start_params(servo: ServoModel) -> ServoParams:
    """The fit's starting guess: the config's first servo, with a finite torque-speed line."""
    first = servo.joints[0]
    if math.isfinite(first.stall_torque) and math.isfinite(first.no_load_speed):
        return first
    return NOMINAL


def default_robot(plant: Path | None, real: bool, from_bags: Path | None = None) -> str:
    """The robot config ``snake identify`` uses unless told: for an earlier run's bags, the
    one that run used (the ``base:`` of its robot_identified.yaml, where that file still
    exists); ``robot_table`` (the robot on the table, with its bodies' flat undersides:
    ground.width) for an emulated plant (its file) on a floor; else ``robot_feedback``."""
    overlay = None if from_bags is None else from_bags / "robot_identified.yaml"
    if overlay is not None and overlay.is_file():
        base = yaml.safe_load(overlay.read_text()).get("base")
        if isinstance(base, str) and Path(base).is_file():
            return base
    if real or plant is None:
        return "robot_feedback"
    # the plant's ground: decides which robot; the plant is checked against the robot later
    doc = read_robot_yaml(plant, "plant file")
    on_floor = isinstance(doc, Mapping) and doc.get("ground") is not None
    return "robot_table" if on_floor else "robot_feedback"


def held_out_models(
    body: SnakeModel,
    config_servo: ServoModel,
    identified: ServoModel,
    floor: FloorResult,
    robot: Robot,
    plant: Path | None,
) -> list[Model]:
    """What the held-out crawls are predicted with: the robot config (its servos and floor),
    the identified servos and floor, and where the plant file is known the plant's truth on
    the model (its scaled body, each joint's servo seen from the command, eq. 210, its
    floor): what the model family does at best."""
    models = [
        Model("config", body, config_servo, floor.config_ground),
        Model("identified", body, identified, floor.fit.ground),
    ]
    if plant is not None:
        truth = build_plant(robot, plant)
        servo = getattr(truth, "servo", truth.params.servo)  # a MuJoCo plant's own spread
        ground = truth.params.ground
        assert ground is not None  # the floor stage's plant lies on a floor
        models.append(Model("plant truth", truth.model, seen_from_the_command(servo), ground))
    return models


@dataclass(frozen=True)
class ServoStage:
    """The servo stage's fit.

    Attributes:
        fit: the shared servo's fit.
        servo: the identified servos (the shared fit's, or each joint's own).
        per_joint: the per-joint fit, where asked for.
    """

    fit: ServoFit
    servo: ServoModel
    per_joint: PerJointFit | None

    @property
    def evaluations(self) -> int:
        """Predictions of the experiment the fits ran."""
        return self.fit.evaluations + (0 if self.per_joint is None else self.per_joint.evaluations)


def _progress(
    what: str, every: int, say: Say, stop: threading.Event
) -> Callable[[int, float], None]:
    """A fit's progress: a line every ``every`` predictions; IdentifyError once ``stop`` is
    set (the takes beside the fit failed)."""

    def report(k: int, rms: float) -> None:
        if stop.is_set():
            raise IdentifyError(f"the servo {what} stopped: the takes beside it failed")
        if k % every == 0:
            say(f"{what}: prediction {k}, RMS {math.degrees(rms):.3f} deg")

    return report


def fit_start(
    model: SnakeModel, steps: Recording, config_servo: ServoModel, say: Say, stop: threading.Event
) -> ServoFit | None:
    """The servo fit's start: :func:`fit_servo` from the config's servo on the experiment's
    first :data:`START_S` seconds (its steps), while the rest of it plays; None where that
    fit fails (one line says so: the servo fit then starts from the config's servo).

    Raises:
        IdentifyError: ``stop`` set (the experiment failed): at the next prediction.
    """
    start = _start_params(config_servo)
    try:
        progress = _progress("start fit", 10, say, stop)
        return fit_servo(model, steps, start, progress=progress, tolerance=START_TOLERANCE)
    except IdentificationError as exc:
        say(f"start fit: {exc}; the servo fit starts from the config's servo")
        return None


def fit_servos(
    model: SnakeModel,
    experiment: Recording,
    start: ServoParams,
    servo_fit: str,
    say: Say,
    stop: threading.Event,
) -> ServoStage:
    """Fit the servos to the experiment (:func:`fit_servo` from ``start``: :func:`fit_start`'s
    servo, or the config's, then with ``servo_fit`` per-joint :func:`fit_servo_per_joint`).
    It runs beside the robot's takes after the experiment (the validation gait, the floor
    stage's crawls).

    Raises:
        IdentifyError: ``stop`` set (the takes beside it failed): at the next prediction.
        snake_dynamics.errors.SnakeDynamicsError: the fit.
    """
    fit = fit_servo(model, experiment, start, progress=_progress("fit", 10, say, stop))
    fitted_model = ServoModel.uniform(fit.params, model.n_joints, "identified")
    per_joint: PerJointFit | None = None
    if servo_fit == "per-joint":
        count = len(PER_JOINT) * model.n_joints
        say(f"fitting each joint's {', '.join(PER_JOINT)} ({count} values)")
        per_joint = fit_servo_per_joint(
            model, experiment, fit.params, progress=_progress("per-joint fit", 20, say, stop)
        )
        fitted_model = per_joint.servo
        for name, key in per_joint.unseparated:
            say(f"{name} {key}: not separated by the experiment; the shared value kept")
    return ServoStage(fit, fitted_model, per_joint)


def clocked(say: Say, what: str, work: Callable[[], _T], predictions: Callable[[_T], int]) -> _T:
    """``work()``, then one progress line: its predictions, wall time and CPU time (the
    whole process's over that time, every thread's: while takes play beside it, theirs
    too; ``bench/identify.py`` reads the line)."""
    wall, cpu = time.monotonic(), time.process_time()
    result = work()
    say(
        f"{what} done: {predictions(result)} predictions in {time.monotonic() - wall:.1f} s, "
        f"{time.process_time() - cpu:.1f} s CPU"
    )
    return result


def identify(
    *,
    robot: Robot,
    endpoint: Endpoint | None,
    key_hex: str,
    plant: Path | None,
    validation_gait: str,
    gait_params: Mapping[str, float],
    validation_time: float,
    from_bags: Path | None,
    output: Path | None,
    plots: bool,
    say: Say,
    floor: bool | None = None,
    crawl_time: float = 3.0,
    floor_fitted: Sequence[str] = ("mu_along", "mu_across"),
    servo_fit: str = SERVO_FITS[0],
    held_out: bool = False,
) -> str:
    """Run the experiment and the validation on the robot (or read their bags), fit, and
    write the overlay, the report and the plots to the output folder.

    Args:
        robot: the robot (:class:`snake_dynamics.robot.Robot`, read once by the command;
            unless named, :func:`default_robot`), with feedback on every joint.
        endpoint: where the real robot listens; None: the emulated robot, started here.
        key_hex: 32 hex digits for authenticated mode, or "".
        plant: the emulated robot's plant file (None: config/plant.yaml).
        validation_gait: gait name of the validation run.
        gait_params: its parameters, over :data:`VALIDATION_DEFAULTS`.
        validation_time: length of the validation run [s].
        from_bags: fit the bags of this earlier run's folder again (no robot).
        output: the output folder (None: ``runs/identify-<time>``); new or empty unless
            ``from_bags``.
        plots: write ``steps.png`` and ``validation.png`` (and ``floor_paths.png``).
        say: progress lines.
        floor: the floor stage: True, False, or None: wherever the emulated plant has a
            floor (an earlier run: wherever its folder has the crawls' bags).
        crawl_time: length of each crawl [s].
        floor_fitted: the ground parameters fitted
            (:data:`snake_dynamics.sim.floor_identification.FITTABLE`).
        servo_fit: ``per-joint``: each joint's own servo after the shared one
            (:func:`snake_dynamics.sim.identification.fit_servo_per_joint`); ``shared``: one
            servo for every joint.
        held_out: after the floor's crawls, play the held-out crawls (:data:`.heldout.HELD_OUT`,
            32 s of real time) and predict them (an earlier run's folder: wherever it has
            their bags).

    Returns:
        The report (Markdown), as written to ``report.md``.

    Raises:
        IdentifyError: a robot without feedback, an output folder in use, no session with
            the robot or a lost one, bags that are not identification bags; the floor stage
            on a real robot, a plant without a floor or on one without a pose sensor, a
            crawl with too few poses.
        snake_dynamics.errors.SnakeDynamicsError: the robot config, the gait or the fit.
    """
    config = robot.path.resolve()
    config_model, servos = robot.model, servos_of(robot)
    # the servo stage's body: the tail held, no gravity (the plant without a floor, eq. 208)
    model = dataclasses.replace(config_model, gravity=np.zeros(3), base="fixed", ground=None)
    body = dataclasses.replace(config_model, gravity=np.zeros(3))  # the floor stage's
    names = model.joint_names
    missing = [c.joint for c in servos.channels if c.feedback is None]
    if missing and from_bags is None:
        raise IdentifyError(
            f"{config}: {', '.join(missing)} ha{'s' if len(missing) == 1 else 've'} no feedback "
            "(servos.joints.<joint>.feedback): identification needs measured angles "
            "(config/robot_feedback.yaml shows the calibration)"
        )
    config_servo = robot.servo
    validation = make_gait(validation_gait, model, **{**VALIDATION_DEFAULTS, **gait_params})
    out = output or Path("runs") / f"identify-{dt_module.datetime.now():%Y%m%d-%H%M%S}"
    bags = from_bags or out
    plant_lines: list[str] = []
    floor = wants_floor(floor, endpoint is not None, from_bags)
    floor_plant = None
    stop = threading.Event()
    pending: Future[ServoStage] | None = None
    experiment: Recording | None = None
    floor_emulator: Future[Emulator] | None = None
    floor_fits: list[Future[FloorFit]] = []
    starts: list[Future[ServoFit | None]] = []

    def start_stage(so_far: Take | None) -> None:
        """The start fit, on the pool: on the experiment's first :data:`START_S` seconds,
        their bag written from the take so far (``so_far``) or an earlier run's read."""

        def work() -> ServoFit | None:
            path = bags / "experiment_start_bag"
            if so_far is not None:
                write_bag(path, so_far, servos)
            steps = read_recording(path, names)
            return clocked(
                say,
                "start fit",
                lambda: fit_start(model, steps, config_servo, say, stop),
                lambda fit: 0 if fit is None else fit.evaluations,
            )

        starts.append(pool.submit(work))

    def servo_stage(experiment: Recording) -> Future[ServoStage]:
        def work() -> ServoStage:
            first = starts[0].result() if starts else None
            start = _start_params(config_servo) if first is None else first.params
            return clocked(
                say,
                "servo fit",
                lambda: fit_servos(model, experiment, start, servo_fit, say, stop),
                lambda stage: stage.evaluations,
            )

        return pool.submit(work)

    def floor_stage() -> None:
        """The floor fit, on the pool: once the servo fit is done and the bags of the crawls
        it fits are written (it computes while the validation crawl plays)."""

        def work() -> FloorFit:
            assert pending is not None
            servo = pending.result().servo
            return clocked(
                say,
                "floor fit",
                lambda: fit_floor(
                    model=body, servo=servo, bags=bags, fitted=floor_fitted, say=say, stop=stop
                ),
                lambda floor: floor.fit.evaluations,
            )

        floor_fits.append(pool.submit(work))

    # the start fit computes while the experiment's chirp and rests play, the servo fit while
    # the takes after the experiment play, the floor stage's emulated robot starts while the
    # validation gait plays, and the floor fit computes while the validation crawl plays;
    # the validation gait is predicted with the config's servo beside the servo fit, with the
    # fitted one beside the floor fit (no job queues behind another's wait: a thread each)
    with ThreadPoolExecutor(6) as pool:
        try:
            if from_bags is None:
                if out.exists() and any(out.iterdir()):
                    raise IdentifyError(f"{out} exists and is not empty; choose a new folder (-o)")
                out.mkdir(parents=True, exist_ok=True)
                servo_plant = plant or robot_config("plant")
                if endpoint is None:
                    servo_plant, floor_plant = stage_plants(floor, servo_plant, names, out)
                excitation = Excitation.within(model.joint_limits[:, 0], model.joint_limits[:, 1])
                with robot_link(
                    servos,
                    endpoint=endpoint,
                    key_hex=key_hex,
                    robot=config,
                    plant=servo_plant,
                    say=say,
                    plant_report=plant_lines.append,
                ) as session:
                    for label, trajectory, seconds in (
                        ("experiment", excitation, excitation.duration),
                        ("validation", validation, validation_time),
                    ):
                        early = (START_S, start_stage) if experiment is None else None
                        take = play(session.link, trajectory, seconds, say, label, early)
                        reports = write_bag(out / f"{label}_bag", take, servos)
                        commands = len(take.commands)
                        say(f"{label}: {commands} commands, {reports} reports -> {label}_bag")
                        if experiment is None:
                            experiment = read_recording(out / "experiment_bag", names)
                            pending = servo_stage(experiment)
                            if floor_plant is not None:
                                floor_emulator = pool.submit(
                                    start_emulator, floor_plant, config, key_hex
                                )
            else:
                out.mkdir(parents=True, exist_ok=True)
                if (bags / "experiment_start_bag").exists():  # none before the start fit
                    start_stage(None)
                experiment = read_recording(bags / "experiment_bag", names)
                pending = servo_stage(experiment)
                if floor:
                    floor_stage()
            assert experiment is not None and pending is not None
            check = read_recording(bags / "validation_bag", names)
            predicted_before = pool.submit(predict, model, config_servo, check)
            size = f"{experiment.t.size} reports x {len(names)} joints"
            say(f"fitting {len(FITTED)} parameters to {size}")
            unreadable = 0
            if floor_plant is not None:
                say(f"floor stage: the robot on the floor of {floor_plant}")
                unreadable = play_crawls(
                    model=body,
                    servos=servos,
                    config=config,
                    plant=floor_plant,
                    key_hex=key_hex,
                    duration=crawl_time,
                    out=out,
                    say=say,
                    plant_report=plant_lines,
                    held_out=held_out,
                    started=floor_emulator,
                    crawled=None if held_out else floor_stage,
                )
                if held_out:  # 32 s of crawls the robot plays with no fit beside it
                    floor_stage()
        except BaseException:
            stop.set()  # the fits stop at their next prediction
            if floor_emulator is not None and floor_emulator.exception() is None:
                floor_emulator.result().stop()  # a no-op where the crawls' session stopped it
            raise
        stage = pending.result()
        fit, per_joint, fitted_model = stage.fit, stage.per_joint, stage.servo
        predicted_after = pool.submit(predict, model, fitted_model, check)
        floor_result: FloorResult | None = None
        if floor_fits:
            floor_result = validate_floor(
                floor_fits[0].result(),
                model=body,
                servo=fitted_model,
                bags=bags,
                unreadable=unreadable,
            )
        before, after = (
            rms_error(p.result(), check.measured) for p in (predicted_before, predicted_after)
        )
    judged = None
    if floor_result is not None and (bags / f"{HELD_OUT[0][0]}_bag").exists():
        say(f"predicting {len(HELD_OUT)} held-out crawls")
        models = held_out_models(body, config_servo, fitted_model, floor_result, robot, floor_plant)
        judged = clocked(
            say,
            "held-out crawls",
            lambda: judge(bags, names, models),
            lambda _: len(HELD_OUT) * len(models),
        )
    overlay = write_overlay(
        out / "robot_identified.yaml",
        config,
        fit,
        before,
        after,
        None if floor_result is None else floor_result.fit.ground,
        per_joint,
    )
    summary = report_text(fit, config_servo, names, before, after, overlay, per_joint)
    if floor_result is not None:
        summary += "\n" + report_section(floor_result)
    if judged is not None:
        summary += "\n" + heldout_section(judged)
    for line in plant_lines:  # the emulated robot's own account of real time
        summary += (
            f"\nEmulated robot: {line}\n(the reports are stamped on the robot's own clock: "
            "one that fell behind real time stretches no time constant of the fit)\n"
        )
    (out / "report.md").write_text(summary)
    write_fit(
        out / "fit.json",
        config,
        fit,
        config_servo,
        before,
        after,
        None if floor_result is None else fit_json(floor_result),
        per_joint,
        None if judged is None else judged_json(judged),
    )
    if plots:
        plot(out, model, experiment, check, config_servo, fitted_model)
        if floor_result is not None:
            plot_paths(out, floor_result)
    return summary
