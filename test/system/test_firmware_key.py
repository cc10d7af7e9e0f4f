"""The keyed firmware image and the emulated MCU's EEPROM are their owner's alone, and the
key reaches the build through a private file only. The reference is the kernel's file mode
(os.stat) of what the real Makefile and simavr_runner wrote, and make's own refusal."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from snake_bringup.emulator import build_firmware, firmware_build_dir, firmware_dir
from snake_driver.keyfile import write_key_file
from system.test_firmware import build_avr

pytestmark = pytest.mark.simavr

KEY = bytes.fromhex("7e57ab1e7e57ab1e7e57ab1e7e57ab1e")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def make(*args: str) -> subprocess.CompletedProcess[str]:
    fw = firmware_dir()
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(fw), f"BUILD={firmware_build_dir(fw)}", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_keyed_image_and_its_header_are_private(tmp_path: Path) -> None:
    build_avr()  # skips without the AVR toolchain
    elf, runner = build_firmware(KEY.hex())
    assert "snake_fw_auth_" in elf.name and mode(elf) == 0o600
    assert KEY in elf.read_bytes()  # the image does hold the key
    (header,) = (elf.parent if "baud" not in elf.parent.name else elf.parent.parent).glob(
        f"key_{elf.stem.rsplit('_', 1)[1]}/auth_key.h"
    )
    assert mode(header) == 0o600 and mode(header.parent) == 0o700

    # the emulated MCU's EEPROM (its boot counter) is written 0600 too
    eeprom = tmp_path / "eeprom.bin"
    done = subprocess.run(
        [str(runner), "--eeprom", str(eeprom), "--seconds", "0.2", str(elf)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert eeprom.is_file() and mode(eeprom) == 0o600


def test_make_takes_the_key_from_a_private_file_only(tmp_path: Path) -> None:
    on_line = make("avr", f"AUTH_KEY={KEY.hex()}")
    assert on_line.returncode != 0
    assert "AUTH_KEY= puts the key on the command line" in on_line.stderr
    assert "AUTH_KEY_FILE=<file>" in on_line.stderr
    key_file = write_key_file(tmp_path / "key", KEY)
    key_file.chmod(0o644)
    opened = make("avr", f"AUTH_KEY_FILE={key_file}")
    assert opened.returncode != 0
    assert f"key file {key_file} is open to other users: chmod 600 {key_file}" in opened.stderr
