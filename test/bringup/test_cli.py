"""The `snake` command: offline simulation output, one-line errors, the console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.cli import snake

from snake_bringup.cli import main
from snake_ros.paths import robot_config

ROOT = Path(__file__).resolve().parents[2]


#: Servo feedback that keeps a long replay on its gait (the hint of an open-loop failure).
SERVO = ("--servo-stiffness", "2", "--servo-damping", "0.05")


def simulate_quietly(out: Path, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``snake simulate args... --no-plots -q -o out``."""
    return snake("simulate", *args, "--no-plots", "-q", "-o", str(out), cwd=cwd)


def test_simulate_writes_data_plots_and_a_summary(tmp_path) -> None:
    out = tmp_path / "run"
    proc = snake(
        "simulate",
        "--robot",
        "config/robot.yaml",
        "--gait",
        "serpenoid",
        "--duration",
        "0.5",
        "-o",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    assert "tracking error commanded vs simulated" in proc.stdout
    assert "simulating 0.5 s: 100%" in proc.stderr  # progress, one line per 10% off a terminal
    names = {p.name for p in out.iterdir()}
    assert {
        "run.npz",
        "run.csv",
        "summary.json",
        "joint_angles.png",
        "torques.png",
        "energy.png",
    } <= names
    data = np.load(out / "run.npz")
    assert data["q"].shape == (501, 8) and data["t"][-1] == pytest.approx(0.5)
    commanded = np.load(out / "commanded_q.npy")
    assert np.max(np.abs(data["q"] - commanded)) < 1e-6  # the paper's loop closes
    summary = json.loads((out / "summary.json").read_text())
    assert summary["summary"]["steps"] == 500 and summary["config"]["gait"] == "serpenoid"
    header = (out / "run.csv").read_text().splitlines()[0].split(",")
    assert header[:2] == ["t", "q_joint_1"] and header[-1] == "energy"
    assert (out / "joint_angles.png").read_bytes()[:4] == b"\x89PNG"


def test_simulate_with_servo_and_gait_parameters(tmp_path) -> None:
    out = tmp_path / "run"
    proc = simulate_quietly(
        out, "--robot", "snake20", "--gait", "sidewinding", "--duration", "0.2",
        "--set", "amplitude=0.3", *SERVO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    config = json.loads((out / "summary.json").read_text())["config"]
    assert (
        config["gait_parameters"]["amplitude"] == 0.3
        and config["servo_stiffness_nm_per_rad"] == 2.0
    )
    assert not list(out.glob("*.png"))


def written_error(out: Path) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """|commanded - simulated| [rad] of the run written to ``out``, shape (N, n); t [s]; joints."""
    data = np.load(out / "run.npz")
    error = np.abs(data["q"] - np.load(out / "commanded_q.npy"))
    return error, data["t"], tuple(str(name) for name in data["joint_names"])


def first_over(out: Path, tolerance: float) -> tuple[float, str]:
    """Time [s] and joint of the first written sample over ``tolerance`` [rad]."""
    error, t, joints = written_error(out)
    first = int(np.flatnonzero((error > tolerance).any(axis=1))[0])
    return float(t[first]), joints[int(np.argmax(error[first]))]


def test_open_loop_replay_that_leaves_the_gait_writes_its_files_and_exits_3(tmp_path) -> None:
    # snake20's serpenoid replayed open loop: the error grows ~6 1/s from rounding and passes
    # 0.1 rad near t = 3.3 s (bench/open_loop.py); at 4 s it is radians.
    out = tmp_path / "run"
    proc = simulate_quietly(out, "--robot", "snake20", "--duration", "4")
    assert proc.returncode == 3, proc.stderr
    assert "tracking error commanded vs simulated" in proc.stdout and "wrote 4 files" in proc.stdout
    summary = json.loads((out / "summary.json").read_text())["summary"]
    error, _, _ = written_error(out)
    assert error.shape == (4001, 20) and error.max() > 1.0
    assert summary["max_tracking_error_rad"] == error.max() and not summary["within_tolerance"]
    t_over, joint = first_over(out, 0.05)  # the message agrees with the data written
    assert (summary["first_exceeded_s"], summary["first_exceeded_joint"]) == (t_over, joint)
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"snake: error: max tracking error {error.max():.3g} rad; ")
    assert f"over --tolerance 0.05 rad from t = {t_over:.4g} s, {joint} first" in line
    assert "add servo feedback (--servo-stiffness 2 --servo-damping 0.05)" in line
    assert "use a smaller --dt, or raise --tolerance" in line


def test_servo_feedback_keeps_snake20_on_the_gait(tmp_path) -> None:
    out = tmp_path / "run"
    proc = simulate_quietly(out, "--robot", "snake20", "--duration", "4", *SERVO)
    assert proc.returncode == 0, proc.stderr
    assert "error" not in proc.stderr
    error, t, _ = written_error(out)
    # the servo pulls rounding errors back: RK4 truncation, ~1e-9 rad, not growth
    assert t.size == 4001 and error.max() < 1e-6


def test_the_default_robot_tracks_the_serpenoid_open_loop_for_10_s(tmp_path) -> None:
    out = tmp_path / "run"
    proc = simulate_quietly(out, "--duration", "10", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "(tolerance 0.05 rad)" in proc.stdout
    error, t, _ = written_error(out)
    # RK4 truncation of an 8-joint replay: 1e-7 rad at dt = 1 ms (6e-9 at 0.5 ms, dt^4)
    assert t.size == 10001 and error.max() < 1e-6
    run = json.loads((out / "summary.json").read_text())
    assert run["summary"]["within_tolerance"] and run["summary"]["first_exceeded_s"] is None
    assert run["config"]["tolerance_rad"] == 0.05


@pytest.mark.parametrize(("tolerance", "status"), [("0.05", 0), ("0.001", 3)])
def test_the_tolerance_decides_the_exit_status(tmp_path, tolerance, status) -> None:
    # the 8-joint cobra replayed open loop drifts to 4.8e-3 rad in 10 s (bench/open_loop.py)
    out = tmp_path / "run"
    proc = simulate_quietly(out, "--gait", "cobra", "--tolerance", tolerance, cwd=tmp_path)
    assert proc.returncode == status, proc.stderr
    error, _, _ = written_error(out)
    assert 1e-3 < error.max() < 0.05
    assert ("over --tolerance 0.001 rad" in proc.stderr) == (status == 3)


def test_a_diverging_run_writes_its_finite_part_and_exits_3(tmp_path) -> None:
    # snake20's sidewinding replayed open loop grows ~50 1/s and overflows before t = 2 s
    out = tmp_path / "run"
    proc = simulate_quietly(out, "--robot", "snake20", "--gait", "sidewinding", "--duration", "2")
    assert proc.returncode == 3, proc.stderr
    summary = json.loads((out / "summary.json").read_text())["summary"]
    error, t, _ = written_error(out)
    assert np.isfinite(error).all() and t[-1] < 2.0 and summary["steps"] == t.size - 1
    diverged = summary["diverged_at_s"]
    assert diverged == pytest.approx(t[-1] + 0.001)
    assert "diverged: the state left the finite numbers" in proc.stdout
    t_over, joint = first_over(out, 0.05)
    (line,) = proc.stderr.splitlines()
    assert line.startswith(
        f"snake: error: the state left the finite numbers at t = {diverged:.6g} s"
    )
    assert f"from t = {t_over:.4g} s, {joint} first" in line
    assert (
        "add servo feedback (--servo-stiffness 2 --servo-damping 0.05) or use a smaller --dt"
        in line
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["simulate", "--robot", "missing.yaml"], "missing.yaml: cannot read robot file"),
        (["simulate", "--set", "amplitude=9"], "serpenoid.amplitude must be in [0, 1.5] rad"),
        (["simulate", "--set", "amplitude"], "--set expects NAME=VALUE"),
        (["simulate", "--set", "wiggle=1"], "has no parameter(s) ['wiggle']"),
        (["simulate", "--duration", "0.0105"], "whole number of --dt"),
        (["simulate", "--duration", "-1"], "expected a finite number > 0"),
        (["simulate", "--tolerance", "0"], "argument --tolerance: expected a finite number > 0"),
        (["simulate", "--gait", "slither"], "invalid choice: 'slither'"),
        (
            ["simulate", "--ground", "--ideal-servos", "--servo-stiffness", "1"],
            "drop --servo-stiffness",
        ),
        (["simulate", "--ideal-servos"], "--ideal-servos applies on the ground"),
        (
            ["simulate", "--ground", "--ideal-servos", "--dt", "0.005"],
            "dt = 5 ms is over the 1.19 ms the ground",
        ),
        (["sweep", "--x", "amplitude=0.1"], "--x expects NAME=LOW:HIGH[:COUNT]"),
        (["sweep", "--y", "amplitude=0.1:0.2"], "--x and --y both sweep amplitude"),
        (["sweep", "--set", "frequency=1"], "--set frequency is swept by --x/--y"),
        (["sweep", "--x", "amplitude=0.5:3"], "serpenoid.amplitude must be in [0, 1.5] rad"),
        (["sweep", "--x", "wiggle=0:1:2"], "has no parameter(s) ['wiggle']"),
        (
            ["sweep", "--ideal-servos", "--dt", "0.002"],
            "--dt: dt = 2 ms is over the 1.19 ms the ground allows",
        ),
        (["sweep", "--jobs", "-1"], "--jobs must be >= 0"),
    ],
)
def test_bad_arguments_give_one_line_errors_not_tracebacks(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    """In this process (the console script is this ``main``; a process each cost seconds of
    imports): exit status 2 for what argparse refuses, else 1, and one error line."""
    monkeypatch.chdir(tmp_path)
    try:
        status = main([*args, "-o", str(tmp_path / "x")])
    except SystemExit as exc:  # argparse's refusal
        status = exc.code
    err = capsys.readouterr().err
    refused_by_argparse = err.startswith("usage: snake ")
    assert status == (2 if refused_by_argparse else 1)
    assert message in err
    assert "Traceback" not in err
    error_lines = [line for line in err.splitlines() if "error" in line]
    assert len(error_lines) == 1


def test_simulate_on_the_ground_reports_and_writes_the_travel(tmp_path) -> None:
    """``--ground``: the robot free on the default ground; the travel on stdout equals
    summary.json's and the centre of mass in run.csv; the base pose and joints are written."""
    out = tmp_path / "ground"
    proc = snake(
        "simulate", "--ground", "--gait", "sidewinding", "--duration", "0.3", "-o", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    assert "simulating 0.3 s on the ground: 100%" in proc.stderr
    assert {p.name for p in out.iterdir()} == {"run.npz", "run.csv", "summary.json", "path.png"}
    travel = json.loads((out / "summary.json").read_text())["travel"]
    assert f"travelled {travel['distance']:.4f} m" in proc.stdout
    assert f"cost of transport {travel['cost_of_transport']:.3g}" in proc.stdout
    rows = np.genfromtxt(out / "run.csv", delimiter=",", names=True)
    assert rows.size == 31 and rows["t"][-1] == pytest.approx(0.3)
    moved = np.hypot(rows["com_x"][-1] - rows["com_x"][0], rows["com_y"][-1] - rows["com_y"][0])
    assert moved == pytest.approx(travel["distance"], rel=1e-6) and moved > 1e-3
    quaternion = np.column_stack([rows[f"base_q{a}"] for a in "xyzw"])
    np.testing.assert_allclose(np.linalg.norm(quaternion, axis=1), 1.0, atol=1e-9)
    assert np.all(rows["base_z"] > 0.0) and np.all(rows["base_z"] < 0.1)  # on the ground
    # under the robot file's servos, the share of the run each spent on its torque-speed line
    config = json.loads((out / "summary.json").read_text())["config"]
    assert "servo model" in config["servo"]
    share = config["servo_saturated_share"]
    most = max(share, key=share.get)
    assert f"servos at their torque-speed limit: {most} {share[most]:.1%}" in proc.stdout


@pytest.mark.slow  # tens of seconds: make test runs it, make unit does not
def test_sweep_maps_the_grid_and_marks_the_best_points(tmp_path) -> None:
    """A 2 x 2 grid in parallel: one CSV row per point, each the travel ``snake simulate
    --ground`` reports for that point; the fastest and cheapest named as in the CSV."""
    out = tmp_path / "sweep"
    grid = ["--x", "amplitude=0.3:0.9:2", "--y", "frequency=0.5:1.0:2", "--duration", "0.1"]
    proc = snake("sweep", *grid, "--jobs", "2", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "sweep: 4/4 runs" in proc.stderr
    assert {p.name for p in out.iterdir()} == {
        "sweep.csv",
        "summary.json",
        "sweep.png",
        "points.jsonl",
        "study.json",
    }
    rows = np.genfromtxt(out / "sweep.csv", delimiter=",", names=True)
    assert [(r["amplitude"], r["frequency"]) for r in rows] == [
        (0.3, 0.5),
        (0.9, 0.5),
        (0.3, 1.0),
        (0.9, 1.0),
    ]
    best = json.loads((out / "summary.json").read_text())["best"]
    fastest = rows[np.argmax(rows["mean_speed_mps"])]
    assert (best["fastest"]["amplitude"], best["fastest"]["frequency"]) == (
        fastest["amplitude"],
        fastest["frequency"],
    )
    assert (
        f"fastest: amplitude={fastest['amplitude']:g} frequency={fastest['frequency']:g}"
        in proc.stdout
    )
    one = simulate_quietly(
        tmp_path / "one", "--ground", "--set", "amplitude=0.9", "--set", "frequency=1",
        "--duration", "0.1",
    )  # fmt: skip
    assert one.returncode == 0, one.stderr
    travel = json.loads((tmp_path / "one" / "summary.json").read_text())["travel"]
    assert rows[3]["distance_m"] == pytest.approx(travel["distance"], rel=1e-6)
    assert rows[3]["cost_of_transport"] == pytest.approx(travel["cost_of_transport"], rel=1e-6)


def test_gaits_and_urdf_commands(tmp_path) -> None:
    proc = snake("gaits")
    assert proc.returncode == 0 and "sidewinding" in proc.stdout and "phase_lag" in proc.stdout
    urdf = tmp_path / "snake.urdf"
    assert snake("urdf", "--robot", "robot", "-o", str(urdf)).returncode == 0
    assert urdf.read_text().count("<joint ") == 8


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "snake"
    if not script.exists():
        pytest.skip(
            "package not installed in this interpreter's environment (make test installs it)"
        )
    proc = subprocess.run([str(script), "gaits"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "serpenoid" in proc.stdout


@pytest.mark.slow  # tens of seconds: make test runs it, make unit does not
def test_simulate_on_wheels_runs_kanes_model_under_the_servos(tmp_path) -> None:
    """A robot with ``ground: wheels``: the servos drive Kane's wheeled model; the travel on
    stdout equals summary.json's and run.csv's; the tail stays at the wheels' height; a
    friction-ground option is refused in one line."""
    out = tmp_path / "wheels"
    robot = str(ROOT / "config" / "robot_wheels.yaml")
    proc = snake(
        "simulate", "--robot", robot, "--gait", "serpenoid", "--duration", "1", "-o", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    assert "simulating 1 s on wheels: 100%" in proc.stderr
    assert "on wheels, gait serpenoid" in proc.stdout
    travel = json.loads((out / "summary.json").read_text())["travel"]
    assert f"travelled {travel['distance']:.4f} m" in proc.stdout
    rows = np.genfromtxt(out / "run.csv", delimiter=",", names=True)
    moved = np.hypot(rows["com_x"][-1] - rows["com_x"][0], rows["com_y"][-1] - rows["com_y"][0])
    assert moved == pytest.approx(travel["distance"], rel=1e-6) and moved > 0.01
    assert np.all(rows["base_z"] == 0.035)  # the thickest body's radius: on its wheels
    for extra in (("--method", "literal"), ("--ground",)):
        proc = snake("simulate", "--robot", robot, *extra, "-o", str(tmp_path / "x"))
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
        assert "rolls on wheels" in proc.stderr and "drop --ground and --method" in proc.stderr
    proc = snake("sweep", "--robot", robot, "--duration", "0.1", "-o", str(tmp_path / "s"))
    assert (
        proc.returncode != 0 and "rolls on wheels" in proc.stderr and "Traceback" not in proc.stderr
    )


def test_a_hardware_run_writes_only_under_its_output_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``snake hardware --dynamics -o DIR``: every path the run's nodes write to is under DIR:
    the runner's folder (logs, parameter files), compare_node's report (``report_dir``, once
    ``~/.ros/mfm_snake``) and the nodes' own ROS log files (``ROS_LOG_DIR``). The graph is
    taken where the command hands it to the runner; nothing is started."""
    from snake_bringup import runner
    from snake_bringup.cli import hardware, main

    runs: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr(hardware, "run_graph", lambda graph, **kw: runs.append((graph, kw)) or 0)
    out = tmp_path / "run"
    for extra in ([], ["--emulate", "--dry-run"], ["--emulate", "--transport", "udp", "--dry-run"]):
        assert main(["hardware", "--dynamics", "--no-rviz", "-o", str(out), *extra]) == 0
    assert len(runs) == 3
    for graph, kw in runs:
        assert kw["output"] == out
        (compare,) = [s for s in graph if s.executable == "compare_node"]
        assert {"report_dir": str(out), "report_name": "compare"} in compare.parameters
        # a parameter naming a path that does not exist yet is one a node writes to (but
        # the driver's port, the robot's serial device)
        targets = [
            value
            for spec in graph
            for params in spec.parameters
            if isinstance(params, dict)
            for key, value in params.items()
            if isinstance(value, str) and value.startswith("/") and "\n" not in value
            if key != "port" and not Path(value).exists()
        ]
        assert targets and all(Path(t).is_relative_to(out) for t in targets), targets
    assert Path(runner.node_environment(out)["ROS_LOG_DIR"]).is_relative_to(out)


def test_the_tour_table_sums_up_each_run() -> None:
    """``snake demo --tour``'s table: the RMS over the joints of each report, the travels
    and the path error of the run's path section; n/a where a run has no report."""
    from dataclasses import replace

    from snake_bringup.demo import DemoRun, tour_table
    from snake_viz.compare_report import PathSection, ReportSummary
    from snake_viz.path_compare import PathComparison, PathMetrics, PathTravel
    from snake_viz.timing import judge_timing

    def summary(rms: tuple[float, ...], path: PathSection | None = None) -> ReportSummary:
        n = len(rms)
        return ReportSummary(Path("r"), ("a", "b")[:n], rms, rms, (0.0,) * n, rms, (1,) * n,
                             1.0, path=path)  # fmt: skip

    travel = [PathTravel(d, d, d / 10.0, 0.0) for d in (1.25, 1.5)]
    metrics = PathMetrics(100, 10.0, 0.0321, 0.05, 0.05, travel[0], travel[1], 0.025, 0.0)
    empty = np.empty((0, 3))
    path = PathSection(PathComparison(np.empty(0), empty, empty, np.empty(0), metrics))
    jumped = judge_timing(np.r_[0.0:1.0:0.01, 1.2:2.0:0.01], np.arange(0.0, 2.0, 0.01))
    rows = tour_table(
        [
            ("robot config", DemoRun(0, summary((0.03, 0.04), path), summary((0.1, 0.0)))),
            ("jumped", DemoRun(0, replace(summary((0.03,)), timing=jumped))),
            ("failed", DemoRun(1)),
        ]
    ).splitlines()
    assert len(rows) == 5
    config = rows[2].split()
    assert config[:2] == ["robot", "config"]
    # sqrt((0.03^2 + 0.04^2) / 2) = 0.035355 rad = 2.03 deg; sqrt(0.1^2 / 2) = 4.05 deg
    assert config[2:] == ["2.03", "4.05", "1.250", "/", "1.500", "3.2", "n/a"]
    assert rows[3].split()[-1] == "UNTRUSTED"  # the commands jumped 0.2 s
    assert rows[4].split()[1:] == ["n/a"] * 5


@pytest.mark.parametrize(
    ("robot", "plant"),
    [("robot_table", "plant_mujoco"), ("robot_feedback", "plant"), ("robot_wheels", "plant")],
)
def test_the_demo_crawls_a_floor_robot_on_the_mujoco_table(robot: str, plant: str) -> None:
    """``snake demo``'s default plant: a robot lying on a floor crawls on the MuJoCo table
    (a plant that is not the model), a fixed tail or a wheeled snake on the fixed-tail
    plant; ``--plant plant_floor`` names the MFM table explicitly."""
    from snake_bringup.demo import default_plant
    from snake_ros.paths import load_robot

    assert default_plant(load_robot(robot)) == robot_config(plant)


@pytest.mark.parametrize("command", ["sim", "hardware"])
@pytest.mark.parametrize(
    ("typo", "message"),
    [
        (
            ("    joint_1: {channel: 0}", "    joint_1: {chanel: 0}"),
            "servos.joints.joint_1: unknown keys ['chanel']; known keys ['channel',",
        ),
        (
            ("  defaults: {direction", "  defualts: {direction"),
            "servos: unknown keys ['defualts']; known keys ['defaults', 'driver', 'joints']",
        ),
        (("    watchdog_ms:", "    watchdog:"), "servos.driver: unknown keys ['watchdog']"),
    ],
)
def test_a_misspelled_servos_key_is_one_line_before_anything_starts(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    typo: tuple[str, str],
    message: str,
) -> None:
    """The campaign's typo passed ``--dry-run`` and ended in a node's traceback later; now
    ``--dry-run`` refuses it in one line naming the file, the key and the known keys."""
    text = robot_config("robot").read_text()
    assert text.count(typo[0]) == 1
    bad = tmp_path / "typo.yaml"
    bad.write_text(text.replace(typo[0], typo[1]))
    status = main([command, "--robot", str(bad), "--dry-run", "-o", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert status == 1 and "Traceback" not in err
    assert err.splitlines() == [f"snake: error: {bad}: {err.split(': ', 3)[-1].strip()}"]
    assert message in err
    assert not (tmp_path / "x").exists()
