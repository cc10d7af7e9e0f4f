"""The floor stage of ``snake identify`` (docs/mfm.md, "Identifying the floor", eqs. 243-245):
after the servos, crawls on the floor with the pose sensor tracking the tail, the floor's
friction fitted with the just-identified servos, and a validation crawl the fit never sees.

- Which plant each stage runs on (:func:`stage_plants`): servos are identified with the
  robot held (the plant file's floor taken away, as a real robot is hung by its tail), the
  floor with it lying on the table.
- The crawls (:data:`CRAWLS`: sidewinding loads the floor mostly across the bodies, the
  serpenoid along them) and the validation crawl (:data:`FLOOR_VALIDATION`, parameters the
  fit did not use), each ramped in from rest and out to rest (:func:`crawl`), played and
  recorded with the poses (:func:`play_crawls`), on an emulated robot that may have started
  while the servo stage played (:func:`.experiment.start_emulator`).
- The fit (:func:`fit_floor`, which may run while the validation crawl plays) and the
  validation's numbers (:func:`validate_floor`): path error RMS and final, the marker's
  travel measured and predicted, with the robot config's floor and the fitted one.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from numpy.typing import NDArray

from snake_driver.calibration import ServoMap
from snake_dynamics.gaits import Gait, PeriodicGait, Transition, make_gait
from snake_dynamics.ground import Ground
from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim import load_plant
from snake_dynamics.sim.floor_identification import (
    GroundFit,
    PathRecording,
    fit_ground,
    path_error,
    predict_path,
)
from snake_dynamics.sim.identification import in_parallel
from snake_viz.path_compare import REASONS

from ..emulator import Emulator
from .experiment import IdentifyError, Say, play, robot_link
from .heldout import HELD_OUT, HELD_OUT_S
from .poses import Crawl, PoseListener, crawl_recording
from .recording import write_bag

FloatArray = NDArray[np.float64]

#: The crawls the floor is fitted to: (bag label, gait, parameters), played first, so that
#: the fit computes while the validation crawl plays (the table robot's flat bodies stay
#: upright, and every crawl, the validation crawl too, starts from its measured orientation).
CRAWLS: tuple[tuple[str, str, dict[str, float]], ...] = (
    ("crawl_serpenoid", "serpenoid", {"amplitude": 0.8, "frequency": 0.6}),
    (
        "crawl_sidewinding",
        "sidewinding",
        {"amplitude": 0.5, "frequency": 0.8, "pitch_amplitude": 0.1},
    ),
)
#: The validation crawl, never used by the fit: the serpenoid faster (its travel depends on
#: the friction most of the gaits'), (bag label, gait, parameters). None of the three puts a
#: table servo on its torque-speed line (eq. 217, robot_table and robot_table_true): a
#: saturated servo follows late whatever it is told, and a crawl that leans on one (as
#: sidewinding with config/gaits.yaml's 0.3 rad pitch wave did, joint_2 for 65 % of a
#: period) is mispredicted by centimetres with servos identified a few per cent off.
FLOOR_VALIDATION: tuple[str, str, dict[str, float]] = (
    "floor_validation",
    "serpenoid",
    {"amplitude": 0.8, "frequency": 0.8},
)
#: A crawl blends in from rest and out to rest over this [s] (it starts and ends straight).
RAMP_S = 0.5


def stage_plants(
    floor: bool | None, plant: Path, names: Sequence[str], out: Path
) -> tuple[Path, Path | None]:
    """The emulated robot's plant file for the servo stage and for the floor stage.

    A plant on a floor (``ground:``) is held for the servo stage: ``out/plant_held.yaml``,
    the same plant without its ``ground:`` and ``pose_sensor:``.

    Args:
        floor: the floor stage asked for (True), refused (False), or wherever the plant is on
            a floor (None).
        plant: the plant file.
        names: the robot's joint names.
        out: where the held plant's file goes.

    Returns:
        (servo stage's plant, floor stage's plant or None: no floor stage).

    Raises:
        IdentifyError: the floor stage asked of a plant without a floor, or a plant on a
            floor without a pose sensor.
        snake_dynamics.errors.ModelError: an invalid plant file.
    """
    params = load_plant(plant, names)
    if floor is False or (floor is None and params.ground is None):
        return (plant if params.ground is None else _held(plant, out)), None
    if params.ground is None:
        raise IdentifyError(
            f"{plant}: no ground: (the robot hangs from its tail): the floor stage needs a "
            "plant on a floor (e.g. --plant plant_floor), or run --no-floor"
        )
    if params.pose_sensor is None:
        raise IdentifyError(
            f"{plant}: a plant on a floor without a pose_sensor: nothing measures the path "
            "(add pose_sensor:, see config/plant_floor.yaml), or run --no-floor"
        )
    return _held(plant, out), plant


def _held(plant: Path, out: Path) -> Path:
    """``out/plant_held.yaml``: ``plant`` without its floor and pose sensor."""
    held = out / "plant_held.yaml"
    doc = {"base": str(plant.resolve()), "ground": None, "pose_sensor": None}
    held.write_text(
        "# The plant of the servo stage: the robot held by its tail, off the floor.\n"
        + yaml.safe_dump(doc, sort_keys=False)
    )
    return held


def crawl(model: SnakeModel, gait: str, params: Mapping[str, float], duration: float) -> Gait:
    """``gait`` blended in from rest over :data:`RAMP_S` and back to rest by ``duration``
    [s] (a quintic blend: :class:`snake_dynamics.gaits.Transition`).

    Raises:
        IdentifyError: a crawl shorter than two ramps.
    """
    if duration < 2.0 * RAMP_S:
        raise IdentifyError(f"--crawl-time must be >= {2.0 * RAMP_S:g} s, got {duration:g}")
    zero = np.zeros(model.n_joints)
    rest = PeriodicGait(zero, zero, zero, 0.0, "rest")
    moving = Transition(rest, make_gait(gait, model, **params), 0.0, RAMP_S)
    return Transition(moving, rest, duration - RAMP_S, RAMP_S)


def play_crawls(
    *,
    model: SnakeModel,
    servos: ServoMap,
    config: Path,
    plant: Path,
    key_hex: str,
    duration: float,
    out: Path,
    say: Say,
    plant_report: list[str],
    held_out: bool = False,
    started: Future[Emulator] | None = None,
    crawled: Callable[[], None] | None = None,
) -> int:
    """Start the emulated robot on its floor (or take the one ``started``) and play
    :data:`CRAWLS`, then :data:`FLOOR_VALIDATION`, for ``duration`` seconds each, then with
    ``held_out`` the held-out crawls (:data:`.heldout.HELD_OUT`, :data:`.heldout.HELD_OUT_S`
    each), writing each as a bag (``out/<label>_bag``) with the poses its sensor delivered;
    ``crawled()`` once the bags of :data:`CRAWLS` are written (the floor fit may start).
    Returns the datagrams that were not poses.

    Raises:
        IdentifyError: no pose sensor port, a lost link.
    """
    with robot_link(
        servos,
        endpoint=None,
        key_hex=key_hex,
        robot=config,
        plant=plant,
        say=say,
        plant_report=plant_report.append,
        started=started,
    ) as session:
        port = session.endpoint.pose_port
        if port is None:
            raise IdentifyError(f"{plant}: the emulated robot reported no pose sensor port")
        with PoseListener(port) as listener:
            takes = [(*c, duration) for c in (*CRAWLS, FLOOR_VALIDATION)]
            takes += [(*c, HELD_OUT_S) for c in HELD_OUT] if held_out else []
            for k, (label, gait, params, seconds) in enumerate(takes):
                listener.take()  # those of the rest before the crawl
                trajectory = crawl(model, gait, params, seconds)
                take = play(session.link, trajectory, seconds, say, label)
                take.poses = listener.take()
                reports = write_bag(out / f"{label}_bag", take, servos)
                say(f"{label}: {reports} reports, {len(take.poses)} poses -> {label}_bag")
                if k == len(CRAWLS) - 1 and crawled is not None:
                    crawled()
            return listener.unreadable


@dataclass(frozen=True)
class PathNumbers:
    """A predicted path against the measured one (eq. 244).

    Attributes:
        rms: the path error's RMS [m].
        final: the path error at the last pose [m].
        travel: the predicted marker's distance from its first pose to its last [m].
    """

    rms: float
    final: float
    travel: float


def path_numbers(predicted: FloatArray, recording: PathRecording) -> PathNumbers:
    """RMS and final path error and the predicted travel of a predicted path [m]."""
    error = path_error(predicted, recording)
    return PathNumbers(
        float(np.sqrt(np.mean(error**2))),
        float(error[-1]),
        float(np.hypot(*(predicted[-1] - predicted[0]))),
    )


def travel(recording: PathRecording) -> float:
    """The measured marker's distance from its first pose to its last [m]."""
    return float(np.hypot(*(recording.xy[-1] - recording.xy[0])))


@dataclass(frozen=True)
class FloorResult:
    """The floor stage's outcome.

    Attributes:
        fit: the least-squares fit (eq. 245).
        config_ground: the robot config's floor (the fit's start, "before").
        crawls: the crawls fitted, by label.
        validation: the validation crawl.
        predicted_before: its marker path with the config's floor [m], shape (k, 2).
        predicted_after: with the fitted floor [m], shape (k, 2).
        unreadable: datagrams that were not poses (or not finite).
    """

    fit: GroundFit
    config_ground: Ground
    crawls: dict[str, Crawl]
    validation: Crawl
    predicted_before: FloatArray
    predicted_after: FloatArray
    unreadable: int

    @property
    def before(self) -> PathNumbers:
        """The validation crawl predicted with the config's floor."""
        return path_numbers(self.predicted_before, self.validation.recording)

    @property
    def after(self) -> PathNumbers:
        """The validation crawl predicted with the fitted floor."""
        return path_numbers(self.predicted_after, self.validation.recording)


@dataclass(frozen=True)
class FloorFit:
    """The floor fitted to :data:`CRAWLS`, before the validation crawl is judged.

    Attributes:
        fit: the least-squares fit (eq. 245).
        config_ground: the robot config's floor (the fit's start).
        crawls: the crawls fitted, by label.
    """

    fit: GroundFit
    config_ground: Ground
    crawls: dict[str, Crawl]


def fit_floor(
    *,
    model: SnakeModel,
    servo: ServoModel,
    bags: Path,
    fitted: Sequence[str],
    say: Say,
    stop: threading.Event | None = None,
) -> FloorFit:
    """Fit the floor to the bags of :data:`CRAWLS` in ``bags`` from the robot config's floor
    (the model's ``ground:``, else the Ground defaults) with the identified ``servo``; it
    needs neither the validation crawl's bag nor the held-out crawls'.

    Raises:
        IdentifyError: a crawl's bag is missing, unreadable or has too few poses; ``stop``
            set (the takes beside the fit failed): at the next prediction.
        snake_dynamics.errors.IdentificationError: the fit.
    """
    names = model.joint_names
    crawls = {label: crawl_recording(bags / f"{label}_bag", names) for label, _, _ in CRAWLS}
    start = model.ground if model.ground is not None else Ground()
    poses = sum(c.recording.pose_t.size for c in crawls.values())
    say(f"fitting the floor ({', '.join(fitted)}) to {poses} poses of {len(crawls)} crawls")

    def progress(k: int, rms: float) -> None:
        if stop is not None and stop.is_set():
            raise IdentifyError("the floor fit stopped: the takes beside it failed")
        if k % 5 == 0:
            say(f"floor fit: prediction {k}, RMS path error {rms * 1e3:.2f} mm")

    takes = [c.recording for c in crawls.values()]
    fit = fit_ground(model, servo, takes, start, fitted=fitted, progress=progress)
    return FloorFit(fit, start, crawls)


def validate_floor(
    floor: FloorFit, *, model: SnakeModel, servo: ServoModel, bags: Path, unreadable: int
) -> FloorResult:
    """The floor stage's outcome: the validation crawl's bag in ``bags`` predicted with the
    identified ``servo`` on the config's floor and on the fitted one.

    Raises:
        IdentifyError: the validation crawl's bag is missing, unreadable or has too few
            poses.
        snake_dynamics.errors.IdentificationError: a prediction.
    """
    validation = crawl_recording(bags / f"{FLOOR_VALIDATION[0]}_bag", model.joint_names)
    check = validation.recording
    before, after = in_parallel(
        lambda ground: predict_path(model, servo, ground, check),
        [floor.config_ground, floor.fit.ground],
    )
    return FloorResult(
        floor.fit, floor.config_ground, floor.crawls, validation, before, after, unreadable
    )


def overlay_section(result: FloorResult) -> dict[str, Any]:
    """The overlay's ``model: ground:`` (every Ground key, the fitted ones fitted)."""
    ground = {
        k: (float(f"{v:.6g}") if isinstance(v, float) else v)
        for k, v in dataclasses.asdict(result.fit.ground).items()
    }
    return {"ground": ground}


def _mm(x: float) -> str:
    return f"{x * 1e3:.1f}"


def report_section(result: FloorResult) -> str:
    """The report's floor section (Markdown): fitted values with standard errors, each
    crawl's path error, and the validation crawl before and after."""
    fit, start = result.fit, result.config_ground
    lines = [
        "## Floor identification",
        "",
        "| parameter | fitted | std. error | config |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name in fit.fitted:
        config = getattr(start, name)
        lines.append(
            f"| {name} | {getattr(fit.ground, name):.4g} | {fit.stderr[name]:.2g} "
            f"| {start.backward if config is None else config:.4g} |"
        )
    lines += [
        "",
        "| crawl | poses | RMS path error, config floor [mm] | fitted [mm] "
        "| RMS joint error, config floor [deg] | fitted [deg] |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (label, crawl_), b, a, jb, ja in zip(
        result.crawls.items(),
        fit.rms_before,
        fit.rms_after,
        fit.joint_rms_before,
        fit.joint_rms_after,
        strict=True,
    ):
        lines.append(
            f"| {label} | {crawl_.recording.pose_t.size} | {_mm(b)} | {_mm(a)} "
            f"| {math.degrees(jb):.2f} | {math.degrees(ja):.2f} |"
        )
    _, gait, params = FLOOR_VALIDATION
    described = ", ".join(f"{k} {v:g}" for k, v in params.items())
    before, after = result.before, result.after
    measured = travel(result.validation.recording)
    lines += [
        "",
        f"Fit: {fit.evaluations} predictions of the paths and the joints (the identified "
        "servos on the robot config's body; each crawl's path error after the rigid motion "
        "in the plane that fits it best, eq. 248).",
        "",
        f"Validation crawl ({gait}, {described}; not used by the fit), marker (tail CM):",
        "",
        "| floor | RMS path error [mm] | final error [mm] | travel [mm] | travel error |",
        "| --- | ---: | ---: | ---: | ---: |",
        f"| measured | | | {_mm(measured)} | |",
    ]
    for label, numbers in (("config", before), ("identified", after)):
        lines.append(
            f"| {label} | {_mm(numbers.rms)} | {_mm(numbers.final)} | {_mm(numbers.travel)} "
            f"| {(numbers.travel - measured) / measured:+.1%} |"
        )
    takes = (*result.crawls.values(), result.validation)
    counts = {k: sum(c.rejected[k] for c in takes) for k in REASONS}
    bad = ", ".join(f"{v} {k}" for k, v in counts.items() if v) or "none"
    lines += ["", f"Poses rejected: {bad}; datagrams unreadable: {result.unreadable}.", ""]
    return "\n".join(lines)


def fit_json(result: FloorResult) -> dict[str, Any]:
    """``fit.json``'s ``floor`` entry: fitted values, standard errors, path errors [m]."""
    before, after = result.before, result.after
    return {
        "ground": dataclasses.asdict(result.fit.ground),
        "fitted": list(result.fit.fitted),
        "stderr": result.fit.stderr,
        "config_ground": dataclasses.asdict(result.config_ground),
        "crawl_rms_before_m": result.fit.rms_before.tolist(),
        "crawl_rms_after_m": result.fit.rms_after.tolist(),
        "crawl_joint_rms_before_rad": result.fit.joint_rms_before.tolist(),
        "crawl_joint_rms_after_rad": result.fit.joint_rms_after.tolist(),
        "evaluations": result.fit.evaluations,
        "validation": {
            "travel_measured_m": travel(result.validation.recording),
            "before": dataclasses.asdict(before),
            "after": dataclasses.asdict(after),
        },
        "rejected": {
            label: c.rejected
            for label, c in (*result.crawls.items(), (FLOOR_VALIDATION[0], result.validation))
        },
        "unreadable": result.unreadable,
    }


def plot_paths(out: Path, result: FloorResult) -> None:
    """``out/floor_paths.png``: the validation crawl's marker path in the plane, measured
    and predicted with the config's floor and the fitted one."""
    from snake_viz.offline import pyplot

    plt = pyplot()
    rec = result.validation.recording
    fig, ax = plt.subplots(figsize=(6, 5))
    ax.plot(*rec.xy.T, "k.", ms=2, label="measured")
    ax.plot(*result.predicted_before.T, lw=1.2, label="predicted, config floor")
    ax.plot(*result.predicted_after.T, lw=1.2, label="predicted, identified floor")
    ax.plot(*rec.xy[0], "ko", ms=5)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_title(f"validation crawl: {FLOOR_VALIDATION[1]}, tail CM")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "floor_paths.png", dpi=90)
    plt.close(fig)


def wants_floor(floor: bool | None, real_robot: bool, from_bags: Path | None) -> bool | None:
    """Whether the floor stage runs: None, decided by the plant (:func:`stage_plants`).

    Raises:
        IdentifyError: the floor stage asked of a real robot (its poses are not read yet) or
            of an earlier run's folder without the crawls' bags.
    """
    if from_bags is not None:
        present = (from_bags / f"{FLOOR_VALIDATION[0]}_bag").exists()
        if floor and not present:
            raise IdentifyError(f"{from_bags}: no crawls' bags (the run had no floor stage)")
        return present if floor is None else floor
    if real_robot and floor:
        raise IdentifyError(
            "--floor reads the emulated pose sensor only (--emulate with a plant that has "
            "ground: and pose_sensor:); a real robot's /measured/pose is not read yet"
        )
    return False if real_robot else floor
