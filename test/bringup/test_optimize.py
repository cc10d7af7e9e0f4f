"""``snake optimize``: the search against an independent reference (a fine grid of the same
point, checked in as bench/optimize_reference.json by bench/optimize.py, its best point
re-run here), trials on a real Dask scheduler equal to the same points evaluated in this
process (the simulation is deterministic: equal to the last bit), a resume that runs exactly
the missing trials, Ctrl-C keeping the study, and each refusal in one line with the storage
left as it was."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import cli
from support.cli import ENV, ROOT
from support.dask_cluster import Cluster, free_port
from support.waits import background, wait_for

from snake_bringup.cli import main
from snake_bringup.optimization import (
    SATURATED_SHARE,
    TRIALS_FILE,
    objective_value,
    saturation_penalty,
)
from snake_bringup.sweep import ground_point
from snake_ros.paths import load_robot

pytestmark = pytest.mark.slow

REFERENCE = json.loads((ROOT / "bench" / "optimize_reference.json").read_text())
#: A short search: the serpenoid's phase lag on the 8-joint robot, ideal servos, 1 s a trial
#: (on the module's cluster: its warm workers spare each run a local cluster's start).
SHORT = [
    "--param",
    "phase_lag=0.3:1.0",
    "--set",
    "amplitude=0.8",
    "--set",
    "frequency=1",
    "--duration",
    "1",
    "--ideal-servos",
    "--no-plots",
]


def snake(*args: str) -> subprocess.CompletedProcess[str]:
    """``snake optimize args...`` run to its end."""
    return cli.snake("optimize", *args)


def here(*args: str) -> tuple[str, str]:
    """``snake optimize ARGS`` in this process (no interpreter to start): its stdout and
    stderr, after checking it exited 0."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["optimize", *args])
    assert status == 0, err.getvalue()
    return out.getvalue(), err.getvalue()


def trials(folder: Path) -> list[dict[str, str]]:
    with (folder / TRIALS_FILE).open() as f:
        return list(csv.DictReader(f))


def study_trials(folder: Path) -> list[tuple[int, str, float | None]]:
    """Every trial the storage holds: number, state, parameter (what ran, whatever the CSV)."""
    with sqlite3.connect(folder / "study.db") as db:
        rows = db.execute(
            "SELECT t.number, t.state, p.param_value FROM trials t "
            "LEFT JOIN trial_params p ON p.trial_id = t.trial_id ORDER BY t.number"
        ).fetchall()
    return [(int(n), str(s), v) for n, s, v in rows]


def test_the_search_finds_the_grid_optimum_with_a_tenth_of_its_runs(tmp_path: Path) -> None:
    """200 grid points, 20 seeded TPE trials: the best within 2 % of the grid's best value and
    of its phase lag (the grid also has a local maximum 4.5 % lower, near 0.64 rad)."""
    setup, grid = REFERENCE["setup"], REFERENCE["grid"]
    best = max(grid, key=lambda r: r["objective"])
    robot = load_robot(setup["robot"])
    again = ground_point(
        robot,
        setup["gait"],
        {**setup["fixed"], setup["param"]: best[setup["param"]]},
        setup["duration_s"],
        setup["dt_s"],
        setup["ideal_servos"],
    )
    # still the grid: to 1e-9 (the kernels are compiled with fastmath, so a change to one may
    # move the last bits; a changed model moves far more)
    assert objective_value(setup["objective"], again) == pytest.approx(best["objective"], rel=1e-9)
    proc = snake(
        *("--param", f"{setup['param']}={REFERENCE['low']}:{REFERENCE['high']}"),
        *(f"--set={k}={v}" for k, v in setup["fixed"].items()),
        *("--duration", str(setup["duration_s"]), "--ideal-servos", "--jobs", "2"),
        *("--trials", str(len(grid) // 10), "--seed", "0", "-o", str(tmp_path)),
    )
    assert proc.returncode == 0, proc.stderr
    rows = trials(tmp_path)
    assert len(rows) == len(grid) // 10
    found = max(rows, key=lambda r: float(r["objective"]))
    assert float(found["objective"]) >= 0.98 * best["objective"], found
    assert float(found[setup["param"]]) == pytest.approx(best[setup["param"]], rel=0.02)
    entry = (tmp_path / "best_gait.yaml").read_text()
    assert f"phase_lag: {float(found['phase_lag'])!r}" in entry and "gait: serpenoid" in entry
    assert {p.name for p in tmp_path.iterdir()} >= {"history.png", "importance.png", "study.db"}
    assert proc.stdout.startswith(f"best {float(found['objective']) * 100:.3g} cm/s at phase_lag")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A ``dask scheduler`` and two ``dask worker`` processes for the module."""
    with Cluster() as c:
        yield c


def test_trials_on_a_scheduler_equal_the_same_points_run_here(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Under the robot's servos (saturation kept per trial): each trial's speed, cost of
    transport and saturation as this process computes them for its parameters."""
    here(
        *("--param", "amplitude=0.7:1.2", "--set", "frequency=1", "--duration", "1"),
        *("--trials", "4", "--scheduler", cluster.address, "-o", str(tmp_path)),
    )
    robot = load_robot("robot")
    rows = trials(tmp_path)
    assert len(rows) == 4
    for row in rows:
        point = ground_point(
            robot, "serpenoid", {"frequency": 1.0, "amplitude": float(row["amplitude"])}, 1.0,
            0.001, False,
        )  # fmt: skip
        assert float(row["objective"]) == objective_value("speed", point)
        assert float(row["mean_speed"]) == point.travel.mean_speed
        assert float(row["cost_of_transport"]) == point.travel.cost_of_transport
        assert point.saturated is not None
        assert float(row["saturated_share"]) == max(point.saturated)


@pytest.fixture(scope="module")
def two_trials(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A study of two trials (the resume and the refusals copy it)."""
    out = tmp_path_factory.mktemp("two")
    _, err = here(*SHORT, "--trials", "2", "--scheduler", cluster.address, "-o", str(out))
    assert "optimize: 2/2 runs done, 0 running, 0 failed" in err
    return out


@pytest.fixture
def study(two_trials: Path, tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "study"
    shutil.copytree(two_trials, folder)
    yield folder


def test_a_resume_runs_exactly_the_missing_trials(cluster: Cluster, study: Path) -> None:
    before = study_trials(study)
    _, err = here(*SHORT, "--trials", "4", "--scheduler", cluster.address, "-o", str(study))
    assert "optimize: 4/4 runs done, 0 running, 0 failed (2 from before)" in err
    after = study_trials(study)
    assert after[:2] == before and [n for n, _, _ in after] == [0, 1, 2, 3]
    assert all(state == "COMPLETE" for _, state, _ in after)
    assert len({v for _, _, v in after}) == 4  # no point drawn twice
    assert [float(r["phase_lag"]) for r in trials(study)] == [v for _, _, v in after]


def test_ctrl_c_keeps_the_study_and_a_resume_finishes_it(cluster: Cluster, study: Path) -> None:
    """SIGINT to the process group once a third trial is stored: exit 130, no traceback; the
    trials stopped in flight run again first, and no finished one runs twice."""
    command = [*cli.SNAKE, "optimize", *SHORT, "--trials", "40"]
    command += ["--scheduler", cluster.address, "-o", str(study)]
    with background(command, cwd=ROOT, env=ENV, ctrl_c=True) as run:
        wait_for(
            lambda: sum(s == "COMPLETE" for _, s, _ in study_trials(study)) >= 3,
            120,
            "a third trial in study.db",
        )
        os.killpg(run.pid, signal.SIGINT)
        _, stderr = run.communicate(timeout=120)
    assert run.returncode == 130, stderr
    assert "optimize: interrupted" in stderr and "Traceback" not in stderr
    stopped = study_trials(study)
    complete = [v for _, s, v in stopped if s == "COMPLETE"]
    interrupted = [v for _, s, v in stopped if s == "FAIL"]
    assert len(complete) >= 3
    assert all(s in ("COMPLETE", "FAIL", "WAITING") for _, s, _ in stopped), stopped
    total = len(complete) + len(interrupted) + 1
    here(*SHORT, "--trials", str(total), "--scheduler", cluster.address, "-o", str(study))
    done = [v for _, s, v in study_trials(study) if s == "COMPLETE"]
    assert len(done) == total and len(set(done)) == total  # each point once
    assert set(interrupted) <= set(done[len(complete) :])  # the stopped ones ran again


def test_a_worker_killed_in_mid_study_loses_no_trial(tmp_path: Path) -> None:
    """SIGKILL of a worker that holds a trial, once one is stored (a cluster of its own: the
    module's keeps both workers): its trial runs again on the other worker, and the study
    ends with every trial complete, each point once, the CSV the storage's."""
    total = 8
    with Cluster() as cluster:
        command = [*cli.SNAKE, "optimize", *SHORT]
        command += ["--trials", str(total), "--scheduler", cluster.address, "-o", str(tmp_path)]
        with background(command, cwd=ROOT, env=ENV) as run:

            def ready() -> bool:
                # a trial stored, and at least two to run: one may finish before the kill
                if not (tmp_path / "study.db").exists():
                    return False
                with contextlib.suppress(sqlite3.OperationalError):  # the table, not yet
                    complete = sum(s == "COMPLETE" for _, s, _ in study_trials(tmp_path))
                    return 1 <= complete <= total - 2
                return False

            held = cluster.kill_a_busy_worker(ready, "a trial stored")
            _, stderr = run.communicate(timeout=300)
        assert run.returncode == 0, stderr
        assert held  # the worker died holding a trial
        wait_for(lambda: len(cluster.workers()) == 1, 60, "the scheduler to drop the worker")
    assert f"optimize: {total}/{total} runs done, 0 running, 0 failed" in stderr
    stored = study_trials(tmp_path)
    assert [n for n, _, _ in stored] == list(range(total))
    assert all(state == "COMPLETE" for _, state, _ in stored), stored
    assert len({v for _, _, v in stored}) == total  # no point drawn twice
    assert [float(r["phase_lag"]) for r in trials(tmp_path)] == [v for _, _, v in stored]


def refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """``snake optimize ARGS`` in this process: exit 1 and its one line."""
    assert main(["optimize", *args]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("snake: error: "), err
    return err[len("snake: error: ") :].strip()


def test_a_locked_storage_is_one_line(study: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (study / "study.db").read_bytes()
    holder = sqlite3.connect(study / "study.db", isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        message = refused(capsys, *SHORT, "--trials", "4", "-o", str(study))
    finally:
        holder.close()
    assert message.startswith(f"--output sqlite:///{study.resolve()}/study.db: database is locked")
    assert (study / "study.db").read_bytes() == before


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (["--objective", "cot"], "holds another study (direction: 'maximize' there"),
        (
            ["--gait", "accordion"],
            "holds another study (gait: 'serpenoid' there, 'accordion' here)",
        ),
        (
            ["--param", "phase_lag=0.3:0.9"],
            "holds another study (ranges: {'phase_lag': [0.3, 1.0]}",
        ),
        (["--duration", "2"], "holds another study (duration_s: 1.0 there, 2.0 here)"),
    ],
)
def test_a_storage_of_another_setup_is_one_line(
    study: Path, capsys: pytest.CaptureFixture[str], change: list[str], expected: str
) -> None:
    before = (study / "study.db").read_bytes()
    args = [*SHORT, "--trials", "4", "-o", str(study)]
    if change[0] == "--param":
        args[1] = change[1]
    elif change[0] == "--duration":
        args[args.index("--duration") + 1] = change[1]
    else:
        args += change
    assert expected in refused(capsys, *args)
    assert (study / "study.db").read_bytes() == before


def test_a_storage_of_another_version_is_one_line(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another format of snake optimize's study, then another Optuna schema."""
    db = study / "study.db"
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE study_user_attributes SET value_json = '0' WHERE key = 'format'")
    before = db.read_bytes()
    message = refused(capsys, *SHORT, "--trials", "4", "-o", str(study))
    assert message.endswith("holds a study of format 0, not 1 (another version of snake "
                            "optimize): give a new storage")  # fmt: skip
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE alembic_version SET version_num = 'v9.9.9.z'")
    before = db.read_bytes()
    message = refused(capsys, *SHORT, "--trials", "4", "-o", str(study))
    assert message.startswith(f"--output sqlite:///{db.resolve()}: ") and "schema" in message
    assert db.read_bytes() == before


def _app_database(path: Path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE users (name TEXT)")
        db.execute("INSERT INTO users VALUES ('ada')")


def _text_file(path: Path) -> None:
    path.write_text("notes, not a database\n")


def _other_optuna_study(path: Path) -> None:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.create_study(storage=f"sqlite:///{path}", study_name="someone-else")


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (_app_database, "is another program's database (tables users), not a snake optimize"),
        (_text_file, ": not a study's SQLite database (file is not a database)"),
        (_other_optuna_study, "holds other Optuna studies (someone-else), not only snake"),
    ],
)
def test_a_foreign_database_in_the_output_folder_is_refused_untouched(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make: Any,
    expected: str,
) -> None:
    """``-o DIR`` whose ``study.db`` is another program's SQLite file, not SQLite at all, or
    another Optuna user's study: one line, the file byte for byte as it was (Optuna would
    have added its tables and a study to it); the same through ``--storage sqlite:///``."""
    db = tmp_path / "study.db"
    make(db)
    before = db.read_bytes()
    message = refused(capsys, *SHORT, "--trials", "2", "-o", str(tmp_path))
    assert message.startswith(f"--output {db.resolve()}") and expected in message, message
    assert message.endswith("give a new folder (or --storage), or move that file")
    url = f"sqlite:///{db}"
    message = refused(capsys, *SHORT, "--storage", url, "-o", str(tmp_path / "out"))
    assert message.startswith(f"--storage {db}") and expected in message, message
    assert db.read_bytes() == before


@pytest.mark.parametrize(
    ("param", "expected"),
    [
        ("phase_lag=1:0.3", "--param phase_lag=1:0.3: an empty range; give finite LOW < HIGH"),
        ("phase_lag=0.5:0.5", "--param phase_lag=0.5:0.5: an empty range"),
        ("phase_lag=0.5", "--param expects NAME=LOW:HIGH, got 'phase_lag=0.5'"),
        ("amplitude=0.5:2", "--param amplitude=0.5:2 leaves gait serpenoid's limits 0:1.5 rad"),
        ("wiggle=0:1", "--param wiggle: gait serpenoid has no such parameter"),
        ("head_joints=1.2:1.8", "--param head_joints=1.2:1.8 holds no whole number of joints"),
    ],
)
def test_a_range_that_is_empty_or_outside_the_gait_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], param: str, expected: str
) -> None:
    gait = "cobra" if param.startswith("head_joints") else "serpenoid"
    message = refused(capsys, "--gait", gait, "--param", param, "-o", str(tmp_path / "out"))
    assert message.startswith(expected)
    assert not (tmp_path / "out").exists()


def test_an_unreachable_scheduler_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()  # closed: nothing listens on it
    message = refused(
        capsys,
        *SHORT,
        *("--scheduler", f"tcp://127.0.0.1:{port}", "--connect-timeout", "1"),
        *("-o", str(tmp_path)),
    )
    assert message.startswith(
        f"--scheduler tcp://127.0.0.1:{port}: no Dask scheduler reached within 1 s"
    )
    assert not (tmp_path / "trials.csv").exists()


def test_the_penalty_is_free_up_to_check_crawls_share_then_e_per_share() -> None:
    """exp(-max(0, s - s0) / s0) on the speed; the cost of transport divided by it."""
    assert saturation_penalty(0.0) == saturation_penalty(SATURATED_SHARE) == 1.0
    assert saturation_penalty(2 * SATURATED_SHARE) == pytest.approx(1 / 2.718281828459045)
    point: Any = ground_point(
        load_robot("robot"), "serpenoid", {"amplitude": 0.5}, 0.05, 0.001, True
    )
    assert point.saturated is None
    assert objective_value("cot", point) == point.travel.cost_of_transport


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:////nonexistent/folder/study.db", "unable to open database file"),
        ("nodb://host/study", "Can't load plugin: sqlalchemy.dialects:nodb"),
    ],
)
def test_a_storage_it_cannot_open_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str, expected: str
) -> None:
    message = refused(capsys, *SHORT, "--storage", url, "-o", str(tmp_path / "out"))
    assert message == f"--storage {url}: {expected}"
