"""A Dask cluster that strangers cannot use: mutual TLS between the scheduler, its workers and
the client (``snake sweep`` / ``snake optimize --scheduler tls://...``), each holding a
certificate of the cluster's own small CA.

A Dask scheduler or worker runs any code a connected client sends it, as the user it runs
as. Over ``tcp://`` anyone who reaches its port is such a client; over ``tls://`` with
these certificates only a holder of a certificate of this CA is (Dask requires and checks
the peer's certificate against the CA on every connection, in both directions, and does not
check host names: the CA is the cluster's alone). docs/safety.md, "The Dask cluster".

:func:`make_cluster_certs` writes the CA's certificate and a certificate and key for each
role (``snake cluster-certs DIR``); the CA's key is never written, so nobody can sign more.
:func:`cluster_security` turns the ``--tls-*`` options into a
``distributed.security.Security``.
"""

from __future__ import annotations

import datetime
import os
import ssl
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import UsageError

if TYPE_CHECKING:
    from distributed.security import Security

#: The CA's certificate (every host of the cluster needs it).
CA_FILE = "ca.pem"
#: Who holds a certificate: the scheduler, the workers (one shared by all), the client.
ROLES = ("scheduler", "worker", "client")
#: Default validity of the certificates [days].
DEFAULT_DAYS = 365
#: The ``--tls-*`` options by :class:`TlsFiles` field, as ``dask scheduler/worker`` name them.
OPTIONS = {"ca_file": "--tls-ca-file", "cert": "--tls-cert", "key": "--tls-key"}


def cert_file(role: str) -> str:
    """The certificate's file name of ``role`` (e.g. ``worker.pem``)."""
    return f"{role}.pem"


def key_file(role: str) -> str:
    """The private key's file name of ``role`` (e.g. ``worker-key.pem``, mode 0600)."""
    return f"{role}-key.pem"


@dataclass(frozen=True)
class TlsFiles:
    """The client's TLS files (``--tls-ca-file``, ``--tls-cert``, ``--tls-key``); None where
    not given."""

    ca_file: Path | None = None
    cert: Path | None = None
    key: Path | None = None

    def given(self) -> list[str]:
        """The options given, as their command-line names."""
        return [option for name, option in OPTIONS.items() if getattr(self, name) is not None]


#: No TLS files given (a local cluster, or a ``tcp://`` scheduler).
NO_TLS = TlsFiles()


def scheme(address: str) -> str:
    """The protocol of a Dask address: ``tls`` of ``tls://host:8786``; ``tcp`` without one
    (Dask's default)."""
    return address.split("://", 1)[0].lower() if "://" in address else "tcp"


def cluster_security(scheduler: str | None, tls: TlsFiles) -> Security | None:
    """The client's ``Security`` for ``scheduler``: mutual TLS with encryption required for
    a ``tls://`` address, None for a local cluster or a ``tcp://`` one.

    The key must be readable by its owner alone, and the three files must make a TLS context
    (loaded here, so a wrong file is named before any connection is tried).

    Raises:
        UsageError: TLS files without a ``tls://`` scheduler, a ``tls://`` scheduler
            without all three (naming the missing options), a missing file, a key others can
            read, or files that are not a certificate and key of one pair (one line each).
    """
    given = tls.given()
    if scheduler is None or scheme(scheduler) != "tls":
        if given:
            where = "a local cluster" if scheduler is None else f"--scheduler {scheduler}"
            raise UsageError(
                f"{', '.join(given)} given for {where}: TLS needs --scheduler tls://HOST:PORT"
            )
        return None
    missing = [option for option in OPTIONS.values() if option not in given]
    if missing:
        raise UsageError(
            f"--scheduler {scheduler} is TLS: give {', '.join(missing)} (the cluster's CA, this "
            "client's certificate and key; `snake cluster-certs DIR` makes them)"
        )
    assert tls.ca_file is not None and tls.cert is not None and tls.key is not None
    for name, option in OPTIONS.items():
        path = getattr(tls, name)
        if not path.is_file():
            raise UsageError(f"{option} {path}: no such file")
    mode = stat.S_IMODE(tls.key.stat().st_mode)
    if mode & 0o077:
        raise UsageError(
            f"--tls-key {tls.key} is readable by others (mode {mode:04o}): chmod 600 {tls.key}"
        )
    from distributed.security import Security

    security = Security(  # type: ignore[no-untyped-call]
        tls_ca_file=str(tls.ca_file),
        tls_client_cert=str(tls.cert),
        tls_client_key=str(tls.key),
        require_encryption=True,
    )
    try:
        security.get_connection_args("client")  # type: ignore[no-untyped-call]
    except (ssl.SSLError, ValueError) as exc:
        raise UsageError(
            f"--tls-ca-file {tls.ca_file}, --tls-cert {tls.cert}, --tls-key {tls.key}: not a "
            f"CA, certificate and key that go together ({exc})"
        ) from None
    return security


def make_cluster_certs(folder: Path, days: int = DEFAULT_DAYS) -> list[Path]:
    """Write a new CA's certificate and, signed by it, a certificate and key (ECDSA P-256)
    for each of :data:`ROLES` into ``folder`` (made 0700 if new); keys 0600, certificates
    0644. The CA's key is dropped. Valid from a day ago (hosts' clocks differ) for ``days``.

    Returns:
        The files written: the CA's certificate, then each role's certificate and key.

    Raises:
        UsageError: ``days`` < 1, or a file of the set already in ``folder`` (never
            overwritten).
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    if days < 1:
        raise UsageError(f"--days must be >= 1, got {days}")
    names = [CA_FILE, *(f for role in ROLES for f in (cert_file(role), key_file(role)))]
    taken = [name for name in names if (folder / name).exists()]
    if taken:
        raise UsageError(
            f"{folder / taken[0]} exists: give a new folder (a cluster's files are never "
            "overwritten)"
        )
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(days=1), now + datetime.timedelta(days=days)

    def name(common: str) -> x509.Name:
        return x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "mfm_snake Dask cluster"),
                x509.NameAttribute(NameOID.COMMON_NAME, common),
            ]
        )

    def usage(ca: bool) -> x509.KeyUsage:
        return x509.KeyUsage(
            digital_signature=not ca,
            content_commitment=False,
            key_encipherment=False,
            data_encipherment=False,
            key_agreement=False,
            key_cert_sign=ca,
            crl_sign=ca,
            encipher_only=False,
            decipher_only=False,
        )

    server, client = ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name(f"mfm_snake Dask CA {now:%Y-%m-%d %H:%M:%S}")
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(usage(ca=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    written = [_write(folder / CA_FILE, ca_cert.public_bytes(pem), 0o644)]
    for role in ROLES:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(name(f"mfm_snake Dask {role}"))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(usage(ca=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([server, client]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
            )
            .sign(ca_key, hashes.SHA256())
        )
        key_bytes = key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        written.append(_write(folder / cert_file(role), cert.public_bytes(pem), 0o644))
        written.append(_write(folder / key_file(role), key_bytes, 0o600))
    return written


def _write(path: Path, data: bytes, mode: int) -> Path:
    """A new file of ``mode`` (set at creation, never wider), ``data`` in it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, mode)  # a umask could have narrowed a certificate's 0644
    return path
