"""The setup script's Debian package check, against a stand-in `apt-cache` (no network, no root)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# A stand-in for `apt-cache policy`: each known package's block starts with its candidate and
# then lists ~100 kB of versions, far more than a pipe buffer (64 kB), so a reader that stops
# at the first "Candidate:" line would kill the writer with SIGPIPE.
FAKE_APT_CACHE = r"""#!/usr/bin/env bash
[[ $1 == policy ]] || exit 64
shift
for p in "$@"; do
  case $p in
    gcc-avr|chromium|simavr) cand="1:5.4.0-3" ;;
    ghost) cand="(none)" ;;
    *) echo "N: Unable to locate package $p" >&2; continue ;;
  esac
  printf '%s:\n  Installed: (none)\n  Candidate: %s\n  Version table:\n' "$p" "$cand"
  for ((i = 0; i < 2000; i++)); do
    printf '     1.%d-1 500\n        500 http://deb.example bookworm/main amd64\n' "$i"
  done
done
"""


@pytest.fixture
def fake_apt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "apt-cache"
    script.write_text(FAKE_APT_CACHE)
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path('/usr/bin')}:{Path('/bin')}")
    return bin_dir


def test_the_package_check_reads_long_policy_output_under_pipefail(fake_apt: Path) -> None:
    out = subprocess.run(
        [
            "bash",
            "-o",
            "pipefail",
            "-c",
            'tools/apt-available.sh "$@"',
            "apt-available",
            "gcc-avr",
            "ghost",
            "no-such-package",
            "chromium",
            "simavr",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert out.stdout.split() == ["gcc-avr", "chromium", "simavr"]
    assert out.stderr == ""


def test_the_package_check_with_nothing_to_check(fake_apt: Path) -> None:
    out = subprocess.run(
        ["tools/apt-available.sh"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout == ""


def test_each_claim_of_a_ros_domain_gets_one_no_other_holder_has(ros_domain: int) -> None:
    """support.ros_domains' locks: ids held (by this module, or by another test process) are
    never handed out again until released."""
    from support.ros_domains import ROS_DOMAINS, claim_ros_domain

    claims = [claim_ros_domain() for _ in range(5)]
    try:
        domains = [d for d, _ in claims]
        assert len(set(domains)) == 5 and ros_domain not in domains
        assert all(d in ROS_DOMAINS for d in domains)
        assert os.environ["ROS_DOMAIN_ID"] == str(ros_domain)
        assert os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    finally:
        for _, fd in claims:
            os.close(fd)
