"""Studies on a Dask distributed cluster: start a local one or connect to a scheduler, run a
list of independent jobs (a callable and its arguments each) and stream each result back as
it finishes, with a progress line and a resume file (``points.jsonl``) that keeps every
finished job on disk.

Only the plumbing: ``snake sweep`` (snake_bringup.sweep) runs its grid points through here,
and ``snake optimize`` (snake_bringup.optimization) its trials; the jobs are generic (any
picklable callable), and both studies' job is :func:`snake_bringup.sweep.ground_point`.

A worker that dies loses nothing: the scheduler runs its tasks again on another worker (up to
``distributed.scheduler.allowed-failures`` deaths per task, 3 by default, after which the
task fails with ``KilledWorker``). A job whose callable raises fails once (no retries): it is
reported as failed, never retried forever.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import CancelledError
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TextIO, TypeVar

from .cluster_tls import NO_TLS, TlsFiles, cluster_security
from .errors import BringupError, UsageError

T = TypeVar("T")

#: Deaths of its worker a task survives before it fails with ``KilledWorker`` (local cluster).
ALLOWED_FAILURES = 3
#: The resume file: one JSON object per finished job, in the order they finished.
POINTS_FILE = "points.jsonl"
#: What the study is (its options), checked before a resume.
STUDY_FILE = "study.json"
#: How long a study waits for a worker on a scheduler that has none [s] (``--worker-timeout``).
WORKER_TIMEOUT_S = 60.0
#: How long a study tries its scheduler [s] (``--connect-timeout``).
CONNECT_TIMEOUT_S = 10.0


class ClusterError(BringupError):
    """A scheduler that cannot be reached, a resume folder from another study, jobs that
    failed."""


@dataclass(frozen=True)
class Job(Generic[T]):
    """One unit of work: ``function(*args)`` on a worker.

    Attributes:
        key: the job's name, unique in its study (e.g. the grid index), as written to the
            resume file.
        function: a picklable callable (a module-level function).
        args: its positional arguments (picklable).
    """

    key: str
    function: Callable[..., T]
    args: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Finished(Generic[T]):
    """A job's outcome: ``result`` if it returned, else ``error`` (``Type: message``)."""

    key: str
    result: T | None
    error: str | None = None


@dataclass
class Counts:
    """How far a study is: of ``total`` jobs, ``done``, ``running`` (on a worker now) and
    ``failed``; ``resumed`` were done by an earlier run."""

    total: int
    done: int = 0
    running: int = 0
    failed: int = 0
    resumed: int = 0


@dataclass(frozen=True)
class ClusterOptions:
    """Where a study runs: the options ``snake sweep`` and ``snake optimize`` share
    (``--jobs``, ``--scheduler``, ``--connect-timeout``, ``--worker-timeout``, ``--tls-*``).

    Attributes:
        jobs: worker processes of the local cluster (0: one per core).
        scheduler: address of a running Dask scheduler (None: a local cluster).
        connect_timeout: how long to try ``scheduler`` [s].
        worker_timeout: how long the scheduler may have no worker [s].
        tls: the client's TLS files for a ``tls://`` scheduler.
    """

    jobs: int = 0
    scheduler: str | None = None
    connect_timeout: float = CONNECT_TIMEOUT_S
    worker_timeout: float = WORKER_TIMEOUT_S
    tls: TlsFiles = NO_TLS

    def security(self) -> Any:
        """Check the options, before any run starts; return the ``distributed.security.Security``
        of a ``tls://`` scheduler (else None) for :meth:`client`.

        Raises:
            UsageError: naming the option (a negative ``--jobs``, a timeout not > 0 s, TLS
                files that are not a private pair).
        """
        if self.jobs < 0:
            raise UsageError(f"--jobs must be >= 0 (0: one per core), got {self.jobs}")
        if not self.connect_timeout > 0:
            raise UsageError(f"--connect-timeout must be > 0 s, got {self.connect_timeout}")
        if not self.worker_timeout > 0:
            raise UsageError(f"--worker-timeout must be > 0 s, got {self.worker_timeout}")
        return cluster_security(self.scheduler, self.tls)

    def client(self, security: Any, most: int | None = None) -> AbstractContextManager[Any]:
        """:func:`connect` with these options: a local cluster of ``jobs`` workers (at most
        ``most``), or the scheduler's client."""
        workers = self.jobs or os.cpu_count() or 1
        workers = workers if most is None else min(workers, most)
        return connect(self.scheduler, workers, self.connect_timeout, security, self.worker_timeout)


@contextmanager
def quiet_after_ctrl_c() -> Iterator[None]:
    """Within: Ctrl-C (SIGINT, in the main thread) raises KeyboardInterrupt as by default,
    and first turns logging off (``logging.disable``), before another thread, or the code the
    interrupt lands in, can log the failure of the work it cut short: distributed 2025.x
    logs a NameError from its loop's thread with its traceback while it cancels the call the
    client waited on, and SQLAlchemy one for the cursor it cannot close when the interrupt
    lands in an optuna query. The user pressed Ctrl-C; nothing is wrong, and the command says
    how to resume. After an interrupt logging stays off while the process ends."""

    def on_sigint(signum: int, frame: object) -> None:
        logging.disable(logging.CRITICAL)
        raise KeyboardInterrupt

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, on_sigint) if main else None
    try:
        yield
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)


def quiet_worker_logs() -> Any:
    """A Dask worker plugin: the worker process logs only what is CRITICAL (the local
    cluster's workers, whose stderr is the user's terminal).

    A worker whose heartbeat meets the closing scheduler logs a traceback at ERROR, a race
    of every close, Ctrl-C or not; what a point raises reaches the sweep through its client.
    (``LocalCluster(silence_logs=...)`` sets only the nanny's logger in a worker process.)
    """
    from distributed import WorkerPlugin

    class QuietWorkerLogs(WorkerPlugin):
        name = "mfm-snake-quiet-worker-logs"

        def setup(self, worker: Any) -> None:
            logging.getLogger("distributed").setLevel(logging.CRITICAL)

    return QuietWorkerLogs()


def register_worker_plugin(client: Any, plugin: Any) -> None:
    """Register a worker plugin on every worker of ``client``'s cluster, now and later:
    ``Client.register_plugin`` (distributed 2023.9 on), else ``register_worker_plugin``
    (Debian 12's distributed 2022.12.1 has only that; later versions removed it)."""
    register = getattr(client, "register_plugin", None)
    if register is None:
        client.register_worker_plugin(plugin)
    else:
        register(plugin)


@contextmanager
def connect(
    scheduler: str | None,
    workers: int,
    connect_timeout: float,
    security: Any = None,
    worker_timeout: float = WORKER_TIMEOUT_S,
) -> Iterator[Any]:
    """A Dask client: on a new local cluster (``scheduler`` None; its scheduler and workers
    on 127.0.0.1) or on the scheduler at ``scheduler``, once it has a worker; closed (with
    the local cluster) on exit, also after Ctrl-C.

    Args:
        scheduler: address of a running scheduler (e.g. ``tls://10.0.0.2:8786``), or None.
        workers: worker processes of the local cluster (1 thread each, no dashboard).
        connect_timeout: how long to try the scheduler [s].
        security: the ``distributed.security.Security`` of a ``tls://`` scheduler
            (snake_bringup.cluster_tls.cluster_security), or None.
        worker_timeout: how long to wait for the scheduler's first worker [s].

    Yields:
        The ``distributed.Client``.

    Raises:
        ClusterError: the scheduler cannot be reached within ``connect_timeout``, or it has
            no worker within ``worker_timeout``.
    """
    import dask
    from distributed import Client, LocalCluster

    logging.getLogger("distributed").setLevel(logging.ERROR)
    # a lost scheduler: the client logs its failed reconnection with a traceback at ERROR;
    # run_jobs says it in one line (ClusterError)
    logging.getLogger("distributed.client").setLevel(logging.CRITICAL)
    with (
        quiet_after_ctrl_c(),
        dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES}),
    ):
        if scheduler is None:
            # The worker processes start with SIGINT ignored (inherited through exec): a
            # Ctrl-C on the terminal reaches the whole process group, and only this process
            # should act on it (closing the cluster), not each worker with its traceback.
            main = threading.current_thread() is threading.main_thread()
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
            try:
                cluster = LocalCluster(  # type: ignore[no-untyped-call]
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    silence_logs=logging.ERROR,
                )
            finally:
                if main:
                    signal.signal(signal.SIGINT, previous)
            try:
                with Client(cluster) as client:  # type: ignore[no-untyped-call]
                    register_worker_plugin(client, quiet_worker_logs())
                    yield client
            finally:
                cluster.close()
            return
        try:
            client = Client(  # type: ignore[no-untyped-call]
                scheduler, timeout=connect_timeout, security=security
            )
        except (OSError, TimeoutError, ValueError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ClusterError(
                f"--scheduler {scheduler}: no Dask scheduler reached within "
                f"{connect_timeout:g} s ({reason}); start one (docs/cli.md), check the address"
                + (" and that the --tls-* files are its cluster's" if security else "")
                + ", or drop --scheduler for a local cluster"
            ) from None
        with client:
            wait_for_a_worker(client, scheduler, worker_timeout)
            yield client


def wait_for_a_worker(client: Any, scheduler: str, timeout: float) -> None:
    """Return once the cluster has a worker thread.

    Raises:
        ClusterError: none within ``timeout`` [s].
    """
    deadline = time.monotonic() + timeout
    while threads(client) == 0:
        if time.monotonic() > deadline:
            raise ClusterError(no_worker(scheduler, timeout))
        time.sleep(0.1)


def no_worker(scheduler: str, timeout: float) -> str:
    """The message for a scheduler without a worker for ``timeout`` [s]."""
    return (
        f"--scheduler {scheduler}: no Dask worker for {timeout:g} s; start one (`dask worker "
        f"{scheduler}`, with the cluster's --tls-* files for tls://) or raise --worker-timeout"
    )


def threads(client: Any) -> int:
    """The cluster's worker threads (0 if no worker has joined yet)."""
    info = client.scheduler_info(n_workers=-1)
    return int(sum(w.get("nthreads", 1) for w in info["workers"].values()))


def run_jobs(
    client: Any,
    jobs: Sequence[Job[T]],
    on_progress: Callable[[Counts], None] | None = None,
    counts: Counts | None = None,
    tick: float = 0.5,
    worker_timeout: float = WORKER_TIMEOUT_S,
) -> Iterator[Finished[T]]:
    """Submit ``jobs`` to the cluster and yield each outcome as it finishes.

    Every task is impure (always run, never taken from a cache) with no retries: a worker's
    death reschedules its task (the scheduler's ``allowed-failures``), an exception in the
    job is that job's final ``error``. Closing the iterator early (e.g. Ctrl-C) cancels what
    has not finished.

    Args:
        client: a ``distributed.Client``.
        jobs: the jobs, keys unique.
        on_progress: called with the counts at least every ``tick`` seconds and on each
            outcome.
        counts: the counts to update (e.g. with ``resumed`` set); new ones if None.
        tick: the progress period [s].
        worker_timeout: how long the cluster may have no worker while jobs wait [s].

    Raises:
        ClusterError: the scheduler was lost (its connection closed: the jobs not finished
            are cancelled), or the cluster had no worker for ``worker_timeout``.
    """
    from distributed import TimeoutError as DaskTimeout
    from distributed import wait

    counts = counts if counts is not None else Counts(total=len(jobs))
    run = uuid.uuid4().hex[:8]
    futures = {
        client.submit(j.function, *j.args, key=f"{j.key}-{run}", pure=False, retries=0): j.key
        for j in jobs
    }
    pending = set(futures)
    workers_seen = time.monotonic()
    try:
        while pending:
            try:
                done = wait(pending, timeout=tick, return_when="FIRST_COMPLETED")  # type: ignore[no-untyped-call]
                finished = done.done
            except (DaskTimeout, TimeoutError):
                finished = set()
            except CancelledError:  # by the client, on losing the scheduler (or by another)
                raise ClusterError(lost_scheduler(client, len(pending))) from None
            if any(f.status == "cancelled" for f in finished):
                raise ClusterError(lost_scheduler(client, len(pending)))
            if _has_workers(client):
                workers_seen = time.monotonic()
            elif time.monotonic() - workers_seen > worker_timeout:
                raise ClusterError(no_worker(_address(client), worker_timeout))
            for future in finished:
                pending.discard(future)
                if future.status == "finished":
                    outcome: Finished[T] = Finished(futures[future], future.result())
                    counts.done += 1
                else:
                    exc = future.exception()
                    error = f"{type(exc).__name__}: {exc}".splitlines()[0]
                    outcome = Finished(futures[future], None, error)
                    counts.failed += 1
                future.release()
                yield outcome
            if on_progress is not None:
                counts.running = _running(client, {f.key for f in pending})
                on_progress(counts)
    except OSError:  # distributed's CommClosedError: a result gathered as the scheduler died
        raise ClusterError(lost_scheduler(client, len(pending), closed=True)) from None
    finally:
        if client.status == "running":  # a lost scheduler took them with it
            for future in pending:
                future.cancel()


def _address(client: Any) -> str:
    """The address of ``client``'s scheduler."""
    return str(getattr(client.scheduler, "address", "?"))


def lost_scheduler(client: Any, pending: int, closed: bool = False) -> str:
    """The message for jobs cancelled under the study: the scheduler lost (its connection
    ``closed``, or the client no longer running) or, with the client still connected,
    cancelled by another client."""
    address = _address(client)
    if client.status == "running" and not closed:
        return f"the Dask scheduler {address} cancelled {pending} jobs (another client?)"
    return (
        f"lost the Dask scheduler {address} with {pending} jobs not done (it stopped, or the "
        "network between here and it failed)"
    )


def _has_workers(client: Any) -> bool:
    """Whether the cluster has a worker now (True if the scheduler does not answer: a lost
    scheduler is its own error)."""
    try:
        return bool(client.nthreads())
    except (OSError, TimeoutError):
        return True


def _running(client: Any, keys: set[str]) -> int:
    """How many of ``keys`` a worker holds now (at most one per worker thread)."""
    try:
        processing = client.processing()
        nthreads = client.nthreads()
    except (OSError, TimeoutError):
        return 0
    return sum(
        min(len(keys.intersection(tasks)), nthreads.get(worker, 1))
        for worker, tasks in processing.items()
    )


@dataclass
class ProgressLine:
    """``label: 3/10 done, 2 running, 0 failed (4.2 s)`` on ``stream``: one updating line on
    a terminal, else a line every ``every`` seconds and the last one; ``detail`` (e.g. the
    best so far), when set, after the counts."""

    label: str
    detail: str = ""
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    every: float = 5.0
    start: float = field(default_factory=time.monotonic)
    _last: float = float("-inf")
    _text: str = ""

    def __call__(self, counts: Counts) -> None:
        text = (
            f"{self.label}: {counts.done + counts.resumed}/{counts.total} runs done, "
            f"{counts.running} running, {counts.failed} failed"
            + (f" ({counts.resumed} from before)" if counts.resumed else "")
            + (f", {self.detail}" if self.detail else "")
        )
        now = time.monotonic()
        line = f"{text} ({now - self.start:.1f} s)"
        if self.stream.isatty():
            self.stream.write(f"\r{line}\033[K")
        elif text != self._text and now - self._last >= self.every:
            self.stream.write(line + "\n")
            self._last = now
        else:
            return
        self._text = text
        self.stream.flush()

    def finish(self, counts: Counts) -> None:
        """The final line (always printed)."""
        self._last = float("-inf")
        self._text = ""
        self(counts)
        if self.stream.isatty():
            self.stream.write("\n")
            self.stream.flush()


def another_study(recorded: Mapping[str, Any], wanted: Mapping[str, Any]) -> str:
    """How a stored study's setup differs from the one asked for: ``name: A there, B here``
    for the first field (by name) that differs; "" if none does."""
    for name in sorted(set(recorded) | set(wanted)):
        if recorded.get(name) != wanted.get(name):
            return f"{name}: {recorded.get(name)!r} there, {wanted.get(name)!r} here"
    return ""


class PointLog:
    """A study's folder: ``study.json`` (what the study is) and ``points.jsonl`` (one JSON
    object per finished job, appended, flushed and fsync'd as it arrives), so that a study
    resumes where it stopped."""

    def __init__(self, folder: Path, study: Mapping[str, Any], option: str = "--output") -> None:
        """Open ``folder`` for ``study``, creating it, or check it holds the same study.

        Raises:
            ClusterError: the folder holds another study (one line naming the first field
                that differs).
        """
        self.folder = folder
        self.path = folder / POINTS_FILE
        folder.mkdir(parents=True, exist_ok=True)
        wanted = json.loads(json.dumps(dict(study)))
        study_path = folder / STUDY_FILE
        if study_path.exists():
            difference = another_study(json.loads(study_path.read_text()), wanted)
            if difference:
                raise ClusterError(
                    f"{option} {folder} holds another study ({difference}): give a new folder, "
                    "or that study's options to resume it"
                )
        else:
            tmp = study_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(wanted, indent=2) + "\n")
            os.replace(tmp, study_path)
        self.records = self._load()

    def _load(self) -> dict[str, dict[str, Any]]:
        """The finished jobs by key; a line torn by a crash (the last, unterminated) is cut."""
        if not self.path.exists():
            return {}
        data = self.path.read_bytes()
        whole = data[: data.rfind(b"\n") + 1]
        if len(whole) != len(data):
            with self.path.open("r+b") as f:
                f.truncate(len(whole))
        records = {}
        for line in whole.decode().splitlines():
            if line.strip():
                record = json.loads(line)
                records[str(record["key"])] = record
        return records

    def reload(self) -> dict[str, dict[str, Any]]:
        """:attr:`records` read again from disk: a Ctrl-C may land in :meth:`append` after
        the line is written and before it is counted."""
        self.records = self._load()
        return self.records

    def append(self, key: str, record: Mapping[str, Any]) -> None:
        """Write one finished job (``record`` with its ``key``) to disk before returning."""
        entry = {"key": key, **record}
        with self.path.open("a") as f:
            f.write(json.dumps(entry) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.records[key] = entry
