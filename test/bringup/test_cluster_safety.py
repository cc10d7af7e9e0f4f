"""A Dask cluster that strangers cannot use, and a cluster that fails in one line.

The references: Python's ``ssl`` (the certificates of ``snake cluster-certs`` load and chain
to their CA, a stranger's do not), the kernel's sockets (what listens in the scheduler's
network namespace, ``ss``), and real ``dask scheduler``/``dask worker`` processes: over
tools/wifi_link.py's two network namespaces a client without the cluster's certificate
(none, plain TCP, or its own CA's) reaches neither the scheduler nor a worker, and one with
it runs a sweep. A scheduler killed in mid-sweep and a scheduler without workers end the
command in one line, exit 1, no traceback, the points done kept."""

from __future__ import annotations

import contextlib
import io
import json
import os
import ssl
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support.cli import ENV, ROOT
from support.dask_cluster import Cluster
from support.namespaces import wifi_link
from support.sweep import POINTS, records, snake_command
from support.waits import background, wait_for

from snake_bringup.cli import main
from snake_bringup.cluster_tls import (
    CA_FILE,
    ROLES,
    TlsFiles,
    cert_file,
    cluster_security,
    key_file,
    make_cluster_certs,
)
from snake_bringup.errors import UsageError

pytestmark = pytest.mark.slow

#: Two points of 1 s simulated: the smallest sweep that runs on a worker.
TINY = ["--x", "amplitude=0.3:0.9:2", "--y", "frequency=0.5:1.0:1", "--duration", "1"]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_cluster_certs(tmp_path_factory.mktemp("certs") / "cluster")[0].parent


def tls_options(folder: Path, role: str = "client") -> list[str]:
    return [
        *("--tls-ca-file", str(folder / CA_FILE)),
        *("--tls-cert", str(folder / cert_file(role))),
        *("--tls-key", str(folder / key_file(role))),
    ]


def refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """``snake ARGS`` in this process: exit 1 and its one line (after ``snake: error: ``)."""
    assert main(list(args)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("snake: error: "), err
    return err.removeprefix("snake: error: ").rstrip("\n")


def test_the_certificates_chain_to_their_ca_and_keys_are_the_owner_s_alone(
    certs: Path, tmp_path: Path
) -> None:
    """Each role's certificate and key load into an ``ssl`` context that trusts the CA, and
    the role's certificate verifies against it (a TLS handshake in memory, both ways); a
    stranger's CA does not verify it. Keys 0600, the folder 0700, no CA key written; a second
    run into the same folder overwrites nothing."""
    assert sorted(p.name for p in certs.iterdir()) == sorted(
        [CA_FILE, *(f(role) for role in ROLES for f in (cert_file, key_file))]
    )
    assert stat.S_IMODE(certs.stat().st_mode) == 0o700
    for role in ROLES:
        assert stat.S_IMODE((certs / key_file(role)).stat().st_mode) == 0o600
        assert stat.S_IMODE((certs / cert_file(role)).stat().st_mode) == 0o644
    stranger = make_cluster_certs(tmp_path / "stranger")[0].parent
    assert handshake(certs, "scheduler", certs, "client") is None
    assert handshake(certs, "worker", certs, "scheduler") is None
    assert "certificate verify failed" in str(handshake(certs, "scheduler", stranger, "client"))
    assert "certificate verify failed" in str(handshake(stranger, "scheduler", certs, "client"))
    before = {p.name: p.read_bytes() for p in certs.iterdir()}
    with pytest.raises(UsageError, match=f"{certs / CA_FILE} exists: give a new folder"):
        make_cluster_certs(certs)
    assert {p.name: p.read_bytes() for p in certs.iterdir()} == before


def handshake(server: Path, server_role: str, client: Path, client_role: str) -> str | None:
    """A mutual TLS handshake in memory, as Dask makes it (CA required both ways, no host
    names): None if it completes, else the error."""

    def context(folder: Path, role: str, purpose: ssl.Purpose) -> ssl.SSLContext:
        ctx = ssl.create_default_context(purpose, cafile=str(folder / CA_FILE))
        ctx.load_cert_chain(folder / cert_file(role), folder / key_file(role))
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_REQUIRED
        return ctx

    up, down = ssl.MemoryBIO(), ssl.MemoryBIO()
    back_up, back_down = ssl.MemoryBIO(), ssl.MemoryBIO()
    s = context(server, server_role, ssl.Purpose.CLIENT_AUTH).wrap_bio(up, back_down, True)
    c = context(client, client_role, ssl.Purpose.SERVER_AUTH).wrap_bio(back_up, down, False)
    done = {"server": False, "client": False}
    for _ in range(20):
        for name, side in (("client", c), ("server", s)):
            if done[name]:
                continue
            try:
                side.do_handshake()
                done[name] = True
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLError as exc:
                return str(exc)
        up.write(down.read())
        back_up.write(back_down.read())
        if all(done.values()):
            return None
    return "no handshake in 20 rounds"


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (
            ["--scheduler", "tls://127.0.0.1:8786"],
            "--scheduler tls://127.0.0.1:8786 is TLS: give --tls-ca-file, --tls-cert, "
            "--tls-key (the cluster's CA, this client's certificate and key; `snake "
            "cluster-certs DIR` makes them)",
        ),
        (
            ["--scheduler", "tls://127.0.0.1:8786", "--tls-ca-file", "ca.pem"],
            "--scheduler tls://127.0.0.1:8786 is TLS: give --tls-cert, --tls-key (",
        ),
        (
            ["--scheduler", "tcp://127.0.0.1:8786", "--tls-cert", "client.pem"],
            "--tls-cert given for --scheduler tcp://127.0.0.1:8786: TLS needs --scheduler "
            "tls://HOST:PORT",
        ),
        (["--tls-key", "k.pem"], "--tls-key given for a local cluster: TLS needs --scheduler"),
    ],
)
@pytest.mark.parametrize("command", ["sweep", "optimize"])
def test_tls_options_that_do_not_go_together_are_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    options: list[str],
    expected: str,
) -> None:
    """Refused before any folder or storage is made, and before any connection."""
    out = tmp_path / "out"
    message = refused(capsys, command, *options, "--duration", "1", "-o", str(out))
    assert message.startswith(expected), message
    assert not out.exists()


def test_tls_files_that_are_not_a_pair_or_not_private_are_one_line(
    certs: Path, tmp_path: Path
) -> None:
    address = "tls://127.0.0.1:8786"
    ca, cert, key = certs / CA_FILE, certs / cert_file("client"), certs / key_file("client")
    assert cluster_security(address, TlsFiles(ca, cert, key)) is not None
    assert cluster_security(None, TlsFiles()) is None
    assert cluster_security("127.0.0.1:8786", TlsFiles()) is None  # tcp:// by default
    with pytest.raises(UsageError, match=f"^--tls-cert {tmp_path / 'no.pem'}: no such file$"):
        cluster_security(address, TlsFiles(ca, tmp_path / "no.pem", key))
    mismatch = certs / key_file("worker")
    with pytest.raises(UsageError, match="not a CA, certificate and key that go together"):
        cluster_security(address, TlsFiles(ca, cert, mismatch))
    shared = tmp_path / "shared-key.pem"
    shared.write_bytes(key.read_bytes())
    shared.chmod(0o640)
    with pytest.raises(UsageError) as info:
        cluster_security(address, TlsFiles(ca, cert, shared))
    assert str(info.value) == (
        f"--tls-key {shared} is readable by others (mode 0640): chmod 600 {shared}"
    )


def run_sweep(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        snake_command(*args), cwd=ROOT, capture_output=True, text=True, timeout=300, env=ENV
    )


def test_a_scheduler_killed_in_mid_sweep_is_one_line(tmp_path: Path) -> None:
    """SIGKILL of the scheduler once a point is written: exit 1, one line naming the lost
    scheduler and how to resume, no traceback; the points done stay in points.jsonl."""
    cluster = Cluster()
    try:
        command = snake_command("--scheduler", cluster.address, "--quiet", "-o", str(tmp_path))
        with background(command, cwd=ROOT, env=ENV) as sweep:
            points = tmp_path / "points.jsonl"
            wait_for(lambda: points.exists() and points.read_text(), 120, "a point written")
            cluster.procs[0].kill()
            _, stderr = sweep.communicate(timeout=180)
    finally:
        cluster.client.close(timeout=5)
        cluster.client = None
        cluster.close()
    done = len(records(tmp_path))
    assert sweep.returncode == 1, stderr
    assert stderr.count("\n") == 1 and "Traceback" not in stderr, stderr
    assert stderr.startswith(f"snake: error: lost the Dask scheduler {cluster.address} with ")
    assert stderr.rstrip().endswith(
        f"{done}/{POINTS} points done in {tmp_path / 'points.jsonl'}: run the same command "
        f"with -o {tmp_path} to run the other {POINTS - done}"
    )
    assert 1 <= done < POINTS


def test_a_scheduler_without_workers_is_one_line_after_the_worker_timeout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sweep (resuming a folder) and a study on a scheduler no worker ever joins: one line
    each once --worker-timeout has passed, not a wait for ever; then the only worker killed
    in mid-sweep: one line with the points done."""
    with Cluster(workers=0) as cluster:
        (tmp_path / "sweep").mkdir()
        proc = run_sweep("--scheduler", cluster.address, "--worker-timeout", "2", "--quiet",
                         "-o", str(tmp_path / "sweep"))  # fmt: skip
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
        assert proc.stderr.startswith(
            f"snake: error: --scheduler {cluster.address}: no Dask worker for 2 s; start one "
            f"(`dask worker {cluster.address}`"
        )
        assert proc.stderr.rstrip().endswith("or raise --worker-timeout")
        message = refused(capsys, "optimize", "--trials", "2", "--duration", "1",
                          "--scheduler", cluster.address, "--worker-timeout", "2",
                          "-o", str(tmp_path / "study"))  # fmt: skip
        assert message.startswith(f"--scheduler {cluster.address}: no Dask worker for 2 s")


def test_the_last_worker_lost_in_mid_sweep_is_one_line(tmp_path: Path) -> None:
    with Cluster(workers=1) as cluster:
        command = snake_command(
            *("--scheduler", cluster.address, "--worker-timeout", "3"),
            "--quiet",
            "-o",
            str(tmp_path),
        )
        with background(command, cwd=ROOT, env=ENV) as sweep:
            points = tmp_path / "points.jsonl"

            def ready() -> bool:
                return points.exists() and 1 <= points.read_text().count("\n") <= POINTS - 2

            cluster.kill_a_busy_worker(ready, "a point done")
            _, stderr = sweep.communicate(timeout=180)
    done = len(records(tmp_path))
    assert sweep.returncode == 1 and stderr.count("\n") == 1, stderr
    assert stderr.startswith(f"snake: error: --scheduler {cluster.address}: no Dask worker for 3 s")
    assert f"; {done}/{POINTS} points done in {tmp_path / 'points.jsonl'}" in stderr


#: On the robot's side: every way a stranger (no certificate of the cluster's CA) tries to
#: run a task on the scheduler or on a worker, then (the control) a worker's answer to the
#: same call with the cluster's client certificate; prints what each did.
STRANGER = """
import asyncio, json, os, sys
from distributed import Client
from distributed.comm import connect
from distributed.security import Security
scheduler, worker = sys.argv[1], sys.argv[2]
def security(d):
    return Security(tls_ca_file=d + "/ca.pem", tls_client_cert=d + "/client.pem",
                    tls_client_key=d + "/client-key.pem", require_encryption=True)
own_ca, member = security(sys.argv[3]), security(sys.argv[4])
host = scheduler.split("://")[1]
outcome = {}
for name, address, security in [
    ("plain tcp", "tcp://" + host, None),
    ("tls, no certificate", scheduler, None),
    ("tls, its own CA", scheduler, own_ca),
]:
    try:
        with Client(address, timeout=5, security=security) as c:
            outcome[name] = "ran " + str(c.submit(os.getpid).result(timeout=10))
    except Exception as exc:
        outcome[name] = "refused: " + type(exc).__name__
for name, address, security in [
    ("worker, plain tcp", "tcp://" + worker.split("://")[1], None),
    ("worker, its own CA", worker, own_ca),
    ("worker, the cluster's certificate", worker, member),
]:
    args = security.get_connection_args("client") if security else {}
    async def call():
        comm = await connect(address, timeout=5, **args)
        await comm.write({"op": "identity", "reply": True})
        return await comm.read()
    try:
        outcome[name] = "answered " + str(sorted(asyncio.run(call())))
    except Exception as exc:
        outcome[name] = "refused: " + type(exc).__name__
print(json.dumps(outcome))
"""

#: On the robot's side, with the client's certificate: the workers' addresses and hosts.
MEMBER = """
import json, os, sys
from distributed import Client
from distributed.security import Security
d = sys.argv[2]
security = Security(tls_ca_file=d + "/ca.pem", tls_client_cert=d + "/client.pem",
                    tls_client_key=d + "/client-key.pem", require_encryption=True)
with Client(sys.argv[1], timeout=30, security=security) as c:
    c.wait_for_workers(1, timeout=120)
    print(json.dumps(sorted(c.scheduler_info(n_workers=-1)["workers"])))
"""


def listeners(namespace: str) -> list[str]:
    """The local addresses of every listening TCP socket in ``namespace``."""
    out = subprocess.run(
        ["ip", "netns", "exec", namespace, "ss", "-ltnH"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line.split()[3] for line in out.splitlines() if line.strip()]


def test_a_stranger_on_the_network_cannot_run_a_task_on_a_tls_cluster(
    netns: None, certs: Path, tmp_path: Path
) -> None:
    """The scheduler and a worker on the station as docs/cli.md starts them (TLS, bound to
    the station's address, the HTTP servers on loopback); from the robot's namespace a client
    with no certificate of the cluster's CA reaches neither the scheduler nor the worker
    (plain TCP, TLS without a certificate, TLS with its own CA), while the worker answers the
    same call with the cluster's client certificate, and that client runs a sweep there."""
    stranger = make_cluster_certs(tmp_path / "stranger")[0].parent
    with wifi_link().WifiLink() as link:
        station = link.address("station")
        scheduler = f"tls://{station}:8786"
        dask = [sys.executable, "-m", "dask"]
        quiet = {"cwd": tempfile.gettempdir(), "env": ENV, "stdout": subprocess.DEVNULL,
                 "stderr": subprocess.DEVNULL}  # fmt: skip
        http = ("--no-dashboard", "--dashboard-address", "127.0.0.1:0")
        link.popen(
            "station",
            [
                *dask,
                "scheduler",
                *("--protocol", "tls", "--host", station, "--port", "8786"),
                *http,
                *tls_options(certs, "scheduler"),
            ],
            **quiet,
        )
        link.popen(
            "station",
            [
                *dask,
                "worker",
                scheduler,
                *("--host", station, "--nthreads", "1", "--no-nanny"),
                *http,
                *tls_options(certs, "worker"),
            ],
            **quiet,
        )
        member = link.popen(
            "robot",
            [sys.executable, "-c", MEMBER, scheduler, str(certs)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=tempfile.gettempdir(),
            env=ENV,
        )
        out, _ = member.communicate(timeout=180)
        assert member.returncode == 0
        (worker,) = json.loads(out)
        assert worker.startswith(f"tls://{station}:")
        # nothing listens on every interface: the station's address, or loopback
        bound = listeners(link.namespaces["station"])
        assert bound and all(a.startswith((f"{station}:", "127.0.0.1:")) for a in bound), bound

        probe = link.popen(
            "robot",
            [sys.executable, "-c", STRANGER, scheduler, worker, str(stranger), str(certs)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=tempfile.gettempdir(),
            env=ENV,
        )
        out, _ = probe.communicate(timeout=180)
        assert probe.returncode == 0
        outcome: dict[str, str] = json.loads(out)
        assert outcome.pop("worker, the cluster's certificate").startswith("answered "), outcome
        assert len(outcome) == 5 and all(v.startswith("refused: ") for v in outcome.values()), (
            outcome
        )

        sweep = link.popen(
            "robot",
            snake_command(
                *TINY,
                "--scheduler",
                scheduler,
                *tls_options(certs),
                "--quiet",
                "-o",
                str(tmp_path / "sweep"),
            ),
            cwd=ROOT,
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _, err = sweep.communicate(timeout=300)
        assert sweep.returncode == 0, err
    assert len(records(tmp_path / "sweep")) == 2


def test_snake_cluster_certs_writes_the_set_and_says_who_gets_what(tmp_path: Path) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["cluster-certs", str(tmp_path / "c")]) == 0
    text = out.getvalue()
    assert text.startswith(f"wrote 7 files to {tmp_path / 'c'}/ (ca.pem, scheduler.pem, ")
    assert "  the workers: ca.pem worker.pem worker-key.pem" in text
    assert not any("ca-key" in p.name for p in (tmp_path / "c").iterdir())
    assert os.access(tmp_path / "c" / "client-key.pem", os.R_OK)
