"""Comparison maths and report (snake_viz.compare), no ROS.

References: injected lags and errors of synthetic series (the lag to a quarter of a sample,
RMS / max against the direct formulas on the injected errors to 1e-12), hand geometry of a
straight and a once-bent snake for the traces, PNG signatures and decoding for the plots, a
bag written with rosbags' own Writer (MCAP) for ``compare_bag``.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

import snake_dynamics.model
from snake_bringup.cli.compare import register
from snake_bringup.comparison import compare_bag, report_robot
from snake_dynamics import SnakeModel
from snake_dynamics.servo import ServoModel
from snake_ros.paths import robot_config
from snake_viz.bag import BagRecorder, is_interrupted
from snake_viz.compare import (
    MEASURED_TOPIC,
    SIM_TOPIC,
    CompareError,
    JointSeries,
    SampleBuffer,
    align,
    compare,
    error_stats,
    estimate_lag,
    rms_at_lag,
    trace_points,
)
from snake_viz.compare_report import Report

NAMES = ("joint_1", "joint_2", "joint_3", "joint_4")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: The robot of the reports, read once for the module (``snake compare`` reads it once).
ROBOT = report_robot("robot")


def signal(t: np.ndarray) -> np.ndarray:
    """Smooth, non-periodic within +-0.5 s, different per joint [rad], shape (N, 4)."""
    t = t[:, None]
    f1, f2 = np.array([0.45, 0.7, 0.9, 0.55]), np.array([0.13, 0.21, 0.17, 0.31])
    return 0.5 * np.sin(2 * np.pi * f1 * t + [0, 1, 2, 3]) + 0.3 * np.sin(2 * np.pi * f2 * t)


def lagged_pair(
    rng: np.random.Generator, lags: np.ndarray, duration: float = 12.0
) -> tuple[JointSeries, JointSeries]:
    """Simulation at 100 Hz; measurement at ~50 Hz with +-3 ms stamp jitter, late by ``lags``,
    received in shuffled order."""
    ts = np.arange(0.0, duration, 0.01) + 1000.0
    tm = np.arange(0.0, duration, 0.02) + 1000.0 + rng.uniform(-0.003, 0.003, int(duration / 0.02))
    qm = np.stack([signal(tm - lag)[:, k] for k, lag in enumerate(lags)], axis=1)
    order = rng.permutation(tm.size)
    return (
        JointSeries.from_samples(NAMES, ts, signal(ts)),
        JointSeries.from_samples(NAMES, tm[order], qm[order]),
    )


def test_lag_is_recovered_to_a_quarter_of_a_sample(rng: np.random.Generator) -> None:
    lags = np.array([0.027, 0.0335, 0.0, -0.012])  # includes a measurement ahead of the sim
    sim, measured = lagged_pair(rng, lags)
    estimate = estimate_lag(sim, measured, max_lag=0.3)
    dt = 0.01
    assert np.all(np.abs(estimate - lags) < 0.25 * dt), (estimate, lags)


def test_lag_of_a_joint_that_does_not_move_is_undefined(rng: np.random.Generator) -> None:
    t = np.arange(0.0, 5.0, 0.01)
    q = signal(t)
    q[:, 2] = 0.1
    sim = JointSeries.from_samples(NAMES, t, q)
    lag = estimate_lag(sim, sim)
    assert math.isnan(lag[2]) and np.allclose(lag[[0, 1, 3]], 0.0, atol=1e-9)


def test_rms_at_lag_is_what_a_delay_does_not_explain() -> None:
    """A robot 80 ms late at 90 % of the amplitude plus a 0.02 rad offset: the RMS at the
    lag is that of 0.1 * signal + 0.02 alone, where the plain RMS carries the delay too."""
    t = np.arange(0.0, 12.0, 0.01) + 1000.0
    lag = 0.08
    sim = JointSeries.from_samples(NAMES, t, signal(t))
    measured = JointSeries.from_samples(NAMES, t, 0.9 * signal(t - lag) + 0.02)
    comparison = compare(sim, measured, max_lag=0.3)
    np.testing.assert_allclose(comparison.lag, lag, atol=1e-3)
    grid = t[t >= t[0] + lag]  # where the shifted measurement exists
    left = np.sqrt(np.mean((0.02 - 0.1 * signal(grid - lag)) ** 2, axis=0))
    np.testing.assert_allclose(comparison.rms_at_lag, left, rtol=0.02)
    assert np.all(comparison.stats.run_rms > 2.0 * left), (comparison.stats.run_rms, left)
    # no lag (a joint that does not move): no RMS at the lag
    none = rms_at_lag(sim, measured, np.array([np.nan, 0.0, np.nan, lag]))
    assert np.isnan(none[[0, 2]]).all() and np.isfinite(none[[1, 3]]).all()


def test_rms_and_max_equal_the_direct_formulas(rng: np.random.Generator) -> None:
    """Measured on the simulated stamps (some missing): interpolation is exact there, so the
    statistics must equal those of the injected errors."""
    t = np.arange(0.0, 6.0, 0.01)
    q = signal(t)
    injected = rng.normal(scale=0.02, size=q.shape)
    keep = np.sort(rng.choice(t.size, size=t.size * 3 // 4, replace=False))
    keep[0], keep[-1] = 0, t.size - 1
    order = rng.permutation(keep.size)
    sim = JointSeries.from_samples(NAMES, t, q)
    measured = JointSeries.from_samples(NAMES, t[keep][order], (q + injected)[keep][order])
    # between kept stamps the interpolated error is not the injected one: compare on kept stamps
    sim_kept = JointSeries.from_samples(NAMES, t[keep], q[keep])
    stats = error_stats(align(sim_kept, measured, max_gap=1.0), window=1.5)
    e = injected[keep]
    np.testing.assert_allclose(stats.run_rms, np.sqrt(np.mean(e**2, axis=0)), rtol=1e-12)
    np.testing.assert_allclose(stats.run_max, np.max(np.abs(e), axis=0), rtol=1e-12)
    recent = t[keep] >= t[-1] - 1.5
    np.testing.assert_allclose(
        stats.window_rms, np.sqrt(np.mean(e[recent] ** 2, axis=0)), rtol=1e-12
    )
    np.testing.assert_allclose(stats.window_max, np.max(np.abs(e[recent]), axis=0), rtol=1e-12)
    np.testing.assert_allclose(stats.now, e[-1], rtol=1e-12)
    assert list(stats.samples) == [keep.size] * 4
    # on all simulated stamps the full run is aligned too
    assert len(align(sim, measured, max_gap=1.0)) == t.size


def test_alignment_is_by_stamp_not_arrival(rng: np.random.Generator) -> None:
    """A ramp plus an offset, measured at jittered stamps arriving out of order: linear
    interpolation is exact for a ramp, so the error is the offset everywhere."""
    slope, offset = np.array([0.3, -0.2, 0.1, 0.05]), np.array([0.01, -0.02, 0.0, 0.04])
    ts = np.arange(0.0, 4.0, 0.01)
    tm = np.arange(0.0, 4.02, 0.02) + rng.uniform(-0.004, 0.004, 201)
    order = rng.permutation(tm.size)
    sim = JointSeries.from_samples(NAMES, ts, ts[:, None] * slope)
    measured = JointSeries.from_samples(NAMES, tm[order], (tm[:, None] * slope + offset)[order])
    aligned = align(sim, measured)
    assert np.all(np.diff(measured.t) > 0)
    assert aligned.t[0] >= measured.t[0] and aligned.t[-1] <= measured.t[-1]
    np.testing.assert_allclose(
        aligned.error, np.broadcast_to(offset, aligned.error.shape), atol=1e-12
    )
    # the series holds the samples in stamp order, whatever order they arrived in
    by_stamp = np.argsort(tm)
    np.testing.assert_array_equal(measured.t, tm[by_stamp])
    np.testing.assert_array_equal(measured.q, (tm[:, None] * slope + offset)[by_stamp])


def test_duplicate_stamps_keep_the_last_received() -> None:
    series = JointSeries.from_samples(["a"], [1.0, 2.0, 1.0, 3.0], [[1.0], [2.0], [9.0], [3.0]])
    assert series.t.tolist() == [1.0, 2.0, 3.0] and series.q[:, 0].tolist() == [9.0, 2.0, 3.0]


def test_a_measurement_gap_is_not_bridged() -> None:
    ts = np.arange(0.0, 3.0, 0.01)
    tm = np.concatenate([np.arange(0.0, 1.0, 0.02), np.arange(1.6, 3.0, 0.02)])
    sim = JointSeries.from_samples(NAMES, ts, np.zeros((ts.size, 4)))
    measured = JointSeries.from_samples(NAMES, tm, np.full((tm.size, 4), 0.1))
    aligned = align(sim, measured, max_gap=0.25)
    hole = (aligned.t > tm[49] + 1e-9) & (aligned.t < 1.6 - 1e-9)
    assert np.all(np.isnan(aligned.error[hole])) and np.all(aligned.error[~hole] == 0.1)
    stats = error_stats(aligned)
    assert list(stats.samples) == [int((~hole).sum())] * 4
    np.testing.assert_allclose(stats.run_rms, 0.1, rtol=1e-12)


def test_sample_buffer_maps_names_and_bounds_history() -> None:
    buf = SampleBuffer(["joint_1", "joint_2"], max_samples=8)
    assert buf.append(0.0, ["joint_2", "joint_1", "other"], [2.0, 1.0, 5.0]) == 2
    assert buf.append(1.0, ["nope"], [0.0]) == 0
    assert buf.append(2.0, ["joint_2"], [4.0]) == 1
    series = buf.series()
    assert series.q[0].tolist() == [1.0, 2.0] and np.isnan(series.q[1, 0])
    for k in range(20):
        buf.append(3.0 + k, ["joint_1", "joint_2"], [k, k])
    assert len(buf) <= 8 and buf.dropped > 0 and buf.latest_stamp() == 22.0


def test_no_overlap_is_a_one_line_error() -> None:
    a = JointSeries.from_samples(NAMES, [0.0, 1.0], np.zeros((2, 4)))
    b = JointSeries.from_samples(NAMES, [5.0, 6.0], np.zeros((2, 4)))
    with pytest.raises(CompareError, match="do not overlap"):
        compare(a, b)


def test_trace_points_match_hand_geometry() -> None:
    model = SnakeModel.from_yaml(robot_config("robot"))
    lengths, masses = model.lengths, model.masses
    # straight along e2: CM of body b at l_0/2 + sum of the lengths before b + l_b/2
    ends = np.concatenate([[0.0], np.cumsum(lengths)]) - lengths[0] / 2
    y = ends[:-1] + lengths / 2
    head, com = trace_points(model, np.zeros(model.n_joints))
    np.testing.assert_allclose(head, [0, y[-1], 0], atol=1e-12)
    np.testing.assert_allclose(com, [0, masses @ y / masses.sum(), 0], atol=1e-12)
    # joint 1 (axis e1) bent by theta: everything past its pivot turns about x
    theta, pivot = 0.7, lengths[0] / 2
    q = np.zeros(model.n_joints)
    q[0] = theta
    rot = np.array(
        [[1, 0, 0], [0, math.cos(theta), -math.sin(theta)], [0, math.sin(theta), math.cos(theta)]]
    )
    centres = np.array([[0.0, yb, 0.0] for yb in y])
    centres[1:] = [pivot * np.array([0, 1, 0]) + rot @ (c - [0, pivot, 0]) for c in centres[1:]]
    head, com = trace_points(model, q)
    np.testing.assert_allclose(head, centres[-1], atol=1e-12)
    np.testing.assert_allclose(com, masses @ centres / masses.sum(), atol=1e-12)


def _check_report(folder: Path, names: tuple[str, ...], rows: int) -> None:
    for png in ("joint_angles.png", "joint_errors.png", "traces.png"):
        data = (folder / png).read_bytes()
        assert data.startswith(PNG_SIGNATURE), png
        import matplotlib.image

        image = matplotlib.image.imread(folder / png)
        assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
        assert float(np.std(image)) > 0.01, f"{png} is blank"
    lines = (folder / "aligned.csv").read_text().splitlines()
    assert len(lines) == rows + 1 and lines[0].startswith("t_s,joint_1_sim_rad")
    table = (folder / "summary.md").read_text()
    assert all(f"| {name} |" in table for name in names)
    config = yaml.safe_load((folder / "config.yaml").read_text())
    assert config["joints"] == list(names) and config["aligned_samples"] == rows


def test_report_writes_every_file(tmp_path: Path, rng: np.random.Generator) -> None:
    model = SnakeModel.uniform(4, mass=0.1, length=0.08, radius=0.02)
    lags = np.array([0.02, 0.03, 0.04, 0.0])
    sim, measured = lagged_pair(rng, lags, duration=4.0)
    comparison = compare(sim, measured)
    summary = Report(tmp_path / "report", model).write(comparison, {"source": "test"})
    _check_report(tmp_path / "report", NAMES, len(comparison.aligned))
    assert (
        "Prediction: servo model unknown (no robot config given)."
        in (tmp_path / "report" / "summary.md").read_text()
    )
    assert {p.name for p in summary.files} >= {"aligned.csv", "summary.md", "summary.json"}
    data = json.loads((tmp_path / "report" / "summary.json").read_text())
    np.testing.assert_allclose(data["rms_rad"], comparison.stats.run_rms, rtol=1e-12)
    np.testing.assert_allclose(data["lag_s"], lags, atol=0.0025)
    np.testing.assert_allclose(data["rms_at_lag_rad"], comparison.rms_at_lag, rtol=1e-12)


# --------------------------------------------------------------------------- bags
def bag_events(rng: np.random.Generator, lag: float, offset: float) -> list[tuple[int, str, bytes]]:
    """8 joints (the robot config's names): sim at 100 Hz; measurement at 50 Hz, late by
    ``lag`` on joints 1-7, and joint 8 held still at ``offset`` from a still simulation.
    Bag time = arrival time (with jitter and out-of-order arrival); header = MCU stamp.

    Returns:
        (arrival [ns], topic, CDR message) in arrival order.
    """
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    joint_state = store.types["sensor_msgs/msg/JointState"]
    header_type = store.types["std_msgs/msg/Header"]
    time_type = store.types["builtin_interfaces/msg/Time"]
    names = [f"joint_{k}" for k in range(1, 9)]

    def angles(t: float) -> np.ndarray:
        q = np.concatenate([signal(np.array([t]))[0], signal(np.array([t + 3.0]))[0, :3], [0.2]])
        return q

    def message(stamp: float, q: np.ndarray) -> bytes:
        sec = math.floor(stamp)
        header = header_type(
            stamp=time_type(sec=sec, nanosec=round((stamp - sec) * 1e9)), frame_id=""
        )
        msg = joint_state(
            header=header, name=names, position=q, velocity=np.zeros(0), effort=np.zeros(0)
        )
        return bytes(store.serialize_cdr(msg, joint_state.__msgtype__))

    t0 = 1_700_000_000.0
    events: list[tuple[float, str, bytes]] = []
    for t in np.arange(0.0, 8.0, 0.01):
        events.append((t0 + t + 0.001, SIM_TOPIC, message(t0 + t, angles(t))))
    for t in np.arange(0.0, 8.0, 0.02):
        q = angles(t - lag)
        q[7] = 0.2 + offset
        arrival = t0 + t + rng.uniform(0.0, 0.03)  # out-of-order arrival
        events.append((arrival, MEASURED_TOPIC, message(t0 + t, q)))
    events.sort(key=lambda e: e[0])
    return [(round(arrival * 1e9), topic, raw) for arrival, topic, raw in events]


def write_bag(path: Path, events: list[tuple[int, str, bytes]]) -> None:
    """The events in a bag written with rosbags' own Writer (MCAP), and a topic /other."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conns = {
            topic: writer.add_connection(topic, "sensor_msgs/msg/JointState", typestore=store)
            for topic in (SIM_TOPIC, MEASURED_TOPIC, "/other")
        }
        for arrival, topic, raw in events:
            writer.write(conns[topic], arrival, raw)


@pytest.fixture(scope="module")
def events() -> list[tuple[int, str, bytes]]:
    return bag_events(np.random.default_rng(7), lag=0.03, offset=0.05)


@pytest.fixture(scope="module")
def bag(tmp_path_factory: pytest.TempPathFactory, events: list[tuple[int, str, bytes]]) -> Path:
    path = tmp_path_factory.mktemp("bags") / "run"
    write_bag(path, events)
    return path


@pytest.fixture(scope="module")
def killed_snapshot(
    tmp_path_factory: pytest.TempPathFactory, events: list[tuple[int, str, bytes]]
) -> Path:
    """The same events recorded by the recorder's BagRecorder and left as a SIGKILL after a
    flush leaves them: a copy of the folder taken after ``flush()`` (chunks and metadata.yaml
    on disk, no MCAP summary or footer), with the start of a record the kill cut short."""
    root = tmp_path_factory.mktemp("killed")
    recorder = BagRecorder(root / "live")
    recorder.open()
    for topic in (SIM_TOPIC, MEASURED_TOPIC):
        recorder.add_topic(topic, "sensor_msgs/msg/JointState")
    for arrival, topic, raw in events:
        recorder.write(topic, arrival, raw)
    recorder.flush()
    shutil.copytree(root / "live", root / "snapshot")
    recorder.close()
    with (root / "snapshot" / "live.mcap").open("ab") as f:  # opcode, length, 5 of 4096 bytes
        f.write(b"\x06" + (4096).to_bytes(8, "little") + b"\0" * 5)
    return root / "snapshot"


def test_compare_bag_recovers_lag_and_error(bag: Path, tmp_path: Path) -> None:
    summary = compare_bag(bag, tmp_path / "report", ROBOT)
    names = tuple(f"joint_{k}" for k in range(1, 9))
    assert summary.names == names
    np.testing.assert_allclose(summary.lag[:7], 0.03, atol=0.0025)
    assert summary.rms[7] == pytest.approx(0.05, rel=1e-9)
    assert summary.max[7] == pytest.approx(0.05, rel=1e-9)
    assert math.isnan(summary.lag[7])  # a joint that does not move has no lag
    _check_report(tmp_path / "report", names, int(min(summary.samples)))
    # the report names the servo model of the robot config (the prediction's, see
    # compare_report): source file, digest, parameters
    servo = ServoModel.from_yaml(robot_config("robot"), names)
    assert f"Prediction: {servo.describe()}." in (tmp_path / "report" / "summary.md").read_text()
    data = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert data["servo_model"] == servo.digest
    config = yaml.safe_load((tmp_path / "report" / "config.yaml").read_text())
    assert config["servo_model"]["source"] == str(robot_config("robot"))
    assert config["servo_model"]["parameters"] == servo.as_dict()


def test_snake_compare_cli(
    bag: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report, from one reading of robot.yaml (the model and the report's servo model)."""
    reads: collections.Counter[str] = collections.Counter()
    read_yaml = snake_dynamics.model.read_yaml

    def counting(path: Path, what: str) -> object:
        reads[Path(path).name] += 1
        return read_yaml(path, what)

    monkeypatch.setattr(snake_dynamics.model, "read_yaml", counting)
    parser = argparse.ArgumentParser(prog="snake")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["compare", str(bag), "-o", str(tmp_path / "r"), "--no-plots"])
    assert args.run(args) == 0
    assert reads == {"robot.yaml": 1}
    out = capsys.readouterr().out
    assert f"report: {tmp_path / 'r'}/" in out
    row = next(line for line in out.splitlines() if line.startswith("joint_8"))
    assert row.split()[1] == f"{math.degrees(0.05):.3f}"
    assert (tmp_path / "r" / "summary.md").is_file() and not (
        tmp_path / "r" / "traces.png"
    ).exists()


def _with_odometry(
    path: Path,
    events: list[tuple[int, str, bytes]],
    poses: list[tuple[float, np.ndarray, float]] | None,
    msgtype: str = "nav_msgs/msg/Odometry",
    measured: list[tuple[float, str, np.ndarray, float]] | None = None,
) -> None:
    """``write_bag``'s bag plus /sim/odom: (stamp [s], position [m], yaw of the tail [rad]),
    and /measured/pose (PoseStamped: stamp [s], frame, position [m], yaw [rad]) in the order
    given (bag time = stamp, but never before the previous message's); None: no topic."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore
    from scipy.spatial.transform import Rotation

    store = get_typestore(Stores.ROS2_JAZZY)
    types = store.types

    def header(stamp: float, frame: str) -> object:
        sec = math.floor(stamp)
        time = types["builtin_interfaces/msg/Time"](sec=sec, nanosec=round((stamp - sec) * 1e9))
        return types["std_msgs/msg/Header"](stamp=time, frame_id=frame)

    def pose(position: np.ndarray, yaw: float) -> object:
        x, y, z, w = Rotation.from_euler("z", yaw).as_quat()
        return types["geometry_msgs/msg/Pose"](
            position=types["geometry_msgs/msg/Point"](x=position[0], y=position[1], z=position[2]),
            orientation=types["geometry_msgs/msg/Quaternion"](x=x, y=y, z=z, w=w),
        )

    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conns = {
            topic: writer.add_connection(topic, "sensor_msgs/msg/JointState", typestore=store)
            for topic in (SIM_TOPIC, MEASURED_TOPIC)
        }
        for arrival, topic, raw in events:
            if topic in conns:
                writer.write(conns[topic], arrival, raw)
        if poses is not None:
            odom = writer.add_connection("/sim/odom", msgtype, typestore=store)
        for stamp, position, yaw in poses or []:
            if msgtype == "nav_msgs/msg/Odometry":
                zero = types["geometry_msgs/msg/Vector3"](x=0.0, y=0.0, z=0.0)
                msg = types[msgtype](
                    header=header(stamp, "world"),
                    child_frame_id="sim/base_link",
                    pose=types["geometry_msgs/msg/PoseWithCovariance"](
                        pose=pose(position, yaw), covariance=np.zeros(36)
                    ),
                    twist=types["geometry_msgs/msg/TwistWithCovariance"](
                        twist=types["geometry_msgs/msg/Twist"](linear=zero, angular=zero),
                        covariance=np.zeros(36),
                    ),
                )
            else:
                msg = types[msgtype](data="not a pose")
            writer.write(odom, round(stamp * 1e9), store.serialize_cdr(msg, msgtype))
        if measured is not None:
            kind = "geometry_msgs/msg/PoseStamped"
            conn = writer.add_connection("/measured/pose", kind, typestore=store)
            arrival = 0
            for stamp, frame, position, yaw in measured:
                msg = types[kind](header=header(stamp, frame), pose=pose(position, yaw))
                arrival = max(arrival + 1, round(stamp * 1e9))
                writer.write(conn, arrival, store.serialize_cdr(msg, kind))


def test_snake_compare_reports_the_predicted_travel(
    events: list[tuple[int, str, bytes]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A floating robot's bag also has /sim/odom: the report and the terminal say how far the
    tail went (0.3 m in 3 s, turning from 10 to 370 deg: 360 deg of drift through the wrap);
    a /sim/odom of another type is a one-line error; a bag without it, no travel."""
    bag = tmp_path / "ground"
    poses = [
        (t, np.array([0.1 * t, 0.0, 0.03]), math.radians(10 + 120 * t))
        for t in np.linspace(0.0, 3.0, 301)
    ]
    _with_odometry(bag, events, poses[::-1])  # out of order: sorted by stamp
    parser = argparse.ArgumentParser(prog="snake")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["compare", str(bag), "-o", str(tmp_path / "r"), "--no-plots"])
    assert args.run(args) == 0
    out = capsys.readouterr().out
    assert (
        "predicted travel (/sim/odom, the tail): 0.3000 m in 3.00 s, mean speed 10.000 cm/s, "
        "heading drift 360.00 deg" in out
    )
    travel = json.loads((tmp_path / "r" / "summary.json").read_text())["travel"]
    assert travel["distance_m"] == pytest.approx(0.3) and travel["poses"] == 301
    assert travel["heading_drift_rad"] == pytest.approx(2 * math.pi)
    assert (
        "Predicted travel (/sim/odom, the tail): 0.3000 m"
        in (tmp_path / "r" / "summary.md").read_text()
    )
    wrong = tmp_path / "wrong"
    _with_odometry(wrong, events, poses, "std_msgs/msg/String")
    with pytest.raises(
        CompareError, match="/sim/odom is std_msgs/msg/String, expected nav_msgs/msg/Odometry"
    ):
        compare_bag(wrong, tmp_path / "out", ROBOT)
    plain = tmp_path / "plain_bag"
    write_bag(plain, events)
    assert compare_bag(plain, tmp_path / "plain", ROBOT).travel is None


def test_snake_compare_compares_the_paths_on_the_floor(
    events: list[tuple[int, str, bytes]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bag with /sim/odom (10 cm/s along x, heading fixed) and /measured/pose (the same
    line 2 cm to the side, turning 0.1 rad over 3 s, three bad poses among them): the report
    says the path error (2 cm everywhere: linear interpolation is exact on a line), both
    travels, the heading drift and the rejected poses by reason, and draws path.png; a bag
    with one of the two topics says which is missing in one line."""
    t_p = np.linspace(0.0, 3.0, 301)
    predicted = [(t, np.array([0.1 * t, 0.0, 0.03]), 0.2) for t in t_p]
    t_m = np.arange(0.005, 3.0, 0.05)
    good = [(t, "world", np.array([0.1 * t, 0.02, 0.03]), 0.2 + 0.1 * t / 3.0) for t in t_m]
    bad = [
        (t_m[3] + 0.01, "world", np.array([math.nan, 0.0, 0.0]), 0.2),
        (t_m[5] + 0.01, "map", np.array([0.0, 0.0, 0.0]), 0.2),
        (t_m[7], "world", np.array([9.0, 0.0, 0.0]), 0.2),  # the stamp just accepted again
    ]
    measured = good[:4] + bad[:1] + good[4:6] + bad[1:2] + good[6:8] + bad[2:] + good[8:]
    bag = tmp_path / "floor"
    _with_odometry(bag, events, predicted, measured=measured)
    summary = compare_bag(bag, tmp_path / "r", ROBOT)
    assert summary.path is not None and summary.path.comparison is not None
    m = summary.path.comparison.metrics
    span = t_m[-1] - t_m[0]
    assert m.samples == t_m.size
    assert (m.rms_error, m.max_error, m.final_error) == pytest.approx((0.02,) * 3, abs=1e-9)
    assert m.predicted.displacement == pytest.approx(0.1 * span, abs=1e-9)
    assert m.measured.length == pytest.approx(0.1 * span, abs=1e-9)
    assert m.speed_error == pytest.approx(0.0, abs=1e-9)
    assert m.heading_drift == pytest.approx(0.1 * span / 3.0, abs=1e-9)
    data = json.loads((tmp_path / "r" / "summary.json").read_text())["path"]
    assert data["rejected"] == {
        "not finite": 1,
        "not a unit quaternion": 0,
        "wrong frame": 1,
        "ahead of the clock": 0,
        "not newer": 1,
    }
    assert data["samples"] == t_m.size and data["measured"]["speed"] == pytest.approx(0.1)
    assert (tmp_path / "r" / "path.png").read_bytes()[:8] == PNG_SIGNATURE
    assert tmp_path / "r" / "path.png" in summary.files
    md = (tmp_path / "r" / "summary.md").read_text()
    assert "## On the floor" in md and "Measured poses rejected: 1 not finite" in md

    parser = argparse.ArgumentParser(prog="snake")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["compare", str(bag), "-o", str(tmp_path / "cli"), "--no-plots"])
    assert args.run(args) == 0
    out = capsys.readouterr().out
    assert (
        f"path (/measured/pose against /sim/odom, the tail; measured - predicted): {t_m.size} "
        f"poses over {span:.2f} s; error RMS 2.000 cm, max 2.000 cm, final 2.000 cm" in out
    )
    assert "predicted travel (/sim/odom, the tail)" in out  # kept
    assert "measured poses rejected: 1 not finite, 1 wrong frame, 1 not newer" in out

    for name, odom, poses, line in (
        ("odom_only", predicted, None, "poses on /sim/odom, none on /measured/pose"),
        ("pose_only", None, good, "poses on /measured/pose, none on /sim/odom"),
    ):
        _with_odometry(tmp_path / name, events, odom, measured=poses)
        section = compare_bag(tmp_path / name, tmp_path / f"{name}_r", ROBOT, plots=False).path
        assert section is not None and section.lines() == [f"no path comparison: {line}"]
        summary_json = json.loads((tmp_path / f"{name}_r" / "summary.json").read_text())
        assert summary_json["path"] == {"missing": f"no path comparison: {line}"}
    plain = tmp_path / "fixed_base"
    write_bag(plain, events)
    assert compare_bag(plain, tmp_path / "plain", ROBOT, plots=False).path is None


def test_bag_errors_are_one_line(bag: Path, tmp_path: Path) -> None:
    with pytest.raises(CompareError, match="no such bag"):
        compare_bag(tmp_path / "missing", tmp_path / "out", ROBOT)
    with pytest.raises(CompareError, match=r"no topic /nope \(it has /measured/joint_states"):
        compare_bag(bag, tmp_path / "out", ROBOT, topics=("/sim/joint_states", "/nope"))
    with pytest.raises(CompareError, match="robot config"):
        report_robot("no_such_robot")
    with pytest.raises(CompareError, match="no messages on /other name the joints"):
        compare_bag(bag, tmp_path / "out", ROBOT, topics=("/sim/joint_states", "/other"))


def test_compare_bag_without_a_robot_takes_the_bags_joint_names(bag: Path, tmp_path: Path) -> None:
    summary = compare_bag(bag, tmp_path / "r", None, plots=False)
    assert summary.names == tuple(f"joint_{k}" for k in range(1, 9))
    assert summary.rms[7] == pytest.approx(0.05, rel=1e-9)
    assert not (tmp_path / "r" / "traces.png").exists()


def test_compare_bag_reads_a_killed_recording_as_replay_does(
    bag: Path, killed_snapshot: Path, tmp_path: Path
) -> None:
    """A recording cut by SIGKILL after its last flush: recovered in place on the way in
    (as ``snake replay`` does), then the same report as the complete bag of the same
    messages; a lone copy of its .mcap file (no bag folder) reads the same."""
    killed = tmp_path / "killed"
    shutil.copytree(killed_snapshot, killed)
    lone = tmp_path / "lone" / "run.mcap"
    lone.parent.mkdir()
    shutil.copy(killed / "live.mcap", lone)
    assert is_interrupted(killed / "live.mcap") and is_interrupted(lone)
    complete = compare_bag(bag, tmp_path / "complete", ROBOT, plots=False)
    for source in (killed, lone):
        summary = compare_bag(source, tmp_path / source.stem, ROBOT, plots=False)
        np.testing.assert_array_equal(summary.rms, complete.rms)
        np.testing.assert_array_equal(summary.max, complete.max)
        np.testing.assert_array_equal(summary.lag, complete.lag)
        assert summary.samples == complete.samples
    assert not is_interrupted(killed / "live.mcap") and not is_interrupted(lone)
