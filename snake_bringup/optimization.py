"""``snake optimize``'s study (:func:`optimize`): an Optuna search over a gait's parameters
whose trials are :func:`snake_bringup.sweep.ground_point` runs (``snake sweep``'s points) on
a Dask cluster (snake_bringup.cluster), stored in an Optuna storage (SQLite by default) so
that the same command resumes it; the best gait as a gaits-file entry, the trials CSV and
Optuna's plots.

The objective is the run's mean speed (maximised) or its cost of transport (minimised),
penalised by the servos' torque-speed limits (eq. 217). With ``s`` the largest share of the
run any servo spends on its torque-speed line and ``s0`` the share beyond which a servo
cannot carry the body along the gait (:data:`SATURATED_SHARE`, 10 %, as ``check_crawl``),
the value the sampler sees is the speed times ``exp(-max(0, s - s0) / s0)``, or the cost of
transport divided by it: free up to ``s0``, then a factor e lost per further ``s0``. Each
trial keeps its raw speed, cost of transport and ``s`` (user attributes), and the trials CSV
lists them: a saturating gait is penalised, never hidden.

Trials run in batches of as many as the cluster has worker threads: the batch is asked for,
run, and told back in trial order, so a seeded study gives the same trials on any cluster of
the same size.
"""

from __future__ import annotations

import csv
import datetime as dt_module
import json
import math
import signal
import sqlite3
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from snake_dynamics.floating import Locomotion, on_the_ground
from snake_dynamics.gaits import gait_parameters, make_gait
from snake_dynamics.sim.compensation import SATURATED_SHARE

from .cluster import (
    WORKER_TIMEOUT_S,
    ClusterError,
    ClusterOptions,
    Counts,
    Finished,
    ProgressLine,
    another_study,
    run_jobs,
    threads,
)
from .errors import BringupError, UsageError
from .sweep import DEFAULT_X, DEFAULT_Y, GroundPoint, GroundRuns

if TYPE_CHECKING:
    import optuna

#: What a study written by this module records (user attribute ``format``); a storage of
#: another format is refused, not migrated.
FORMAT = 1
#: The study's name in its storage.
STUDY_NAME = "snake-optimize"
#: What each objective does: the Optuna direction.
DIRECTIONS = {"speed": "maximize", "cot": "minimize"}
#: The samplers by option value.
SAMPLERS = ("tpe", "cmaes")
#: The default search: ``snake sweep``'s default grid, as ranges.
DEFAULT_RANGES = (DEFAULT_X.rsplit(":", 1)[0], DEFAULT_Y.rsplit(":", 1)[0])
#: Most trials one study runs.
MAX_TRIALS = 10_000
#: How long a locked SQLite storage is waited for [s] before it is refused.
LOCK_TIMEOUT_S = 2.0
#: The files a study writes beside its storage.
BEST_FILE, TRIALS_FILE = "best_gait.yaml", "trials.csv"
HISTORY_FILE, IMPORTANCE_FILE = "history.png", "importance.png"
#: The trials CSV's last columns: the servos' saturation (eq. 217), a failed run's error.
SATURATION_COLUMNS = ("saturated_share", "saturated_joint", "error")
#: The tables an Optuna storage holds (3.1 to 5.0), and its schema version's (alembic): an
#: SQLite file with any other table is another program's, never written to.
OPTUNA_TABLES = frozenset(
    {
        "studies",
        "study_directions",
        "study_system_attributes",
        "study_user_attributes",
        "trials",
        "trial_heartbeats",
        "trial_intermediate_values",
        "trial_params",
        "trial_system_attributes",
        "trial_user_attributes",
        "trial_values",
        "version_info",
        "alembic_version",
    }
)


class StudyError(BringupError):
    """A storage that cannot hold this study: locked, of another format or Optuna schema, or
    holding another study setup."""


@dataclass(frozen=True)
class Range:
    """One searched parameter: a float in [``low``, ``high``]."""

    name: str
    low: float
    high: float


def parse_range(text: str, option: str = "--param") -> Range:
    """``NAME=LOW:HIGH`` with finite LOW < HIGH.

    Raises:
        UsageError: any other form, or an empty range, in one line.
    """
    name, sep, spec = text.partition("=")
    low_text, colon, high_text = spec.partition(":")
    if not sep or not name.strip() or not colon:
        raise UsageError(f"{option} expects NAME=LOW:HIGH, got {text!r}")
    try:
        low, high = float(low_text), float(high_text)
    except ValueError:
        raise UsageError(f"{option} {name}: expected numbers LOW:HIGH, got {spec!r}") from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise UsageError(
            f"{option} {name}={spec}: an empty range; give finite LOW < HIGH (e.g. "
            f"{name}={min(low, high):g}:{max(low, high):g})"
        )
    return Range(name.strip(), low, high)


def check_ranges(gait: str, ranges: Sequence[Range], fixed: Mapping[str, float]) -> None:
    """Every range a parameter of ``gait``, searched once, not fixed too, and inside the
    gait's limits (``snake gaits``).

    Raises:
        UsageError: the first range that is not, in one line.
    """
    limits = gait_parameters(gait)
    if not ranges:
        raise UsageError("give at least one --param NAME=LOW:HIGH to search")
    seen: set[str] = set()
    for r in ranges:
        if r.name not in limits:
            raise UsageError(
                f"--param {r.name}: gait {gait} has no such parameter; it takes "
                f"{', '.join(sorted(limits))}"
            )
        if r.name in seen:
            raise UsageError(f"--param {r.name} given twice: give each parameter once")
        if r.name in fixed:
            raise UsageError(f"--set {r.name} is searched by --param: drop it from --set")
        seen.add(r.name)
        _, low, high, unit = limits[r.name]
        if r.low < low or r.high > high:
            raise UsageError(
                f"--param {r.name}={r.low:g}:{r.high:g} leaves gait {gait}'s limits "
                f"{low:g}:{high:g} {unit} (`snake gaits`): search inside them"
            )
        if unit == "joints" and math.ceil(r.low) > math.floor(r.high):
            raise UsageError(
                f"--param {r.name}={r.low:g}:{r.high:g} holds no whole number of joints"
            )


def saturation_penalty(share: float) -> float:
    """``exp(-max(0, s - s0) / s0)``: 1 up to :data:`SATURATED_SHARE` ``s0``, then e times
    less per further ``s0`` of the run a servo spends on its torque-speed line (eq. 217)."""
    return math.exp(-max(0.0, share - SATURATED_SHARE) / SATURATED_SHARE)


def objective_value(objective: str, point: GroundPoint) -> float:
    """The value the sampler sees: mean speed [m/s] times :func:`saturation_penalty` of the
    largest saturated share of a servo (0 with ideal servos), or the cost of transport
    divided by it."""
    penalty = saturation_penalty(max(point.saturated or (0.0,)))
    if objective == "speed":
        return point.travel.mean_speed * penalty
    return point.travel.cost_of_transport / penalty


def _quiet() -> None:
    """Optuna's per-trial log lines off, its experimental warnings too (imported on first
    use: ``snake`` starts without it)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def make_sampler(name: str, seed: int) -> optuna.samplers.BaseSampler:
    """The seeded sampler: ``tpe`` (any parameters) or ``cmaes`` (continuous ones; Optuna
    samples a single parameter independently, with its random sampler)."""
    from optuna.samplers import CmaEsSampler, TPESampler

    _quiet()
    if name == "cmaes":
        return CmaEsSampler(seed=seed, warn_independent_sampling=False)
    return TPESampler(seed=seed)


def sqlite_file(storage: str) -> Path | None:
    """The file of an SQLite storage URL (``sqlite:///study.db``); None for another
    database or an in-memory one."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(storage)
    except ArgumentError:
        return None  # RDBStorage names the fault
    if not url.drivername.startswith("sqlite") or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database)


def check_sqlite_storage(path: Path, option: str) -> None:
    """``path`` absent, empty, or an SQLite database of Optuna's tables alone whose only
    study (if any) is :data:`STUDY_NAME`: never another program's database or another
    Optuna user's, which Optuna would write its tables and a study into. Read only.

    Raises:
        StudyError: a file that is not an SQLite database, holds other tables, or other
            studies (one line naming what it holds).
    """
    if not path.exists() or (path.is_file() and path.stat().st_size == 0):
        return
    refuse = f"{option} {path}"
    fix = "give a new folder (or --storage), or move that file"
    try:
        with closing(
            sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=LOCK_TIMEOUT_S)
        ) as db:
            tables = {
                row[0]
                for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                if not row[0].startswith("sqlite_")
            }
            studies = (
                [row[0] for row in db.execute("SELECT study_name FROM studies")]
                if "studies" in tables
                else []
            )
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc):
            return  # held by a writer: open_study says so, and writes nothing either
        raise StudyError(f"{refuse}: not a study's SQLite database ({exc}): {fix}") from None
    except sqlite3.Error as exc:
        raise StudyError(f"{refuse}: not a study's SQLite database ({exc}): {fix}") from None
    foreign = sorted(tables - OPTUNA_TABLES)
    if foreign:
        raise StudyError(
            f"{refuse} is another program's database (tables {', '.join(foreign[:3])}"
            f"{', ...' if len(foreign) > 3 else ''}), not a snake optimize study: {fix}"
        )
    others = sorted(set(studies) - {STUDY_NAME})
    if others:
        raise StudyError(
            f"{refuse} holds other Optuna studies ({', '.join(others[:3])}), not only "
            f"snake optimize's: {fix}"
        )


def open_study(storage: str, option: str, setup: Mapping[str, Any]) -> optuna.Study:
    """The study in ``storage`` (an SQLAlchemy URL), created with ``setup`` (what the study
    searches, as JSON) or checked to hold that very setup; its sampler ``setup["sampler"]``
    seeded with ``setup["seed"]`` plus the trials already stored (a resumed study draws new
    points, not its first ones again).

    Args:
        option: the option that named the storage, for the messages.

    Raises:
        StudyError: the storage is locked, of another Optuna schema or study format, holds
            another setup (one line naming the first field that differs), or is an SQLite
            file of another program or other studies (:func:`check_sqlite_storage`); nothing
            is written to it then.
    """
    import optuna
    from sqlalchemy.exc import OperationalError, SQLAlchemyError

    path = sqlite_file(storage)
    if path is not None:
        check_sqlite_storage(path, option)
    _quiet()
    wanted = json.loads(json.dumps(dict(setup)))
    engine = {"connect_args": {"timeout": LOCK_TIMEOUT_S}} if storage.startswith("sqlite") else {}
    try:
        rdb = optuna.storages.RDBStorage(storage, engine_kwargs=engine, skip_table_creation=False)
        names = [s.study_name for s in rdb.get_all_studies()]
        if STUDY_NAME not in names:
            study: optuna.Study = optuna.create_study(
                storage=rdb,
                study_name=STUDY_NAME,
                sampler=make_sampler(setup["sampler"], setup["seed"]),
                direction=setup["direction"],
            )
            study.set_user_attr("format", FORMAT)
            study.set_user_attr("setup", wanted)
            return study
        study = optuna.load_study(storage=rdb, study_name=STUDY_NAME)
    except OperationalError as exc:
        reason = str(exc.orig) if exc.orig is not None else type(exc).__name__
        held = " (another snake optimize, or another program, holds it): wait for it, or give "
        raise StudyError(
            f"{option} {storage}: {reason}"
            + (held + "another storage" if "locked" in reason else "")
        ) from None
    except (RuntimeError, SQLAlchemyError) as exc:  # Optuna's schema check raises RuntimeError
        raise StudyError(f"{option} {storage}: {str(exc).splitlines()[0]}") from None
    except ImportError as exc:  # the URL's database driver (e.g. psycopg) is not installed
        cause = exc.__cause__ or exc
        raise StudyError(
            f"{option} {storage}: {cause}; install that database's SQLAlchemy driver"
        ) from None
    attrs = study.user_attrs
    if attrs.get("format") != FORMAT:
        raise StudyError(
            f"{option} {storage} holds a study of format {attrs.get('format')!r}, not "
            f"{FORMAT} (another version of snake optimize): give a new storage"
        )
    difference = another_study(attrs.get("setup", {}), wanted)
    if difference:
        raise StudyError(
            f"{option} {storage} holds another study ({difference}): give a new storage, or "
            "that study's options to resume it"
        )
    study.sampler = make_sampler(setup["sampler"], setup["seed"] + len(study.trials))
    return study


def finished(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    """The trials that ran to the end: complete, or failed by their own run (not those an
    interrupt stopped, which run again)."""
    from optuna.trial import TrialState

    return [
        t
        for t in study.get_trials(deepcopy=False)
        if t.state == TrialState.COMPLETE
        or (t.state == TrialState.FAIL and "error" in t.user_attrs)
    ]


def best_line(study: optuna.Study, objective: str) -> str:
    """``best 5.69 cm/s at amplitude=1.015 (9.45 cm/s, servos saturated 40%)``: the best
    objective value so far, its parameters, its raw figure and saturation ("" before any)."""
    if not any(t.value is not None and math.isfinite(t.value) for t in finished(study)):
        return ""
    best = study.best_trial
    assert best.value is not None  # a complete trial's
    where = " ".join(f"{k}={v:.4g}" for k, v in best.params.items())
    travel, share = best.user_attrs["travel"], best.user_attrs.get("saturated_share")
    servos = "ideal servos" if share is None else f"servos saturated {share:.0%}"
    if objective == "speed":
        value, raw = f"{best.value * 100:.3g} cm/s", f"{travel['mean_speed'] * 100:.3g} cm/s"
    else:
        value, raw = f"CoT {best.value:.3g}", f"CoT {travel.get('cost_of_transport', math.inf):.3g}"
    return f"best {value} at {where} ({raw}, {servos})"


def _record(
    trial: optuna.Trial, objective: str, point: GroundPoint, joints: Sequence[str]
) -> float:
    """Keep the trial's raw figures as user attributes; return its objective value."""
    travel = point.travel
    trial.set_user_attr("travel", {k: v for k, v in travel._asdict().items() if math.isfinite(v)})
    if point.saturated is not None:  # None with ideal servos
        worst = max(range(len(point.saturated)), key=point.saturated.__getitem__)
        trial.set_user_attr("saturated_share", point.saturated[worst])
        trial.set_user_attr("saturated_joint", joints[worst])
    return objective_value(objective, point)


def _suggest(trial: optuna.Trial, searched: Range, unit: str) -> float:
    """The trial's value of a searched parameter: a whole number for a count of joints
    (e.g. cobra's ``head_joints``), else a float."""
    if unit == "joints":
        low, high = math.ceil(searched.low), math.floor(searched.high)
        return float(trial.suggest_int(searched.name, low, high))
    return trial.suggest_float(searched.name, searched.low, searched.high)


@contextmanager
def _uninterrupted() -> Iterator[None]:
    """Ctrl-C (SIGINT) held back until the block's end, then raised: the storage's
    bookkeeping (asking, telling) is never cut in half. Only in the main thread, where
    Python runs signal handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, _frame: caught.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def _tell(
    study: optuna.Study,
    trial: optuna.Trial,
    outcome: Finished[GroundPoint] | None,
    objective: str,
    joints: Sequence[str],
) -> None:
    """Tell ``study`` how ``trial`` ended: its objective value, failed by its run (the error
    kept), or (``outcome`` None) stopped by Ctrl-C or a lost cluster: failed, its parameters
    queued again."""
    from optuna.trial import TrialState

    if outcome is None:
        study.tell(trial, state=TrialState.FAIL)
        study.enqueue_trial(trial.params, skip_if_exists=False)
    elif outcome.result is None:
        trial.set_user_attr("error", outcome.error)
        study.tell(trial, state=TrialState.FAIL)
    else:
        study.tell(trial, _record(trial, objective, outcome.result, joints))


def run_study(
    study: optuna.Study,
    client: Any,
    ranges: Sequence[Range],
    runs: GroundRuns,
    objective: str,
    total: int,
    batch: int,
    progress: ProgressLine | None,
    worker_timeout: float = WORKER_TIMEOUT_S,
) -> Counts:
    """Run ``study`` until ``total`` trials are finished, ``batch`` at a time on ``client``
    (a ``distributed.Client``); return the counts. A trial whose run raises
    is told as failed (its ``error`` kept); on Ctrl-C or a lost cluster (a ClusterError)
    the trials in flight are told as failed and queued again (their parameters run first on a
    resume)."""
    counts = Counts(total=total, resumed=len(finished(study)))
    on_progress: Callable[[Counts], None] | None = progress
    units = {name: spec[3] for name, spec in gait_parameters(runs.gait).items()}
    while counts.done + counts.resumed + counts.failed < total:
        size = min(batch, total - counts.done - counts.resumed - counts.failed)
        trials: list[optuna.Trial] = []
        outcomes: dict[str, Finished[GroundPoint]] = {}
        try:
            # a trial in the storage is always one this loop tells: a Ctrl-C while asking
            # is raised once they are all asked, into the ``finally`` that tells them
            with _uninterrupted():
                trials = [study.ask() for _ in range(size)]
                params = [{r.name: _suggest(t, r, units[r.name]) for r in ranges} for t in trials]
            jobs = [runs.job(str(t.number), p) for t, p in zip(trials, params, strict=True)]
            for outcome in run_jobs(
                client, jobs, on_progress, counts, worker_timeout=worker_timeout
            ):
                outcomes[outcome.key] = outcome
        finally:  # in trial order, also after Ctrl-C: those not finished then run again
            with _uninterrupted():
                for t in trials:
                    _tell(study, t, outcomes.get(str(t.number)), objective, runs.robot.joint_names)
        if progress is not None:
            progress.detail = best_line(study, objective)
    return counts


def optimize(
    *,
    runs: GroundRuns,
    ranges: Sequence[Range],
    objective: str,
    sampler: str,
    trials: int,
    seed: int,
    cluster: ClusterOptions,
    output: Path | None,
    storage: str | None,
    plots: bool,
    quiet: bool,
) -> int:
    """Run the study until ``trials`` trials are finished (those already in its storage
    count), write its results to ``output`` and print the best gait.

    Args:
        runs: each trial's run (on the robot's ground), its duration a whole number
            (>= 10) of its steps; its ``fixed`` parameters set (the rest default).
        ranges: the searched parameters.
        objective: ``speed`` (maximised) or ``cot`` (minimised).
        sampler: ``tpe`` or ``cmaes``, seeded with ``seed``.
        trials: the study's total trials.
        cluster: where the trials run.
        output: the results folder (None: ``runs/optimize-<robot>-<gait>-<time>``), holding
            ``study.db`` unless ``storage`` names another (an SQLAlchemy URL).
        plots: write the PNG plots beside the CSV and YAML.

    Raises:
        UsageError: options that do not make a study (one line naming the option).
        StudyError: a storage that is locked, holds another study, or (``study.db``) is not
            a study's.
        ClusterError: an unreachable scheduler, one with no worker for its timeout,
            a scheduler lost mid-study (the trials told are kept for a resume).
    """
    gait, fixed = runs.gait, runs.fixed
    model = on_the_ground(runs.robot.model)
    check_ranges(gait, ranges, fixed)
    for corner in ({r.name: r.low for r in ranges}, {r.name: r.high for r in ranges}):
        make_gait(gait, model, **fixed, **corner)  # the gait fits the robot, --set in range
    recorded = runs.check()
    if not 1 <= trials <= MAX_TRIALS:
        raise UsageError(f"--trials must be 1 to {MAX_TRIALS}, got {trials}")
    security = cluster.security()
    out = output or Path("runs") / (
        f"optimize-{model.name}-{gait}-{dt_module.datetime.now():%Y%m%d-%H%M%S}"
    )
    if storage is None:
        out.mkdir(parents=True, exist_ok=True)
        url, option = f"sqlite:///{out.resolve() / 'study.db'}", "--output"
    else:
        url, option = storage, "--storage"
    setup = {
        **recorded,
        "ranges": {r.name: [r.low, r.high] for r in ranges},
        "objective": objective,
        "direction": DIRECTIONS[objective],
        "sampler": sampler,
        "seed": seed,
    }
    study = open_study(url, option, setup)
    progress = ProgressLine("optimize", detail=best_line(study, objective))
    todo = trials - len(finished(study))
    client = cluster.client(security) if todo > 0 else nullcontext()
    with client as c:
        batch = max(1, threads(c)) if c is not None else 1
        try:
            counts = run_study(
                study,
                c,
                ranges,
                runs,
                objective,
                trials,
                batch,
                None if quiet else progress,
                cluster.worker_timeout,
            )
        except ClusterError as exc:  # a lost scheduler, no worker: the told trials are kept
            raise ClusterError(
                f"{exc}; {len(finished(study))}/{trials} trials done in {url}: run the same "
                "command to run the others"
            ) from None
        except KeyboardInterrupt:
            print(
                f"optimize: interrupted, {len(finished(study))}/{trials} trials done in {url}; "
                "run the same command to run the others",
                file=sys.stderr,
                flush=True,
            )
            return 130
    if not quiet:
        progress.finish(counts)
    done = finished(study)
    if all(t.value is None for t in done):
        raise StudyError(
            f"all {len(done)} trials failed (first: {done[0].user_attrs.get('error')}); the "
            f"study is in {url}"
        )
    defaults = {name: spec[0] for name, spec in gait_parameters(gait).items()}
    files = write_results(study, out, gait, {**defaults, **fixed}, objective, plots)
    print(f"{best_line(study, objective)}, trial {study.best_trial.number} of {len(done)}")
    print(f"wrote {len(files)} files to {out}/ ({', '.join(p.name for p in files)})")
    return 0


def write_results(
    study: optuna.Study,
    folder: Path,
    gait: str,
    defaults: Mapping[str, float],
    objective: str,
    plots: bool,
) -> list[Path]:
    """The trials CSV, the best gait as a gaits-file entry (config/gaits.yaml's schema, every
    parameter of the gait) and, with ``plots``, the optimization history and parameter
    importances (PNG); returns the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    trials = finished(study)
    names = sorted({k for t in trials for k in t.params})
    travel_names = Locomotion._fields
    path = folder / TRIALS_FILE
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["trial", "state", *names, "objective", *travel_names, *SATURATION_COLUMNS])
        for t in trials:
            travel = t.user_attrs.get("travel", {})
            out.writerow(
                [t.number, t.state.name, *(t.params.get(n, "") for n in names)]
                + ["" if t.value is None else repr(t.value)]
                + [repr(travel[k]) if k in travel else "" for k in travel_names]
                + [t.user_attrs.get("saturated_share", ""), t.user_attrs.get("saturated_joint", "")]
                + [t.user_attrs.get("error", "")]
            )
    files = [path]
    best = study.best_trial
    entry = {**defaults, **best.params}
    header = (
        f"# snake optimize, trial {best.number} of {len(trials)}: {best_line(study, objective)}\n"
        "# Play it: snake demo --gaits FILE, snake hardware --gaits FILE, snake sim --gaits FILE.\n"
        "# Into a running gait_node (it blends to the gait): ros2 param load /gait_node FILE\n"
        "# under snake hardware or snake demo, /sim/gait_node under snake sim; or copy the\n"
        "# gait's section into config/gaits.yaml (docs/cli.md, snake optimize).\n"
    )
    body = {
        "/**": {"ros__parameters": {"gait": gait, gait: {k: float(v) for k, v in entry.items()}}}
    }
    (folder / BEST_FILE).write_text(header + yaml.safe_dump(body, sort_keys=False))
    files.append(folder / BEST_FILE)
    if plots:
        files += _plots(study, folder)
    return files


def _plots(study: optuna.Study, folder: Path) -> list[Path]:
    """Optuna's optimization history and parameter importances, as PNG (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from optuna.visualization import matplotlib as vis

    _quiet()
    files = []
    for name, plot in (
        (HISTORY_FILE, vis.plot_optimization_history),
        (IMPORTANCE_FILE, vis.plot_param_importances),
    ):
        if name == IMPORTANCE_FILE and len(finished(study)) < 2:
            continue
        try:
            plot(study)
        except ImportError:  # Debian 12's optuna 3.1 needs scikit-learn for the importances
            if name != IMPORTANCE_FILE:
                raise
            continue
        figure = plt.gcf()
        figure.savefig(folder / name, dpi=100, bbox_inches="tight")
        plt.close(figure)
        files.append(folder / name)
    return files
