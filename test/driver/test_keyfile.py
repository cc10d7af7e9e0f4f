"""The MCU link key as a secret (snake_driver.keyfile): read only from a file its owner alone
can open, or from the environment; a file open to others is refused in one line that names
the file and the fix; plain mode over a network transport is named as a risk. The reference
is the file's mode as the kernel reports it (os.stat)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from snake_driver.keyfile import (
    KEY_ENV,
    KEY_FILE_ENV,
    KeyFileError,
    load_key,
    plain_mode_risk,
    read_key_file,
    write_key_file,
)
from snake_driver.protocol import AuthKeyError

KEY = bytes.fromhex("5a0e3c1f77d2a9b46e8801c3f0b2d4e6")
OTHER = bytes.fromhex("000102030405060708090a0b0c0d0e0f")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_written_key_file_is_the_owners_alone_and_reads_back(tmp_path: Path) -> None:
    path = write_key_file(tmp_path / "key", KEY)
    assert mode(path) == 0o600
    assert read_key_file(path) == KEY
    path.chmod(0o644)  # rewriting a file that others could read makes it private again
    write_key_file(path, OTHER)
    assert mode(path) == 0o600 and read_key_file(path) == OTHER


@pytest.mark.parametrize("bits", [0o640, 0o604, 0o620, 0o602, 0o644])
def test_a_key_file_open_to_others_is_refused_naming_the_fix(tmp_path: Path, bits: int) -> None:
    path = write_key_file(tmp_path / "key", KEY)
    path.chmod(bits)
    with pytest.raises(KeyFileError) as caught:
        read_key_file(path)
    assert str(caught.value) == (
        f"key file {path} is open to other users (mode {bits:04o}): chmod 600 {path}"
    )
    assert KEY.hex() not in str(caught.value)


def test_a_key_file_without_a_key_is_one_line(tmp_path: Path) -> None:
    path = write_key_file(tmp_path / "key", b"")
    with pytest.raises(KeyFileError, match="is empty: write the key's 32 hex digits"):
        read_key_file(path)
    path.write_text("0123\n")
    with pytest.raises(KeyFileError, match="must be 32 hex digits"):
        read_key_file(path)
    with pytest.raises(KeyFileError, match="No such file"):
        read_key_file(tmp_path / "missing")


def test_the_key_comes_from_the_file_then_the_environment(tmp_path: Path) -> None:
    named = write_key_file(tmp_path / "named", KEY)
    from_env = write_key_file(tmp_path / "env", OTHER)
    both = {KEY_FILE_ENV: str(from_env), KEY_ENV: KEY.hex()}
    assert load_key(named, both) == KEY  # the named file first
    assert load_key(None, both) == OTHER  # then $SNAKE_AUTH_KEY_FILE
    assert load_key("", {KEY_ENV: KEY.hex()}) == KEY  # then $SNAKE_AUTH_KEY
    assert load_key(None, {}) is None  # plain mode
    with pytest.raises(AuthKeyError, match=f"^\\${KEY_ENV}: the key must be 32 hex digits"):
        load_key(None, {KEY_ENV: "0123"})


def test_plain_mode_is_a_risk_over_the_network_only() -> None:
    assert plain_mode_risk("serial", "127.0.0.1", "/dev/ttyACM0") is None
    for transport in ("udp", "tcp"):
        risk = plain_mode_risk(transport, "192.168.4.1", "8888")
        assert risk is not None and "\n" not in risk
        assert risk.startswith(f"plain mode over {transport} to 192.168.4.1:8888: anyone")
        assert "auth_key_file" in risk and "AUTH_KEY_FILE" in risk
