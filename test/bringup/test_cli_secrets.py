"""``snake hardware``, ``snake emulate`` and ``snake identify`` keep the link key off the
command line and the robot's side off an open ROS domain: a key given as ``--key`` is
refused in one line, a key file open to other users too (naming chmod 600), the driver gets
the key file's path and never the key, and ``--role robot`` on a domain open to other hosts
stops before anything starts unless ``--allow-open-domain``. The graph is taken where the
command hands it to the runner; nothing is started."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from snake_bringup.cli import hardware, main
from snake_driver.keyfile import write_key_file

KEY_HEX = "0badc0de0badc0de0badc0de0badc0de"


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, dict[str, Any]]]:
    """The graphs ``snake hardware`` hands to the runner (started: none)."""
    taken: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr(hardware, "run_graph", lambda graph, **kw: taken.append((graph, kw)) or 0)
    return taken


def driver_parameters(graph: Any) -> dict[str, Any]:
    (driver,) = [s for s in graph if s.executable == "driver_node"]
    return {k: v for p in driver.parameters if isinstance(p, dict) for k, v in p.items()}


@pytest.mark.parametrize("command", ["hardware", "emulate", "identify"])
def test_a_key_on_the_command_line_is_refused_in_one_line(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--key", KEY_HEX]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("snake: error: --key: a key on the command line")
    assert "--key-file" in err[0] and "chmod 600" in err[0] and KEY_HEX not in err[0]


def test_a_key_file_open_to_others_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runs: list[Any]
) -> None:
    key_file = write_key_file(tmp_path / "key", bytes.fromhex(KEY_HEX))
    key_file.chmod(0o640)
    assert main(["hardware", "--key-file", str(key_file), "--no-rviz", "-o", str(tmp_path)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"snake: error: --key-file: key file {key_file} is open to other users (mode 0640): "
        f"chmod 600 {key_file}"
    ]
    assert runs == []


def test_the_driver_gets_the_key_files_path_never_the_key(
    tmp_path: Path, runs: list[tuple[Any, dict[str, Any]]]
) -> None:
    key_file = write_key_file(tmp_path / "key", bytes.fromhex(KEY_HEX))
    assert main(["hardware", "--key-file", str(key_file), "--no-rviz", "-o", str(tmp_path)]) == 0
    ((graph, _),) = runs
    params = driver_parameters(graph)
    assert params["auth_key_file"] == str(key_file.resolve())
    assert "auth_key" not in params and KEY_HEX not in repr(graph)


def test_the_robot_role_refuses_an_open_domain_unless_allowed(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    runs: list[tuple[Any, dict[str, Any]]],
) -> None:
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "SUBNET")
    robot = ["hardware", "--role", "robot", "-o", str(tmp_path)]
    assert main(robot) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and runs == []
    assert err[0].startswith(
        "snake: error: refusing to start the robot's driver on a ROS domain open to other "
        "hosts (ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET)"
    )
    assert "--allow-open-domain" in err[0]
    assert main([*robot, "--allow-open-domain"]) == 0
    ((graph, _),) = runs
    assert driver_parameters(graph)["allow_open_domain"] is True
    # the station drives no robot: it starts on an open domain as it did
    assert main(["hardware", "--role", "station", "--no-rviz", "-o", str(tmp_path)]) == 0


def test_a_local_run_keeps_discovery_on_this_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runs: list[Any]
) -> None:
    """``--role both`` with nothing set about discovery: the whole graph runs on this host,
    so its nodes (which inherit this environment) discover nothing beyond it."""
    for name in ("ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_STATIC_PEERS", "ROS_LOCALHOST_ONLY"):
        monkeypatch.delenv(name, raising=False)
    assert main(["hardware", "--no-rviz", "-o", str(tmp_path)]) == 0
    assert os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    assert "allow_open_domain" not in driver_parameters(runs[0][0])
