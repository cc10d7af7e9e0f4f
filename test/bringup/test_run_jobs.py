"""run_jobs turns a scheduler lost while a result is gathered into the one lost-scheduler
line (snake_bringup.cluster): distributed raises its CommClosedError, an OSError, from
``Future.result`` when the scheduler dies between a task's end and the gather, which a
scheduler killed mid-sweep hit in one fresh-clone run ("in <TCP (closed)
ConnectionPool.gather ...>: Stream is closed").

Reference: a client stub whose finished future's gather fails as distributed's does.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import distributed
import pytest

from snake_bringup.cluster import ClusterError, Job, run_jobs

ADDRESS = "tcp://127.0.0.1:8786"


class ClosedFuture:
    """A task the scheduler reported finished; its result cannot be gathered any more."""

    status = "finished"

    def result(self) -> Any:
        raise OSError(f"in <TCP (closed) ConnectionPool.gather remote={ADDRESS}>: Stream is closed")

    def release(self) -> None:
        pass

    def cancel(self) -> None:
        pass


class ClientStub:
    status = "running"  # the client has not noticed the lost scheduler yet
    scheduler = SimpleNamespace(address=ADDRESS)

    def submit(self, *_args: Any, **_kwargs: Any) -> ClosedFuture:
        return ClosedFuture()

    def nthreads(self) -> dict[str, int]:
        return {"worker": 1}

    def processing(self) -> dict[str, list[str]]:
        return {}


def test_a_result_lost_with_the_scheduler_is_the_lost_scheduler_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(distributed, "wait", lambda fs, **_: SimpleNamespace(done=set(fs)))
    jobs = [Job("0", print), Job("1", print)]
    with pytest.raises(ClusterError) as error:
        list(run_jobs(ClientStub(), jobs, tick=0.01))
    assert str(error.value).startswith(f"lost the Dask scheduler {ADDRESS} with ")
