"""The MCU link key kept secret (docs/safety.md, "The MCU link key").

The key is never a ROS parameter (``ros2 param get`` reads it from any host of the domain)
nor a command-line argument (``ps`` shows it to every user of the machine). It comes from a
file only its owner can read (``chmod 600``), or from the environment, which only the owner
of a process can read (``/proc/<pid>/environ``):

1. the file named by the caller (driver_node's ``auth_key_file``, ``snake hardware
   --key-file``), else
2. the file named by ``$SNAKE_AUTH_KEY_FILE``, else
3. the 32 hex digits of ``$SNAKE_AUTH_KEY``, else
4. no key: plain mode, which :func:`plain_mode_risk` warns about over a network transport.

A path is not the secret: it may be a parameter or an argument.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from .protocol import AuthKeyError, parse_key

#: The environment variable naming the key file.
KEY_FILE_ENV = "SNAKE_AUTH_KEY_FILE"
#: The environment variable holding the key itself (32 hex digits).
KEY_ENV = "SNAKE_AUTH_KEY"
#: The transports whose frames cross a network (anyone on the path can inject them).
NETWORK_TRANSPORTS = ("udp", "tcp")


class KeyFileError(AuthKeyError):
    """A key file that cannot be read, holds no key, or is open to other users."""


def read_key_file(path: str | os.PathLike[str]) -> bytes:
    """The key in ``path`` (32 hex digits; surrounding whitespace ignored).

    Raises:
        KeyFileError: the file cannot be read, is readable or writable by its group or
            others (the message names the fix, ``chmod 600``), or holds no 128-bit key.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise KeyFileError(f"key file {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        mode = stat.S_IMODE(os.fstat(f.fileno()).st_mode)
        if mode & 0o077:
            raise KeyFileError(
                f"key file {path} is open to other users (mode {mode:04o}): chmod 600 {path}"
            )
        raw = f.read(256)
    try:
        key = parse_key(raw.decode("ascii", errors="replace"))
    except AuthKeyError as exc:
        raise KeyFileError(f"key file {path}: {exc}") from None
    if key is None:
        raise KeyFileError(f"key file {path} is empty: write the key's 32 hex digits in it")
    return key


def write_key_file(path: str | os.PathLike[str], key: bytes) -> Path:
    """Write ``key`` as 32 hex digits to ``path``, readable by its owner alone (0600 from
    its creation, no moment when others could open it); returns the path."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)  # an existing file keeps its mode through O_CREAT
        f.write(key.hex() + "\n")
    return Path(path)


def load_key(
    key_file: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> bytes | None:
    """The link key: from ``key_file``, else ``$SNAKE_AUTH_KEY_FILE``, else
    ``$SNAKE_AUTH_KEY``; None (plain mode) without any of them.

    Raises:
        KeyFileError: the file is not a private key file (:func:`read_key_file`).
        AuthKeyError: ``$SNAKE_AUTH_KEY`` is not 32 hex digits.
    """
    env = os.environ if environ is None else environ
    path = str(key_file or "") or env.get(KEY_FILE_ENV, "")
    if path:
        return read_key_file(path)
    try:
        return parse_key(env.get(KEY_ENV, ""))
    except AuthKeyError as exc:
        raise AuthKeyError(f"${KEY_ENV}: {exc}") from None


def plain_mode_risk(transport: str, host: str, port: str) -> str | None:
    """What plain (unkeyed) mode over ``transport`` exposes, in one line with the fix; None
    for a serial cable, which no one else can reach."""
    if transport not in NETWORK_TRANSPORTS:
        return None
    return (
        f"plain mode over {transport} to {host}:{port}: anyone who can reach that address "
        "can command and enable the servos and forge the robot's telemetry; give the driver "
        f"a key (auth_key_file, ${KEY_FILE_ENV}, snake hardware --key-file) and flash the "
        "firmware built with it (make -C firmware AUTH_KEY_FILE=...), docs/safety.md"
    )
