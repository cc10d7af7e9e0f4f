"""``snake optimize``: an Optuna search (TPE, or CMA-ES) over a gait's parameters for the
fastest or the cheapest gait on the ground, each trial a ``snake sweep`` point on the same
Dask cluster, penalised by the servos' torque-speed limits (snake_bringup.optimization); the
study stored (SQLite ``study.db`` in the output folder by default) so the same command
resumes it; the best gait as a gaits-file entry, the trials CSV and Optuna's plots."""

from __future__ import annotations

import datetime as dt_module
import os
import sys
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from snake_dynamics.floating.literal import on_the_ground
from snake_dynamics.gaits import GAITS, gait_parameters, make_gait
from snake_dynamics.model import SnakeModel
from snake_ros.paths import robot_config

from ..cluster import WORKER_TIMEOUT_S, ClusterError, ProgressLine, connect, threads
from ..cluster_tls import TlsFiles, cluster_security
from ..errors import UsageError
from ..locomotion import IDEAL, ground_servos
from ..optimization import (
    DIRECTIONS,
    SAMPLERS,
    Evaluation,
    Range,
    StudyError,
    best_line,
    check_ranges,
    finished,
    open_study,
    parse_range,
    run_study,
    write_results,
)
from .options import name_values
from .sweep import (
    DEFAULT_X,
    DEFAULT_Y,
    NO_TLS,
    check_cluster_options,
    check_run_length,
    study_options,
    tls_files,
)

if TYPE_CHECKING:
    from .options import Subparsers

#: The default search: sweep's default grid, as ranges.
DEFAULT_RANGES = (DEFAULT_X.rsplit(":", 1)[0], DEFAULT_Y.rsplit(":", 1)[0])
#: Most trials one study runs.
MAX_TRIALS = 10_000


def run(
    *,
    robot: str,
    gait: str,
    ranges: Sequence[Range],
    fixed: Mapping[str, float],
    objective: str,
    sampler: str,
    trials: int,
    seed: int,
    duration: float,
    dt: float,
    ideal_servos: bool,
    jobs: int,
    scheduler: str | None,
    connect_timeout: float,
    output: Path | None,
    storage: str | None,
    plots: bool,
    quiet: bool,
    tls: TlsFiles = NO_TLS,
    worker_timeout: float = WORKER_TIMEOUT_S,
) -> int:
    """Run the study until ``trials`` trials are finished (those already in its storage
    count), write its results to ``output`` and print the best gait.

    Args:
        robot: robot YAML file or config name (on its ground).
        gait: gait name.
        ranges: the searched parameters; ``fixed`` the others set (the rest default).
        objective: ``speed`` (maximised) or ``cot`` (minimised).
        sampler: ``tpe`` or ``cmaes``, seeded with ``seed``.
        trials: the study's total trials.
        duration: simulated time per trial [s], a whole number (>= 10) of ``dt`` steps.
        dt: step [s].
        jobs: worker processes of the local cluster (0: one per core).
        scheduler: address of a running Dask scheduler (None: a local cluster).
        connect_timeout: how long to try ``scheduler`` [s].
        output: the results folder (None: ``runs/optimize-<robot>-<gait>-<time>``), holding
            ``study.db`` unless ``storage`` names another (an SQLAlchemy URL).
        plots: write the PNG plots beside the CSV and YAML.
        tls: the client's TLS files for a ``tls://`` scheduler.
        worker_timeout: how long the scheduler may have no worker [s].

    Raises:
        UsageError: options that do not make a study (one line naming the option).
        StudyError: a storage that is locked, holds another study, or (``study.db``) is not
            a study's.
        ClusterError: an unreachable scheduler, one with no worker for ``worker_timeout``,
            a scheduler lost mid-study (the trials told are kept for a resume).
    """
    config_path = str(robot_config(robot))
    model = on_the_ground(SnakeModel.from_yaml(config_path))
    check_ranges(gait, ranges, fixed)
    for corner in ({r.name: r.low for r in ranges}, {r.name: r.high for r in ranges}):
        make_gait(gait, model, **fixed, **corner)  # the gait fits the robot, --set in range
    check_run_length(model, duration, dt, ideal_servos)
    if not 1 <= trials <= MAX_TRIALS:
        raise UsageError(f"--trials must be 1 to {MAX_TRIALS}, got {trials}")
    if jobs < 0:
        raise UsageError(f"--jobs must be >= 0 (0: one per core), got {jobs}")
    check_cluster_options(connect_timeout, worker_timeout)
    security = cluster_security(scheduler, tls)
    out = output or Path("runs") / (
        f"optimize-{model.name}-{gait}-{dt_module.datetime.now():%Y%m%d-%H%M%S}"
    )
    if storage is None:
        out.mkdir(parents=True, exist_ok=True)
        url, option = f"sqlite:///{out.resolve() / 'study.db'}", "--output"
    else:
        url, option = storage, "--storage"
    servo = ground_servos(Path(config_path), model, 0.0, 0.0, ideal_servos)
    setup = {
        "robot": config_path,
        "gait": gait,
        "ranges": {r.name: [r.low, r.high] for r in ranges},
        "fixed": dict(fixed),
        "objective": objective,
        "direction": DIRECTIONS[objective],
        "sampler": sampler,
        "seed": seed,
        "duration_s": duration,
        "dt_s": dt,
        "servo": IDEAL if servo is None else servo.describe(),
    }
    study = open_study(url, option, setup)
    evaluation = Evaluation(
        config_path, gait, dict(fixed), duration, dt, ideal_servos, tuple(model.joint_names)
    )
    progress = ProgressLine("optimize", detail=best_line(study, objective))
    todo = trials - len(finished(study))
    cluster = (
        connect(scheduler, jobs or os.cpu_count() or 1, connect_timeout, security, worker_timeout)
        if todo > 0
        else nullcontext()
    )
    with cluster as c:
        batch = max(1, threads(c)) if c is not None else 1
        try:
            counts = run_study(
                study,
                c,
                ranges,
                evaluation,
                objective,
                trials,
                batch,
                None if quiet else progress,
                worker_timeout,
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


def register(sub: Subparsers) -> None:
    """Add ``snake optimize`` to the ``snake`` command."""
    p = sub.add_parser(
        "optimize", help="search a gait's parameters for the fastest or cheapest gait on the ground"
    )
    p.add_argument(
        "--robot", default="robot", help="robot YAML file or config name (default: robot)"
    )
    p.add_argument(
        "--gait", default="serpenoid", choices=sorted(GAITS), help="gait (default: serpenoid)"
    )
    p.add_argument(
        "--param",
        action="append",
        metavar="NAME=LOW:HIGH",
        help="a searched parameter, repeatable (default: "
        f"{' and '.join(DEFAULT_RANGES)}; see `snake gaits`)",
    )
    p.add_argument(
        "--objective",
        choices=sorted(DIRECTIONS),
        default="speed",
        help="maximise the mean speed, or minimise the cost of transport (default: speed)",
    )
    p.add_argument(
        "--sampler",
        choices=SAMPLERS,
        default="tpe",
        help="Optuna's TPE, or CMA-ES (continuous parameters) (default: tpe)",
    )
    p.add_argument(
        "--trials",
        type=int,
        default=50,
        help="the study's total trials, those already stored included (default: 50)",
    )
    p.add_argument("--seed", type=int, default=0, help="the sampler's seed (default: 0)")
    study_options(p, "trial")
    p.add_argument(
        "--output",
        "-o",
        type=Path,
        help="results folder, with the study in its study.db (default: runs/optimize-...); "
        "the same command resumes the study",
    )
    p.add_argument(
        "--storage",
        metavar="URL",
        help="the study's Optuna storage instead of study.db (an SQLAlchemy URL, e.g. "
        "sqlite:///study.db or postgresql://...)",
    )
    p.add_argument("--no-plots", action="store_true", help="only the CSV and the gait entry")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    p.set_defaults(
        run=lambda a: run(
            robot=a.robot,
            gait=a.gait,
            ranges=[parse_range(text) for text in (a.param or DEFAULT_RANGES)],
            fixed=name_values(a.set, "--set"),
            objective=a.objective,
            sampler=a.sampler,
            trials=a.trials,
            seed=a.seed,
            duration=a.duration,
            dt=a.dt,
            ideal_servos=a.ideal_servos,
            jobs=a.jobs,
            scheduler=a.scheduler,
            connect_timeout=a.connect_timeout,
            output=a.output,
            storage=a.storage,
            plots=not a.no_plots,
            quiet=a.quiet,
            tls=tls_files(a),
            worker_timeout=a.worker_timeout,
        )
    )
