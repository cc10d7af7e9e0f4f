"""Record and replay on real rclpy: ``snake record`` (the recorder node in a subprocess)
writes what this process publishes into a rosbag2 MCAP bag, ``snake replay`` (the replay
graph, its player a child process) plays it back to this process; a recorder killed with
SIGKILL leaves a bag readable to its last flush.

References: the messages this process publishes (counts and contents), the type hashes and
QoS that rclpy's graph reports for its own publishers, an independent MCAP reader (the
``mcap`` and ``mcap-ros2-support`` packages), and the bag's own timestamps (replay timing).
Every wait is bounded; DDS stays on this machine (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

pytestmark = pytest.mark.parallel  # each test marked ros
rclpy = pytest.importorskip("rclpy")
pytest.importorskip("rosbags")
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.duration import Duration  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from rclpy.signals import SignalHandlerOptions  # noqa: E402
from rosbags.interfaces import QosReliability  # noqa: E402
from rosbags.rosbag2 import StoragePlugin, Writer  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from snake_bringup.cli import main as snake_main  # noqa: E402
from snake_bringup.comparison import compare_bag, report_robot  # noqa: E402
from snake_viz.bag import (  # noqa: E402
    open_reader,
    recover,
    typestore,
)

ROOT = Path(__file__).resolve().parents[2]
#: ``snake record`` / ``snake replay`` as the snake CLI runs them (its parser, our hook).
CLI = (
    "import argparse, sys; from snake_bringup.cli import record, replay; "
    "p = argparse.ArgumentParser(); s = p.add_subparsers(); record.register(s); "
    "replay.register(s); a = p.parse_args(sys.argv[1:]); sys.exit(a.run(a))"
)
JOINTS = [f"joint_{k}" for k in range(1, 9)]
RATE = 2.0  # replay speed factor
#: The replayer's --delay after its subscribers appeared [s] (discovery on their side).
REPLAY_DELAY_S = 0.5
#: The test's publishers keep every message they send for late-joining readers (the
#: recorder mirrors it): what a publisher sends before discovery has finished on the
#: recorder's side reaches the bag all the same, however slow the machine.
LATCHED = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=1000,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)


def _env(tmp: Path) -> dict[str, str]:
    ament = [sys.prefix, *filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep))]
    return {
        **os.environ,
        "ROS_LOG_DIR": str(tmp / "ros_log"),
        "AMENT_PREFIX_PATH": os.pathsep.join(ament),
        "PYTHONPATH": str(ROOT),
        "PYTHONUNBUFFERED": "1",
    }


@dataclass
class Ros:
    """A private rclpy context with one node in this process."""

    node: Node
    executor: SingleThreadedExecutor
    tmp: Path

    def spin_until(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
            self.executor.spin_once(timeout_sec=0.01)

    def start(self, args: list[str], log: str) -> subprocess.Popen[str]:
        with (self.tmp / log).open("w") as sink:
            return subprocess.Popen(
                [sys.executable, *args],
                cwd=ROOT,
                env=_env(self.tmp),
                stdout=sink,
                stderr=subprocess.STDOUT,
                text=True,
            )


@pytest.fixture(scope="module")
def ros(tmp_path_factory: pytest.TempPathFactory, ros_domain: int) -> Iterator[Ros]:
    tmp = tmp_path_factory.mktemp("bags")
    context = Context()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("ROS_LOG_DIR", str(tmp / "ros_log"))
        rclpy.init(
            context=context, domain_id=ros_domain, signal_handler_options=SignalHandlerOptions.NO
        )
        node = Node("test_bags", context=context)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        yield Ros(node, executor, tmp)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)


def _stop(process: subprocess.Popen[str], sig: int = signal.SIGINT, timeout: float = 15.0) -> int:
    if process.poll() is None:
        process.send_signal(sig)
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
    return process.wait(timeout=10)


def _delivered(publishers: Any) -> None:
    """Wait until every reliable subscriber has acknowledged all the publishers sent."""
    for pub in publishers:
        assert pub.wait_for_all_acked(Duration(seconds=30)), f"{pub.topic_name} not delivered"


@dataclass
class Recording:
    """What this process published while ``snake record`` ran, and the bag."""

    bag: Path
    status: int
    published: dict[str, list[Any]] = field(default_factory=dict)
    hashes: dict[str, str] = field(default_factory=dict)
    sent_ns: tuple[int, int] = (0, 0)  # wall clock before the first and after the last ack


def _joint_state(i: int) -> JointState:
    msg = JointState(name=JOINTS, position=[i + 0.01 * k for k in range(8)])
    msg.velocity = [0.5 * i] * 8
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(i * 5_000_000, 10**9)
    return msg


def _pose(i: int) -> PoseStamped:
    msg = PoseStamped()
    msg.header.frame_id = "world"
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(i * 5_000_000, 10**9)
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = 0.001 * i, -0.5, 0.03
    msg.pose.orientation.z, msg.pose.orientation.w = 0.6, 0.8
    return msg


def _pose_values(msg: Any) -> tuple[str, float, float, float, float, float, float, float]:
    p, o = msg.pose.position, msg.pose.orientation
    return (msg.header.frame_id, p.x, p.y, p.z, o.x, o.y, o.z, o.w)


@pytest.fixture(scope="module")
def recording(ros: Ros) -> Recording:
    """``snake record`` (default topics plus /chatter, typed from the graph) while this
    process publishes /joint_commands at 200 Hz, /sim/joint_states at 100 Hz, /measured/pose
    at 40 Hz, /diagnostics and /chatter; then Ctrl-C."""
    bag = ros.tmp / "run_bag"
    topics = ["/joint_commands", "/sim/joint_states", "/measured/pose", "/diagnostics", "/chatter"]
    rec = ros.start(["-c", CLI, "record", *topics, "-o", str(bag)], "record.log")
    node = ros.node
    pubs = {
        "/joint_commands": node.create_publisher(JointState, "/joint_commands", LATCHED),
        "/sim/joint_states": node.create_publisher(JointState, "/sim/joint_states", LATCHED),
        "/measured/pose": node.create_publisher(PoseStamped, "/measured/pose", LATCHED),
        "/diagnostics": node.create_publisher(DiagnosticArray, "/diagnostics", LATCHED),
        "/chatter": node.create_publisher(String, "/chatter", LATCHED),
    }
    try:
        ros.spin_until(
            lambda: all(p.get_subscription_count() > 0 for p in pubs.values()),
            30.0,
            "the recorder to subscribe to every topic (/chatter through discovery)",
        )
        published: dict[str, list[Any]] = {t: [] for t in pubs}

        def send(topic: str, msg: Any) -> None:
            pubs[topic].publish(msg)
            published[topic].append(msg)

        first_ns = time.time_ns()
        start = time.monotonic()
        for i in range(300):  # 1.5 s at 200 Hz
            send("/joint_commands", _joint_state(i))
            if i % 2 == 0:
                send("/sim/joint_states", _joint_state(i))
            if i % 5 == 0:
                send("/measured/pose", _pose(i))
            if i % 10 == 0:
                send("/chatter", String(data=f"message {i}"))
            if i % 100 == 0:
                status = DiagnosticStatus(name="test", message=f"at {i}")
                send("/diagnostics", DiagnosticArray(status=[status]))
            # pace by the schedule, not by sleep(5 ms): no drift
            time.sleep(max(0.0, start + (i + 1) * 0.005 - time.monotonic()))
        hashes = {t: str(node.get_publishers_info_by_topic(t)[0].topic_type_hash) for t in pubs}
        _delivered(pubs.values())
        sent_ns = (first_ns, time.time_ns())
    finally:
        status = _stop(rec)
        for pub in pubs.values():
            node.destroy_publisher(pub)
    assert (bag / "metadata.yaml").is_file(), (ros.tmp / "record.log").read_text()
    return Recording(bag, status, published, hashes, sent_ns)


def _bag_messages(bag: Path) -> dict[str, list[tuple[int, Any]]]:
    out: dict[str, list[tuple[int, Any]]] = {}
    with open_reader(bag) as reader:
        for conn, stamp, data in reader.messages():
            out.setdefault(conn.topic, []).append(
                (stamp, typestore().deserialize_cdr(data, conn.msgtype))
            )
    return out


@pytest.mark.ros
def test_record_counts_equal_published(recording: Recording, ros: Ros) -> None:
    """Nothing lost, nothing changed: per topic, the bag holds exactly what was published."""
    log = (ros.tmp / "record.log").read_text()
    assert recording.status == 130, log  # stopped by Ctrl-C, bag closed
    stored = _bag_messages(recording.bag)
    assert {t: len(m) for t, m in stored.items()} == {
        t: len(m) for t, m in recording.published.items()
    }
    sent = [list(m.position) for m in recording.published["/joint_commands"]]
    got = [list(m.position) for _, m in stored["/joint_commands"]]
    assert got == sent
    assert [m.data for _, m in stored["/chatter"]] == [
        m.data for m in recording.published["/chatter"]
    ]
    assert [_pose_values(m) for _, m in stored["/measured/pose"]] == [
        _pose_values(m) for m in recording.published["/measured/pose"]
    ]
    stamps = [s for s, _ in stored["/joint_commands"]]
    assert stamps == sorted(stamps)
    # the recorder's receive times (not the header stamps, which start at 0)
    assert recording.sent_ns[0] <= stamps[0] and stamps[-1] <= recording.sent_ns[1]


@pytest.mark.ros
def test_bag_metadata_hashes_and_qos(recording: Recording) -> None:
    """metadata.yaml is rosbag2 v9 (MCAP) with the RIHS01 hashes rclpy reports for the
    publishers' types, and the QoS they offered."""
    meta = yaml.safe_load((recording.bag / "metadata.yaml").read_text())
    info = meta["rosbag2_bagfile_information"]
    assert info["version"] == 9
    assert info["storage_identifier"] == "mcap"
    assert info["message_count"] == sum(len(m) for m in recording.published.values())
    topics = {t["topic_metadata"]["name"]: t for t in info["topics_with_message_count"]}
    for topic, rihs01 in recording.hashes.items():
        assert rihs01.startswith("RIHS01_")
        assert topics[topic]["topic_metadata"]["type_description_hash"] == rihs01
        assert topics[topic]["message_count"] == len(recording.published[topic])
        offered = topics[topic]["topic_metadata"]["offered_qos_profiles"]
        assert [q["reliability"] for q in offered] == ["reliable"]
    assert topics["/chatter"]["topic_metadata"]["type"] == "std_msgs/msg/String"
    with open_reader(recording.bag) as reader:
        for conn in reader.connections:
            assert conn.digest == recording.hashes[conn.topic]
            qos = conn.ext.offered_qos_profiles  # type: ignore[union-attr]
            assert [q.reliability for q in qos] == [QosReliability.RELIABLE]


@pytest.mark.ros
def test_bag_readable_by_mcap_library(recording: Recording) -> None:
    """The independent ``mcap`` reader decodes every message with the stored schemas, and
    finds rosbag2's metadata record with the type hashes."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    (path,) = recording.bag.glob("*.mcap")
    counts: dict[str, int] = {}
    with path.open("rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        summary = reader.get_summary()
        assert summary is not None
        schemas = {s.name: s.encoding for s in summary.schemas.values()}
        assert schemas["sensor_msgs/msg/JointState"] == "ros2msg"
        assert schemas["std_msgs/msg/String"] == "ros2msg"
        for channel in summary.channels.values():
            assert channel.message_encoding == "cdr"
            assert "offered_qos_profiles" in channel.metadata
        positions = []
        for _, channel, _, msg in reader.iter_decoded_messages():
            counts[channel.topic] = counts.get(channel.topic, 0) + 1
            if channel.topic == "/joint_commands":
                positions.append(list(msg.position))
        (record,) = [m for m in reader.iter_metadata() if m.name == "rosbag2"]
    assert counts == {t: len(m) for t, m in recording.published.items()}
    assert positions == [list(m.position) for m in recording.published["/joint_commands"]]
    stored = yaml.safe_load(record.metadata["serialized_metadata"])
    hashes = {
        t["topic_metadata"]["name"]: t["topic_metadata"]["type_description_hash"]
        for t in stored["topics_with_message_count"]
    }
    assert hashes == recording.hashes


@dataclass
class Replay:
    """What ``snake replay`` published, as this process received it: (arrival time,
    message) per topic and /clock, in order; and how long the player says it played [s]."""

    got: dict[str, list[tuple[float, Any]]]
    played_s: float


def _replay(ros: Ros, bag: Path, topics: dict[str, Any], extra: list[str]) -> Replay:
    """Run ``snake replay`` and collect what it publishes."""
    got: dict[str, list[tuple[float, Any]]] = {t: [] for t in [*topics, "/clock"]}
    subs = [
        ros.node.create_subscription(
            cls, topic, lambda m, t=topic: got[t].append((time.monotonic(), m)), 1000
        )
        for topic, cls in [*topics.items(), ("/clock", Clock)]
    ]
    try:
        wait = ["--delay", str(REPLAY_DELAY_S), "--wait-for-subscribers", "1"]
        logs = ros.tmp / f"replay_logs_{bag.name}"
        cmd = ["-c", CLI, "replay", str(bag), *wait, "-o", str(logs)]
        player = ros.start([*cmd, *extra], "replay.log")
        try:
            ros.spin_until(lambda: player.poll() is not None, 40.0, "the replay to finish")
        finally:
            _stop(player)
        end = time.monotonic() + 0.3
        ros.spin_until(lambda: time.monotonic() > end, 2.0, "the last messages")
        assert player.returncode == 0, (ros.tmp / "replay.log").read_text()
    finally:
        for sub in subs:
            ros.node.destroy_subscription(sub)
    log = (logs / "replay_node.log").read_text()
    played = re.search(r"published .* in ([\d.]+) s", log)
    assert played, log
    return Replay(got, float(played.group(1)))


@pytest.mark.ros
def test_replay_round_trip_schedule_and_clock(recording: Recording, ros: Ros) -> None:
    """Published == recorded == replayed per topic; the player is never early (it plays at
    least the bag's span divided by the rate; the schedule itself: test_playback_schedule);
    /clock carries the bag's time. How close to the schedule messages arrive is a
    benchmark: bench/replay.py."""
    stored = _bag_messages(recording.bag)
    types = {
        "/joint_commands": JointState,
        "/sim/joint_states": JointState,
        "/measured/pose": PoseStamped,
        "/diagnostics": DiagnosticArray,
        "/chatter": String,
    }
    replay = _replay(ros, recording.bag, types, ["--rate", str(RATE)])
    got = replay.got
    counts = {t: len(got[t]) for t in types}
    assert counts == {t: len(m) for t, m in recording.published.items()}
    assert [list(m.position) for _, m in got["/joint_commands"]] == [
        list(m.position) for m in recording.published["/joint_commands"]
    ]
    assert [_pose_values(m) for _, m in got["/measured/pose"]] == [
        _pose_values(m) for m in recording.published["/measured/pose"]
    ]
    all_stamps = [s for msgs in stored.values() for s, _ in msgs]
    t0, t1 = min(all_stamps) * 1e-9, max(all_stamps) * 1e-9
    assert replay.played_s >= (t1 - t0) / RATE
    # /clock: the bag's time, never backwards, from its first to its last message
    clock = np.array([m.clock.sec + m.clock.nanosec * 1e-9 for _, m in got["/clock"]])
    assert len(clock) > 100  # 100 Hz of wall time plus one per message
    assert np.all(np.diff(clock) >= 0)
    assert clock[0] == pytest.approx(t0, abs=1e-6)
    assert clock[-1] == pytest.approx(t1, abs=1e-6)


@pytest.mark.ros
def test_replay_feeds_compare_node_the_report_of_the_offline_comparison(ros: Ros) -> None:
    """A bag of both robots (known lag and offset) replayed at rate 2 to compare_node on sim
    time: its report on shutdown equals ``snake compare``'s of the same bag (every message
    arrived: the same sample counts; the same RMS, max and lag)."""
    from viz.test_compare import bag_events, write_bag

    bag = ros.tmp / "both_robots"
    write_bag(bag, bag_events(np.random.default_rng(3), lag=0.03, offset=0.05))
    offline = compare_bag(bag, ros.tmp / "offline_report", report_robot("robot"), plots=False)
    node_args = ["use_sim_time:=true", f"report_dir:={ros.tmp}", "report_name:=live_report"]
    compare = ros.start(
        [
            "-c",
            "from snake_viz.compare_node import main; main()",
            "--ros-args",
            *(arg for value in node_args for arg in ("-p", value)),
        ],
        "compare_node.log",
    )
    try:
        topics = ["/sim/joint_states", "/measured/joint_states"]
        wait = ["--delay", str(REPLAY_DELAY_S), "--wait-for-subscribers", "1", "--rate", str(RATE)]
        cmd = ["-c", CLI, "replay", str(bag), "--topics", *topics, *wait, "--no-rviz"]
        player = ros.start([*cmd, "-o", str(ros.tmp / "compare_replay_logs")], "replay2.log")
        ros.spin_until(lambda: player.poll() is not None, 60.0, "the replay to finish")
        assert player.returncode == 0, (ros.tmp / "replay2.log").read_text()
    finally:
        assert _stop(compare) == 0, (ros.tmp / "compare_node.log").read_text()
    live = json.loads((ros.tmp / "live_report" / "summary.json").read_text())
    assert live["samples"] == list(offline.samples)
    np.testing.assert_allclose(live["rms_rad"], offline.rms, atol=1e-9)
    np.testing.assert_allclose(live["max_rad"], offline.max, atol=1e-9)
    lags = [np.nan if x is None else x for x in live["lag_s"]]
    np.testing.assert_allclose(lags, offline.lag, atol=1e-9)
    assert np.nanmedian(lags) == pytest.approx(0.03, abs=0.005)  # the injected lag


def _flushed_count(bag: Path) -> int:
    """The message count of the recorder's last flush (its metadata.yaml; 0 before one)."""
    try:
        meta = yaml.safe_load((bag / "metadata.yaml").read_text())
        return int(meta["rosbag2_bagfile_information"]["message_count"])
    except (OSError, yaml.YAMLError, TypeError, KeyError):  # none yet, or being rewritten
        return 0


@pytest.mark.ros
def test_recorder_killed_leaves_bag_readable_to_last_flush(
    ros: Ros, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGKILL mid-run: rosbags' own reader and the mcap library open the bag as it is (no
    repair), and it holds a gap-free prefix of what was published: exactly what the last
    flush before the kill stored. A bag cut inside a record (a kill during a write) does
    not open until ``snake bag repair``, which loses nothing of the complete records."""
    from mcap.reader import make_reader
    from rosbags.rosbag2 import Reader
    from rosbags.rosbag2.errors import ReaderError

    bag = ros.tmp / "killed_bag"
    args = ["-c", "from snake_viz.recorder import main; main()", "--ros-args"]
    params = ["-p", f"output:={bag}", "-p", "flush_period:=0.3", "-p", "topics:=[/joint_commands]"]
    rec = ros.start([*args, *params], "killed.log")
    pub = ros.node.create_publisher(JointState, "/joint_commands", LATCHED)
    try:
        ros.spin_until(lambda: pub.get_subscription_count() > 0, 30.0, "the recorder")
        # 200 Hz until a flush has stored at least 100 messages, then the kill, then 50 more
        start = time.monotonic()
        sent = before_kill = 0
        while before_kill < 100:
            assert time.monotonic() < start + 60.0, f"flushed {before_kill} of {sent}"
            pub.publish(_joint_state(sent))
            sent += 1
            time.sleep(max(0.0, start + sent * 0.005 - time.monotonic()))
            if sent % 10 == 0:
                before_kill = _flushed_count(bag)
        _stop(rec, signal.SIGKILL)
        for i in range(sent, sent + 50):
            pub.publish(_joint_state(i))
    finally:
        _stop(rec, signal.SIGKILL)
        ros.node.destroy_publisher(pub)
    assert rec.returncode == -signal.SIGKILL
    (path,) = bag.glob("*.mcap")
    flushed = yaml.safe_load((bag / "metadata.yaml").read_text())
    flushed_count = flushed["rosbag2_bagfile_information"]["message_count"]
    assert flushed_count >= before_kill

    def raw_count(folder: Path) -> list[float]:
        """The first position of each message, read by rosbags alone (no recovery)."""
        with Reader(folder) as reader:
            return [
                typestore().deserialize_cdr(data, conn.msgtype).position[0]
                for conn, _, data in reader.messages()
            ]

    firsts = raw_count(bag)
    assert firsts == [float(i) for i in range(flushed_count)]  # gap-free, up to the flush
    with path.open("rb") as f:
        assert sum(1 for _ in make_reader(f).iter_messages()) == flushed_count
    assert recover(bag) == []  # nothing to repair
    assert snake_main(["bag", "repair", str(bag)]) == 0
    assert "complete, nothing to repair" in capsys.readouterr().out

    # a kill in the middle of a write: the footer and the end of the last record missing
    cut = ros.tmp / "cut_bag"
    cut.mkdir()
    (cut / "metadata.yaml").write_bytes((bag / "metadata.yaml").read_bytes())
    data = path.read_bytes()
    (cut / "cut_bag.mcap").write_bytes(data[: len(data) - 37 - 5])
    meta = (cut / "metadata.yaml").read_text().replace("killed_bag.mcap", "cut_bag.mcap")
    (cut / "metadata.yaml").write_text(meta)
    with pytest.raises(ReaderError):
        raw_count(cut)
    assert snake_main(["bag", "repair", str(cut)]) == 0
    assert "closed after its last complete record" in capsys.readouterr().out
    assert raw_count(cut) == firsts  # the cut record was an index: no message lost
    assert recover(cut) == []  # idempotent


@pytest.mark.ros
def test_replay_sqlite3_bag_like_ros2_bag_record(ros: Ros) -> None:
    """A bag in the other layout ``ros2 bag record`` writes (sqlite3 storage, metadata v8,
    written here with rosbags' own serialiser) replays with its timing; ``--topics`` plays
    only the topics it names."""
    bag = ros.tmp / "sqlite_bag"
    store = typestore()
    joint_state = store.types["sensor_msgs/msg/JointState"]
    header = store.types["std_msgs/msg/Header"]
    stamp = store.types["builtin_interfaces/msg/Time"]
    t0 = 1_700_000_000_000_000_000
    with Writer(bag, version=8, storage_plugin=StoragePlugin.SQLITE3) as writer:
        msgtype = joint_state.__msgtype__
        conns = [
            writer.add_connection(topic, msgtype, typestore=store)
            for topic in ("/measured/joint_states", "/sim/joint_states")
        ]
        for i in range(40):  # 20 Hz for 2 s
            msg = joint_state(
                header(stamp(0, 0), ""), ["a"], np.array([float(i)]), np.array([]), np.array([])
            )
            for conn in conns:
                writer.write(conn, t0 + i * 50_000_000, store.serialize_cdr(msg, msgtype))
    topics = {"/measured/joint_states": JointState, "/sim/joint_states": JointState}
    replay = _replay(ros, bag, topics, ["--rate", "4", "--topics", "/measured/joint_states"])
    assert replay.got["/sim/joint_states"] == []
    msgs = replay.got["/measured/joint_states"]
    assert [m.position[0] for _, m in msgs] == [float(i) for i in range(40)]
    assert replay.played_s >= 39 * 0.05 / 4  # the bag's timing, at rate 4: never early
    # /clock: the bag's time from its first to its last message, forwards; between the
    # messages (every 50 ms of the bag), ticks every rate / clock_rate = 4 / 100 s of it
    clock = [m.clock.sec * 10**9 + m.clock.nanosec for _, m in replay.got["/clock"]]
    assert clock[0] == t0 and clock[-1] == t0 + 39 * 50_000_000
    assert np.all(np.diff(clock) > 0)
    assert all((c - t0) % 50_000_000 == 0 or (c - t0) % 40_000_000 == 0 for c in clock)
