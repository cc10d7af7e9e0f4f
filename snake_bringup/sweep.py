"""``snake sweep``'s study, and its point: a grid of two gait parameters, each point a run
of the gait on the ground (``snake simulate --ground``'s, :func:`ground_point`, which is also
each trial of ``snake optimize``) on a Dask cluster (snake_bringup.cluster: a local one over
the cores, or a scheduler); every finished point kept in ``points.jsonl`` so a stopped sweep
resumes; a speed and cost-of-transport map (PNG heatmaps and CSV) with the best points
marked."""

from __future__ import annotations

import datetime as dt_module
import math
import sys
import time
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from snake_dynamics.errors import SimulationError
from snake_dynamics.floating import Locomotion, check_step, locomotion, on_the_ground
from snake_dynamics.gaits import gait_parameters, make_gait
from snake_dynamics.model import SnakeModel
from snake_dynamics.robot import Robot
from snake_dynamics.sim import saturated_share
from snake_viz.offline import SweepPoint, write_sweep

from .cluster import (
    ClusterError,
    ClusterOptions,
    Counts,
    Job,
    PointLog,
    ProgressLine,
    run_jobs,
    threads,
)
from .errors import UsageError
from .locomotion import IDEAL, ground_servos, simulate_on_the_ground

#: The default grid: amplitude [rad] x frequency [Hz], five values each.
DEFAULT_X, DEFAULT_Y = "amplitude=0.2:1.0:5", "frequency=0.25:1.25:5"
#: Largest grid (points).
MAX_POINTS = 400


@dataclass(frozen=True)
class Axis:
    """One parameter of the grid: ``count`` values from ``low`` to ``high``."""

    name: str
    low: float
    high: float
    count: int

    @property
    def values(self) -> list[float]:
        return [float(v) for v in np.linspace(self.low, self.high, self.count)]


def parse_axis(text: str, option: str) -> Axis:
    """``NAME=LOW:HIGH:COUNT`` (COUNT >= 1; LOW:HIGH alone for 5 values).

    Raises:
        UsageError: any other form, in one line.
    """
    name, sep, spec = text.partition("=")
    parts = spec.split(":")
    if not sep or not name or len(parts) not in (2, 3):
        raise UsageError(f"{option} expects NAME=LOW:HIGH[:COUNT], got {text!r}")
    try:
        low, high = float(parts[0]), float(parts[1])
        count = int(parts[2]) if len(parts) == 3 else 5
    except ValueError:
        raise UsageError(
            f"{option} {name}: expected numbers LOW:HIGH[:COUNT], got {spec!r}"
        ) from None
    if not (math.isfinite(low) and math.isfinite(high)) or count < 1 or (count > 1 and low == high):
        raise UsageError(f"{option} {name}: need finite LOW != HIGH and COUNT >= 1, got {spec!r}")
    return Axis(name.strip(), low, high, count)


class GroundPoint(NamedTuple):
    """What one gait did on the ground: its travel (eq. 238) and each servo's share of the
    run on its torque-speed line (eq. 217; None with ideal servos)."""

    travel: Locomotion
    saturated: tuple[float, ...] | None


def ground_point(
    robot: Robot, gait: str, params: dict[str, float], duration: float, dt: float, ideal: bool
) -> GroundPoint:
    """One point of a study (a worker's job): the gait with ``params`` on the robot lying on
    its ground for ``duration`` [s] at step ``dt`` [s], under the robot's servos or
    (``ideal``) with the joints exactly on the gait. The robot is the one the command read,
    pickled to the worker: a worker reads no robot file.

    Raises:
        snake_dynamics.errors.SimulationError: a step the ground refuses.
    """
    model = robot.model
    trajectory = make_gait(gait, model, **params)
    servo = ground_servos(robot, 0.0, 0.0, ideal)
    run = simulate_on_the_ground(model, trajectory, duration, dt, servo, every=10)
    share = None if servo is None else tuple(saturated_share(run, servo).tolist())
    return GroundPoint(locomotion(on_the_ground(model), run), share)


def check_run_length(model: SnakeModel, duration: float, dt: float, ideal: bool) -> None:
    """A run on the ground of ``duration`` [s] at step ``dt`` [s]: a whole number (>= 10) of
    steps, and with ``ideal`` servos a step the ground takes (under servos the RK4 step is
    split to suit the ground, eq. 242).

    Raises:
        UsageError: naming --dt or --duration.
    """
    if ideal:
        try:
            check_step(dt, model)
        except SimulationError as exc:
            raise UsageError(f"--dt: {exc}") from None
    steps = round(duration / dt)
    if steps < 10 or abs(steps * dt - duration) > 1e-9 * max(1.0, duration):
        raise UsageError(
            f"--duration {duration} s must be a whole number (>= 10) of --dt {dt} s steps"
        )


@dataclass(frozen=True)
class GroundRuns:
    """How every run of a study goes (``snake sweep``'s points, ``snake optimize``'s
    trials): :func:`ground_point` on the robot the command read, ``gait`` with a run's
    parameters over ``fixed``, for ``duration`` [s] at step ``dt`` [s], under the robot's
    servos or (``ideal``) with the joints exactly on the gait."""

    robot: Robot
    gait: str
    fixed: Mapping[str, float]
    duration: float
    dt: float
    ideal: bool

    def check(self) -> dict[str, Any]:
        """Check the run length (:func:`check_run_length`); return what the study records of
        its runs (robot file, gait, ``fixed``, duration, step and servos).

        Raises:
            UsageError: naming --dt or --duration.
        """
        check_run_length(on_the_ground(self.robot.model), self.duration, self.dt, self.ideal)
        servo = ground_servos(self.robot, 0.0, 0.0, self.ideal)
        return {
            "robot": str(self.robot.path),
            "gait": self.gait,
            "fixed": dict(self.fixed),
            "duration_s": self.duration,
            "dt_s": self.dt,
            "servo": IDEAL if servo is None else servo.describe(),
        }

    def job(self, key: str, params: Mapping[str, float]) -> Job[GroundPoint]:
        """The run with ``params`` over ``fixed``, as the cluster's job ``key``."""
        point = {**self.fixed, **params}
        return Job(
            key, ground_point, (self.robot, self.gait, point, self.duration, self.dt, self.ideal)
        )


def sweep(
    *,
    runs: GroundRuns,
    x: Axis,
    y: Axis,
    cluster: ClusterOptions,
    output: Path | None,
    plots: bool,
    quiet: bool,
) -> int:
    """Run the grid ``x`` by ``y`` (the other gait parameters as ``runs`` fixes them) and
    write its maps; progress on stderr (unless ``quiet``), the best points on stdout.

    Args:
        runs: each point's run (on the robot's ground), its duration a whole number
            (>= 10) of its steps.
        cluster: where the points run.
        output: the output folder (None: ``runs/sweep-<robot>-<gait>-<time>``); a folder
            of the same sweep resumes it (only its missing points run).
        plots: write the PNG heatmaps beside the CSV and JSON.

    Raises:
        UsageError: options that do not make a grid (one line naming the option).
        ClusterError: an unreachable scheduler, one with no worker for its timeout,
            a scheduler lost mid-sweep, an output folder of another sweep, points that failed
            (those done are kept for a resume).
    """
    gait, fixed = runs.gait, runs.fixed
    model = on_the_ground(runs.robot.model)
    if x.name == y.name:
        raise UsageError(f"--x and --y both sweep {x.name}: give two different parameters")
    swept = {x.name, y.name} & set(fixed)
    if swept:
        raise UsageError(f"--set {sorted(swept)[0]} is swept by --x/--y: drop it from --set")
    units = {name: spec[3] for name, spec in gait_parameters(gait).items()}
    points = [{**fixed, x.name: a, y.name: b} for b in y.values for a in x.values]
    if len(points) > MAX_POINTS:
        raise UsageError(f"{len(points)} grid points: at most {MAX_POINTS}")
    for params in points:  # every point's parameters valid before any run starts
        make_gait(gait, model, **params)
    recorded = runs.check()
    out = output or Path("runs") / (
        f"sweep-{model.name}-{gait}-{dt_module.datetime.now():%Y%m%d-%H%M%S}"
    )
    security = cluster.security()
    study = {
        **recorded,
        "x": [x.name, x.low, x.high, x.count],
        "y": [y.name, y.low, y.high, y.count],
    }
    log = PointLog(Path(out), study)
    jobs_todo = [runs.job(str(i), p) for i, p in enumerate(points) if str(i) not in log.records]
    counts = Counts(total=len(points), resumed=len(points) - len(jobs_todo))
    progress = ProgressLine("sweep")
    start = time.monotonic()
    failures: list[str] = []
    client = cluster.client(security, len(points)) if jobs_todo else nullcontext()
    with client as c:
        workers = threads(c) if c is not None else 0
        try:
            for outcome in run_jobs(
                c,
                jobs_todo,
                None if quiet else progress,
                counts,
                worker_timeout=cluster.worker_timeout,
            ):
                if outcome.result is None:
                    params = points[int(outcome.key)]
                    where = " ".join(f"{k}={v:g}" for k, v in params.items())
                    failures.append(f"{where}: {outcome.error}")
                    continue
                log.append(
                    outcome.key,
                    {"params": points[int(outcome.key)], "travel": outcome.result.travel._asdict()},
                )
        except KeyboardInterrupt:
            if not quiet:
                progress.finish(counts)
            done = len(log.reload())
            print(
                f"sweep: interrupted, {done}/{len(points)} points done in "
                f"{log.path}; run the same command with -o {out} to run the other "
                f"{len(points) - done}",
                file=sys.stderr,
                flush=True,
            )
            return 130
        except ClusterError as exc:  # a lost scheduler, no worker: what is done is kept
            if not quiet:
                progress.finish(counts)
            done = len(log.reload())
            raise ClusterError(
                f"{exc}; {done}/{len(points)} points done in {log.path}: run the same command "
                f"with -o {out} to run the other {len(points) - done}"
            ) from None
    if not quiet:
        progress.finish(counts)
    if failures:
        raise ClusterError(
            f"{len(failures)} of {len(points)} points failed (first: {failures[0]}); the "
            f"{len(log.records)} done are in {log.path}: run the same command with -o {out} "
            "to retry the others"
        )
    grid = [
        SweepPoint(log.records[str(i)]["params"], Locomotion(**log.records[str(i)]["travel"]))
        for i in range(len(points))
    ]
    config = {
        **study,
        "x": x.name,
        "y": y.name,
        "scheduler": cluster.scheduler or "local",
        "jobs": workers,
        "resumed_points": counts.resumed,
        "wall_time_s": time.monotonic() - start,
    }
    files, best = write_sweep(
        Path(out), grid, x.name, x.values, y.name, y.values, config, plots, units
    )
    for line in best:
        print(line)
    print(f"wrote {len(files)} files to {out}/ ({', '.join(p.name for p in files)})")
    return 0
