"""``snake cluster-certs DIR``: a new CA and the TLS certificates and keys of a Dask cluster's
scheduler, workers and client (snake_bringup.cluster_tls), for ``dask scheduler``/``dask
worker --tls-ca-file --tls-cert --tls-key`` and ``snake sweep``/``snake optimize
--scheduler tls://...`` with the same options (docs/cli.md, docs/safety.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..cluster_tls import CA_FILE, DEFAULT_DAYS, ROLES, cert_file, key_file, make_cluster_certs

if TYPE_CHECKING:
    from .options import Subparsers


def register(sub: Subparsers) -> None:
    """Add ``snake cluster-certs DIR [--days N]`` to the ``snake`` command."""
    p = sub.add_parser(
        "cluster-certs",
        help="a CA and TLS certificates for a Dask cluster (scheduler, workers, client)",
    )
    p.add_argument("folder", type=Path, metavar="DIR", help="a new folder for the files")
    p.add_argument(
        "--days",
        type=int,
        default=DEFAULT_DAYS,
        help=f"how long the certificates are valid (default: {DEFAULT_DAYS})",
    )
    p.set_defaults(run=lambda a: run(folder=a.folder, days=a.days))


def run(*, folder: Path, days: int) -> int:
    """Write the CA's certificate and each role's certificate and key to ``folder`` and say
    which host gets which."""
    files = make_cluster_certs(folder, days)
    print(f"wrote {len(files)} files to {folder}/ ({', '.join(p.name for p in files)}; keys 0600)")
    for role in ROLES:
        print(
            f"  the {role}{'s' if role == 'worker' else ''}: {CA_FILE} {cert_file(role)} "
            f"{key_file(role)}"
        )
    print("the CA's key is not kept: run again (a new folder) for a new set for every host")
    return 0
