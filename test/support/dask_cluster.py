"""A Dask scheduler and workers on 127.0.0.1 for the sweep's and the study's tests, in the
environment of :data:`support.cli.ENV`."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from support.cli import ENV
from support.waits import wait_for

#: A worker on 127.0.0.1 without its dashboard.
QUIET = ("--no-dashboard", "--host", "127.0.0.1")


def free_port() -> int:
    """A TCP port on 127.0.0.1 no one listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """A ``dask scheduler`` and two ``dask worker`` processes (no nanny: a killed worker stays
    dead), on 127.0.0.1; closed at the end of a ``with``."""

    def __init__(self, workers: int = 2) -> None:
        from distributed import Client

        port = str(free_port())
        self.address = f"tcp://127.0.0.1:{port}"
        dask = [sys.executable, "-m", "dask"]
        self.procs = [
            subprocess.Popen(
                [*dask, "scheduler", "--host", "127.0.0.1", "--port", port, "--no-dashboard"],
                cwd=tempfile.gettempdir(),
                env=ENV,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        ]
        self.client: Any = None
        try:
            self.client = wait_for(self._connect, 60, "the scheduler")
            for _ in range(workers):
                self.procs.append(
                    subprocess.Popen(
                        [*dask, "worker", self.address, "--nthreads", "1", "--no-nanny", *QUIET],
                        cwd=tempfile.gettempdir(),
                        env=ENV,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                )
            wait_for(lambda: len(self.workers()) == workers, 60, f"{workers} workers")
        except BaseException:
            self.close()
            raise
        del Client

    def _connect(self) -> Any:
        from distributed import Client

        try:
            return Client(self.address, timeout=2)
        except (OSError, TimeoutError):
            return None

    def workers(self) -> dict[str, Any]:
        return dict(self.client.scheduler_info(n_workers=-1)["workers"])

    def kill_a_busy_worker(self, ready: Callable[[], bool], what: str) -> list[str]:
        """SIGKILL a worker that holds work, once ``ready()``; returns the keys it held."""

        def busy_worker() -> tuple[str, list[str]] | None:
            if not ready():
                return None
            busy = {w: list(t) for w, t in self.client.processing().items() if t}
            return next(iter(busy.items()), None)

        worker, held = wait_for(busy_worker, 120, f"{what} and a worker holding work")
        pid = self.client.run(os.getpid, workers=[worker])[worker]
        killed = next(p for p in self.procs if p.pid == pid)
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=30)
        return held

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        for proc in reversed(self.procs):
            proc.kill()
            proc.wait(timeout=30)
