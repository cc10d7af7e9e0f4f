"""``--gaits FILE``: gait_node parameter files read without ROS (snake_bringup.gaits_file),
and ``snake sim``, ``snake hardware`` and ``snake demo`` playing one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml

from snake_bringup import gaits_file
from snake_bringup.cli import demo, hardware, main, sim
from snake_bringup.demo import DemoRun
from snake_bringup.gaits_file import GaitsFileError, read_gait_overrides, read_gaits_file
from snake_bringup.graph import NodeSpec, config_file
from snake_bringup.optimization import BEST_FILE, write_results
from snake_dynamics.floating import Locomotion
from snake_dynamics.gaits import GAITS, gait_parameters

#: A gait in the servos' reach, as ``snake optimize`` finds one (sidewinding at 0.4 Hz).
BEST = {"amplitude": 0.6, "frequency": 0.4, "phase_lag": 0.9, "pitch_amplitude": 0.25}
#: One the servos of config/robot.yaml cannot follow: joint_2 would turn at 18.85 rad/s,
#: beyond the 7.48 rad/s of its servo (config/gaits.yaml's serpenoid asks 1.57 rad/s).
TOO_FAST = {"amplitude": 1.5, "frequency": 2.0}


def gaits_yaml(path: Path, params: dict[str, Any], node: str = "/**") -> Path:
    """Write ``params`` as the ``ros__parameters`` of ``node`` in ``path``."""
    path.write_text(yaml.safe_dump({node: {"ros__parameters": params}}))
    return path


def optimize_file(folder: Path) -> Path:
    """The very file ``snake optimize`` writes, from a study whose best trial is :data:`BEST`
    (its other parameters: the gait's defaults)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize")
    dists = {
        k: optuna.distributions.FloatDistribution(0.0, 1.5) for k in ("amplitude", "phase_lag")
    }
    travel = dict.fromkeys(Locomotion._fields, 0.0) | {"mean_speed": 0.08}
    study.add_trial(
        optuna.trial.create_trial(
            params={k: BEST[k] for k in dists},
            distributions=dists,
            value=0.08,
            user_attrs={"travel": travel, "saturated_share": 0.0},
        )
    )
    defaults = {k: spec[0] for k, spec in gait_parameters("sidewinding").items()}
    defaults |= {"frequency": BEST["frequency"], "pitch_amplitude": BEST["pitch_amplitude"]}
    write_results(study, folder, "sidewinding", defaults, "speed", plots=False)
    return folder / BEST_FILE


def test_the_file_snake_optimize_writes_round_trips(tmp_path: Path) -> None:
    """What ``snake optimize`` writes reads back as its gait and every parameter of it, the
    numbers unchanged (the writer's floats through YAML)."""
    read = read_gait_overrides(optimize_file(tmp_path))
    assert read.gait == "sidewinding" and read.settings == {}
    assert read.parameters == {"sidewinding": BEST}


def test_config_gaits_yaml_reads_with_its_node_settings() -> None:
    """config/gaits.yaml, the schema itself: every gait's section, and gait_node's other
    parameters kept as settings (and refused as ``--gaits``, naming the first one)."""
    read = read_gaits_file(config_file("gaits.yaml"))
    assert read.gait == "serpenoid" and set(read.parameters) == set(GAITS)
    assert read.parameters["serpenoid"]["amplitude"] == 0.5
    assert set(read.settings) == set(gaits_file.NODE_SETTINGS)
    with pytest.raises(GaitsFileError, match=r"gaits.yaml: publish_rate: .*config/gaits.yaml$"):
        read_gait_overrides(config_file("gaits.yaml"))


@pytest.mark.parametrize("node", ["/**", "gait_node", "/sim/gait_node"])
def test_a_node_key_of_gait_node_is_read(tmp_path: Path, node: str) -> None:
    path = gaits_yaml(tmp_path / "g.yaml", {"spiral": {"twist": 1}}, node)
    assert read_gaits_file(path).parameters == {"spiral": {"twist": 1.0}}
    assert read_gaits_file(path).gait is None


BAD = "/**:\n  ros__parameters:\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "cannot read it: No such file or directory"),
        ("/**: [unclosed\n", "not YAML (line 2)"),
        ("", "expected gait_node's parameters (/**: ros__parameters: ...), got NoneType"),
        ("/**: {}\ngait_node: {}\n", "expected gait_node's parameters (/**: ros__parameters:"),
        ("dynamics_node:\n  ros__parameters: {}\n", "dynamics_node: not gait_node;"),
        ("/**:\n  parameters: {}\n", "/**: expected gait_node's parameters"),
        ("/**:\n  ros__parameters: [1]\n", "/**: ros__parameters: expected a mapping"),
        (BAD + "    gait: slither\n", "gait: unknown gait 'slither'; choose one of"),
        (BAD + "    slither: {amplitude: 1}\n", "slither: no gait_node parameter; it takes"),
        (BAD + "    serpenoid: 0.5\n", "serpenoid: expected a mapping of the gait's parameters"),
        (BAD + "    serpenoid: {wiggle: 1}\n", "serpenoid.wiggle: unknown parameter;"),
        (BAD + "    serpenoid: {amplitude: big}\n", "serpenoid.amplitude: expected a number"),
        (BAD + "    serpenoid: {amplitude: true}\n", "serpenoid.amplitude: expected a number"),
        (BAD + "    serpenoid: {amplitude: 9}\n", "serpenoid.amplitude: must be in [0, 1.5]"),
        (BAD + "    serpenoid: {amplitude: .nan}\n", "serpenoid.amplitude: must be in [0, 1.5]"),
        (BAD + "    cobra: {head_joints: 1.5}\n", "cobra.head_joints: must be a whole number"),
        (BAD + "    ramp_time: 1.0\n", "ramp_time: --gaits sets the gait and its parameters only"),
    ],
)
def test_a_bad_gaits_file_is_one_line_naming_file_and_key(
    tmp_path: Path, text: str | None, message: str
) -> None:
    path = tmp_path / "gaits.yaml"
    if text is not None:
        path.write_text(text)
    with pytest.raises(GaitsFileError) as error:
        read_gait_overrides(path)
    assert str(error.value).startswith(f"{path}: ") and "\n" not in str(error.value)
    assert message in str(error.value)


@pytest.mark.parametrize(
    "command", [["sim"], ["hardware", "--dry-run"], ["demo"], ["demo", "--tour"]]
)
def test_a_bad_gaits_option_is_one_line_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """In this process, as the console script: exit status 1 (a file the user can fix; 2 is
    for what argparse refuses), the one line and nothing else (no traceback), before the run
    writes anything (no output folder)."""
    path = gaits_yaml(tmp_path / "g.yaml", {"serpenoid": {"amplitude": 9}})
    status = main([*command, "--gaits", str(path), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 1
    assert err == (f"snake: error: {path}: serpenoid.amplitude: must be in [0, 1.5] rad, got 9\n")
    assert not (tmp_path / "out").exists()


def test_sim_dry_run_shows_gait_node_with_the_files_gait_and_parameters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``snake sim --gaits FILE --dry-run``: the file's gait and parameters on the line about
    gait_node, and in gait_node's own parameters, over config/gaits.yaml."""
    path = optimize_file(tmp_path)
    assert main(["sim", "--gaits", str(path), "--dry-run", "-o", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    pairs = " ".join(f"sidewinding.{k}={v:g}" for k, v in BEST.items())
    assert f"# gait_node, with {path}: gait=sidewinding {pairs}\n" in out
    assert "gait_node --ros-args" in out


def graph_of(module: Any, monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> tuple[NodeSpec, ...]:
    """The graph ``snake <argv>`` hands to the runner (nothing started)."""
    graphs: list[tuple[NodeSpec, ...]] = []
    monkeypatch.setattr(module, "run_graph", lambda graph, **kw: graphs.append(graph) or 0)
    assert main(argv) == 0
    (graph,) = graphs
    return graph


def gait_node_parameters(graph: tuple[NodeSpec, ...]) -> dict[str, Any]:
    """gait_node's parameters over config/gaits.yaml (its first, a file): the later dicts."""
    (spec,) = [s for s in graph if s.executable == "gait_node"]
    assert spec.parameters[0] == config_file("gaits.yaml")
    merged: dict[str, Any] = {}
    for params in spec.parameters[1:]:
        assert isinstance(params, dict)
        merged |= params
    return merged


@pytest.mark.parametrize(
    ("module", "argv"),
    [
        (sim, ["sim"]),
        (hardware, ["hardware", "--dynamics"]),
        (hardware, ["hardware", "--emulate", "--dry-run"]),
    ],
)
def test_the_files_gait_reaches_gait_node_and_gait_overrides_its_gait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: Any, argv: list[str]
) -> None:
    """``--gaits FILE`` plays the file's gait with its parameters (config/gaits.yaml's for
    those it leaves out); ``--gait`` picks another gait, the file's sections still set."""
    path = gaits_yaml(tmp_path / "g.yaml", {"gait": "cobra", "cobra": {"head_lift": 0.3}})
    base = [*argv, "--no-rviz", "--gaits", str(path), "-o", str(tmp_path / "o")]
    params = gait_node_parameters(graph_of(module, monkeypatch, base))
    assert params["gait"] == "cobra" and params["cobra.head_lift"] == 0.3
    assert "cobra.head_joints" not in params  # left to config/gaits.yaml
    params = gait_node_parameters(graph_of(module, monkeypatch, [*base, "--gait", "spiral"]))
    assert params["gait"] == "spiral" and params["cobra.head_lift"] == 0.3


def test_the_demo_plays_the_files_gait_over_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``snake demo --gaits FILE``: ``--gait``, else the file's gait, else the demo's
    serpenoid; the file's parameters over the demo's (0.8 rad at 0.6 Hz), the demo's kept
    where the file says nothing (the runs themselves not started)."""
    runs: list[dict[str, Any]] = []
    monkeypatch.setattr(demo, "demo_once", lambda **kw: runs.append(kw) or DemoRun(0))
    plain = gaits_yaml(tmp_path / "a.yaml", {"serpenoid": {"amplitude": 0.3}})
    own = gaits_yaml(
        tmp_path / "b.yaml", {"gait": "sidewinding", "sidewinding": {"frequency": 0.3}}
    )
    for args in ([plain], [own], [own, "--gait", "spiral"]):
        assert main(["demo", "--gaits", *map(str, args)]) == 0
    assert runs[0]["gait"] == "serpenoid" and runs[0]["gait_parameters"] == {
        "serpenoid": {"amplitude": 0.3, "frequency": 0.6},
    }
    assert runs[1]["gait"] == "sidewinding"
    assert runs[1]["gait_parameters"] == {
        "serpenoid": {"amplitude": 0.8, "frequency": 0.6},
        "sidewinding": {"frequency": 0.3},
    }
    assert runs[2]["gait"] == "spiral"


@pytest.mark.parametrize("command", [["hardware", "--dry-run", "--no-rviz"], ["demo"]])
def test_the_files_parameters_reach_the_feasibility_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """A serpenoid the servos cannot follow is refused before the run (config/gaits.yaml's
    serpenoid, the same gait, passes: the check sees the file's amplitude and frequency)."""
    robot = ["--robot", "robot"]
    fast = gaits_yaml(tmp_path / "fast.yaml", {"gait": "serpenoid", "serpenoid": TOO_FAST})
    assert main([*command, *robot, "--gaits", str(fast), "-o", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("snake: error: the servos of robot.yaml cannot follow it: ")
    assert "joint_2 would turn at 18.85 rad/s" in err
    if command[0] == "hardware":  # the same gait with config/gaits.yaml's parameters
        assert main([*command, *robot, "--gait", "serpenoid", "-o", str(tmp_path / "o")]) == 0
