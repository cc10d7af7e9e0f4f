"""``snake sweep`` on Dask distributed: a real scheduler and two real worker processes
(``dask scheduler`` / ``dask worker`` on 127.0.0.1, random free ports). The reference is the
same sweep on the default local cluster: the simulation is deterministic, so every point must
be equal, exactly. A worker killed in mid-sweep (on 127.0.0.1, and the robot's across the
emulated Wi-Fi link of two network namespaces) and a Ctrl-C followed by a resume lose nothing
and run no point twice (counted in ``points.jsonl``, which each run appends to)."""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.cli import ENV, ROOT
from support.dask_cluster import Cluster, free_port
from support.namespaces import wifi_link
from support.sweep import POINTS, records, snake, snake_command
from support.waits import background, wait_for

from snake_bringup.cluster import (
    Counts,
    Finished,
    Job,
    connect,
    quiet_after_ctrl_c,
    register_worker_plugin,
    run_jobs,
)

pytestmark = pytest.mark.slow


def by_key(folder: Path) -> dict[str, dict[str, Any]]:
    lines = records(folder)
    keys = [r["key"] for r in lines]
    assert len(keys) == len(set(keys)), f"a point ran twice: {sorted(keys)}"
    return {r["key"]: r for r in lines}


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference: the sweep on the default local cluster, two workers."""
    out = tmp_path_factory.mktemp("local")
    proc = snake("--jobs", "2", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "sweep: 6/6 runs done, 0 running, 0 failed" in proc.stderr
    assert len(records(out)) == POINTS
    return out


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster() as c:
        yield c


def assert_same_points(folder: Path, reference: Path) -> None:
    """Every point of ``folder`` equal to the reference's, exactly, and the same CSV."""
    assert by_key(folder) == by_key(reference)
    assert (folder / "sweep.csv").read_text() == (reference / "sweep.csv").read_text()


def test_a_sweep_on_a_scheduler_equals_the_local_run(
    local: Path, cluster: Cluster, tmp_path: Path
) -> None:
    proc = snake("--scheduler", cluster.address, "-o", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert len(records(tmp_path)) == POINTS
    assert_same_points(tmp_path, local)
    summary = json.loads((tmp_path / "summary.json").read_text())["config"]
    assert summary["scheduler"] == cluster.address and summary["jobs"] == 2


def test_a_job_that_raises_fails_once_and_the_others_finish(cluster: Cluster) -> None:
    """``run_jobs`` streams each outcome; an exception in a job is its error, not a retry."""
    jobs = [Job("bad", math.sqrt, (-1.0,)), Job("good", math.sqrt, (4.0,))]
    counts = Counts(total=2)
    outcomes = {o.key: o for o in run_jobs(cluster.client, jobs, counts=counts)}
    assert outcomes["good"] == Finished("good", 2.0)
    assert outcomes["bad"] == Finished("bad", None, "ValueError: math domain error")
    assert (counts.done, counts.failed) == (1, 1)


def test_a_worker_killed_in_mid_sweep_loses_nothing(
    local: Path, cluster: Cluster, tmp_path: Path
) -> None:
    """SIGKILL of a worker that holds a point, after at least one point is done: its points run
    again on the other worker, and the results are complete and equal the local run's."""
    command = snake_command("--scheduler", cluster.address, "-o", str(tmp_path))
    with background(command, cwd=ROOT, env=ENV) as sweep:
        points = tmp_path / "points.jsonl"

        def ready() -> bool:
            # a point done, and two still to do: one may finish before the kill, not both
            return points.exists() and 1 <= points.read_text().count("\n") <= POINTS - 2

        held = cluster.kill_a_busy_worker(ready, "a point done")
        done_before = len(records(tmp_path))
        _, stderr = sweep.communicate(timeout=300)
    assert sweep.returncode == 0, stderr
    assert done_before < POINTS and held  # the worker died holding work not yet done
    wait_for(lambda: len(cluster.workers()) == 1, 60, "the scheduler to drop the killed worker")
    assert len(records(tmp_path)) == POINTS
    assert_same_points(tmp_path, local)


def test_after_ctrl_c_library_errors_are_not_printed(caplog: pytest.LogCaptureFixture) -> None:
    """Ctrl-C within a client's life raises KeyboardInterrupt as by default, having first
    turned logging off: distributed may log a cancelled call's failure from its loop's thread,
    SQLAlchemy a cursor it cannot close (fresh-clone CI runs printed both under the resume
    hint). Before the interrupt they log as ever; outside, SIGINT is as it was."""
    loop = logging.getLogger("tornado.application")
    pool = logging.getLogger("sqlalchemy.pool.impl.NullPool")
    before = signal.getsignal(signal.SIGINT)
    try:
        with quiet_after_ctrl_c():
            loop.error("a callback failed before Ctrl-C")
            with pytest.raises(KeyboardInterrupt):
                signal.raise_signal(signal.SIGINT)
            loop.error("a cancelled call failed after Ctrl-C")
            pool.error("Exception closing cursor")
    finally:
        logging.disable(logging.NOTSET)  # it stays while the process ends; a test restores it
    assert signal.getsignal(signal.SIGINT) is before
    assert [r.getMessage() for r in caplog.records] == ["a callback failed before Ctrl-C"]
    with quiet_after_ctrl_c():
        pool.error("no Ctrl-C")
    assert caplog.records[-1].getMessage() == "no Ctrl-C"  # no Ctrl-C: logging as ever


def _distributed_log_level() -> int:
    return logging.getLogger("distributed").getEffectiveLevel()


def test_the_local_cluster_s_workers_print_no_library_errors() -> None:
    """The local workers log only what is CRITICAL: a worker whose heartbeat meets the
    closing scheduler logs a traceback at ERROR (a fresh-clone CI run printed one after
    Ctrl-C); what a point raises reaches the sweep through its client."""
    with connect(None, 1, 10.0) as client:
        levels = client.run(_distributed_log_level)
    assert list(levels.values()) == [logging.CRITICAL], levels


class _NewClient:
    """A client of distributed 2023.9 on: ``register_plugin`` only."""

    def __init__(self) -> None:
        self.plugins: list[object] = []

    def register_plugin(self, plugin: object) -> None:
        self.plugins.append(plugin)


class _OldClient:
    """A client of Debian 12's distributed 2022.12.1: ``register_worker_plugin`` only."""

    def __init__(self) -> None:
        self.plugins: list[object] = []

    def register_worker_plugin(self, plugin: object) -> None:
        self.plugins.append(plugin)


@pytest.mark.parametrize("client_type", [_NewClient, _OldClient])
def test_the_worker_plugin_registers_on_old_and_new_distributed(client_type: type) -> None:
    """Debian 12's distributed (2022.12.1) has no ``Client.register_plugin``; today's has no
    ``register_worker_plugin``: the plugin reaches the workers through whichever exists."""
    client, plugin = client_type(), object()
    register_worker_plugin(client, plugin)
    assert client.plugins == [plugin]


def test_ctrl_c_then_resume_runs_every_point_once(local: Path, tmp_path: Path) -> None:
    """SIGINT once a point is written, to the whole process group as a terminal's Ctrl-C
    sends it (the local cluster's workers too): exit 130 and how to resume, no traceback; the
    same command again runs only the missing points (each run appends the points it ran: six
    lines, six keys)."""
    command = snake_command("--jobs", "2", "-o", str(tmp_path))
    with background(command, cwd=ROOT, env=ENV, ctrl_c=True) as sweep:
        points = tmp_path / "points.jsonl"
        wait_for(lambda: points.exists() and points.read_text(), 120, "a point in points.jsonl")
        os.killpg(sweep.pid, signal.SIGINT)
        _, stderr = sweep.communicate(timeout=120)
    assert sweep.returncode == 130, stderr
    first = [r["key"] for r in records(tmp_path)]
    assert 1 <= len(first) < POINTS
    assert f"sweep: interrupted, {len(first)}/{POINTS} points done in" in stderr
    assert f"run the same command with -o {tmp_path} to run the other" in stderr
    assert "Traceback" not in stderr

    proc = snake("--jobs", "2", "-o", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert f"({len(first)} from before)" in proc.stderr
    lines = records(tmp_path)
    assert len(lines) == POINTS and [r["key"] for r in lines[: len(first)]] == first
    assert_same_points(tmp_path, local)


def test_an_unreachable_scheduler_is_one_line(tmp_path: Path) -> None:
    port = free_port()  # closed: nothing listens on it
    proc = snake(
        "--scheduler", f"tcp://127.0.0.1:{port}", "--connect-timeout", "1", "-o", str(tmp_path)
    )
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(
        f"snake: error: --scheduler tcp://127.0.0.1:{port}: no Dask scheduler reached within 1 s"
    )
    assert not (tmp_path / "points.jsonl").exists()


def test_a_folder_of_another_sweep_is_one_line(local: Path) -> None:
    before = (local / "points.jsonl").read_text()
    proc = snake("--jobs", "2", "-o", str(local), "--duration", "2")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(
        f"snake: error: --output {local} holds another study (duration_s: 4.0 there, 2.0 here)"
    )
    assert (local / "points.jsonl").read_text() == before


#: Lists the scheduler's workers' hosts once ``count`` have joined (run on the station).
WORKER_HOSTS = """
import json, sys, time
from distributed import Client
client = Client(sys.argv[1], timeout=60)
deadline = time.monotonic() + 120
while len(client.scheduler_info(n_workers=-1)["workers"]) < int(sys.argv[2]):
    assert time.monotonic() < deadline, "the workers did not join"
    time.sleep(0.1)
workers = client.scheduler_info(n_workers=-1)["workers"].values()
print(json.dumps(sorted(w["host"] for w in workers)))
"""


#: On the station: SIGKILL of the worker on host ``argv[3]`` once it holds a point and
#: between 1 and ``argv[4]`` points are in ``argv[2]``; prints what it held and what was done.
KILL_BUSY = """
import json, os, signal, sys, time
from pathlib import Path
from distributed import Client
client = Client(sys.argv[1], timeout=60)
points, host, most = Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
deadline = time.monotonic() + 120
while True:
    assert time.monotonic() < deadline, "no point done while the worker held another"
    done = points.read_text().count("\\n") if points.exists() else 0
    busy = {w: list(t) for w, t in client.processing().items() if t and f"//{host}:" in w}
    if 1 <= done <= most and busy:
        break
    time.sleep(0.02)
worker, held = next(iter(busy.items()))
os.kill(client.run(os.getpid, workers=[worker])[worker], signal.SIGKILL)
print(json.dumps({"held": held, "done": done}))
"""


def test_a_sweep_on_workers_of_two_hosts_over_a_lossy_link_survives_the_robot_s_worker(
    local: Path, netns: None, tmp_path: Path
) -> None:
    """The scheduler and a worker on the station, a worker on the robot, across
    tools/wifi_link.py's Wi-Fi-like link (5-30 ms, 2 % loss): both hosts' workers join; the
    sweep, run on the station, loses its robot's worker (SIGKILL while it holds a point) and
    still equals the local run point for point."""
    wl = wifi_link()
    impairment = wl.Impairment(delay_ms=(5, 30), loss=0.02, seed=5)
    with wl.WifiLink(None, impairment) as link:
        scheduler = f"tcp://{link.address('station')}:8786"
        dask = [sys.executable, "-m", "dask"]
        quiet = {"cwd": tempfile.gettempdir(), "env": ENV, "stderr": subprocess.DEVNULL}
        station = ("--host", link.address("station"))
        link.popen(
            "station",
            [*dask, "scheduler", *station, "--port", "8786", "--no-dashboard"],
            stdout=subprocess.DEVNULL,
            **quiet,
        )
        for host in ("robot", "station"):
            worker = ("--nthreads", "1", "--no-nanny", "--no-dashboard")
            where = ("--host", link.address(host))
            link.popen(
                host,
                [*dask, "worker", scheduler, *worker, *where],
                stdout=subprocess.DEVNULL,
                **quiet,
            )
        joined = link.popen(
            "station",
            [sys.executable, "-c", WORKER_HOSTS, scheduler, "2"],
            stdout=subprocess.PIPE,
            text=True,
            **quiet,
        )
        out, _ = joined.communicate(timeout=300)
        assert joined.returncode == 0
        assert json.loads(out) == sorted([link.address("robot"), link.address("station")])
        sweep = link.popen(
            "station",
            snake_command("--scheduler", scheduler, "-o", str(tmp_path)),
            cwd=ROOT,
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        points = (str(tmp_path / "points.jsonl"), link.address("robot"), str(POINTS - 2))
        killer = link.popen(
            "station",
            [sys.executable, "-c", KILL_BUSY, scheduler, *points],
            stdout=subprocess.PIPE,
            text=True,
            **quiet,
        )
        _, err = sweep.communicate(timeout=300)
        assert sweep.returncode == 0, err
        out, _ = killer.communicate(timeout=60)
        assert killer.returncode == 0
    killed = json.loads(out)
    assert killed["held"] and killed["done"] < POINTS  # it died holding work not yet done
    assert len(records(tmp_path)) == POINTS
    assert_same_points(tmp_path, local)
