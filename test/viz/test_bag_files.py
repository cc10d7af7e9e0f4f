"""Bags and the replay graph without ROS 2: the player's schedule, a bag a kill leaves
behind, bad bags and arguments, ``snake replay --dry-run`` against the replay graph, message
definitions from installed .msg files.

References: hand-computed schedules, the rosbags reader, and the replay graph itself (the CLI
must start exactly its nodes). The live record and replay tests are in test_bags.py;
replay.launch.py's is in test/bringup/test_launch.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from snake_bringup.cli import main as snake_main
from snake_bringup.graph import GraphError, replay_graph
from snake_viz.bag import BagError, open_reader, playback_schedule, recover, typestore
from snake_viz.defaults import REPLAY_RATES


def test_playback_schedule() -> None:
    """Messages are due at their bag offset divided by the rate; /clock ticks every
    1 / clock_rate of play, carrying the bag's time then, before the messages due after
    them; none without a clock rate."""
    s = 7 * 10**9
    bag = [(s, "a"), (s + 300_000_000, "b"), (s + 300_000_000, "c"), (s + 1_100_000_000, "d")]
    events = list(playback_schedule(bag, s, rate=2.0, clock_rate=4.0))
    assert [(clock, item) for _, clock, item in events] == [
        (s, "a"),
        (s, None),  # a tick due at once (replay_node skips an unchanged /clock)
        (s + 300_000_000, "b"),
        (s + 300_000_000, "c"),
        (s + 500_000_000, None),  # 0.25 s of play: 0.5 s of the bag at rate 2
        (s + 1_000_000_000, None),
        (s + 1_100_000_000, "d"),
    ]
    assert [due for due, _, _ in events] == pytest.approx([0, 0, 0.15, 0.15, 0.25, 0.5, 0.55])
    dues = [0, 0.6, 0.6, 2.2]
    assert list(playback_schedule(bag, s, rate=0.5, clock_rate=0.0)) == [
        (pytest.approx(due), clock, item) for due, (clock, item) in zip(dues, bag, strict=True)
    ]


def test_a_full_chunk_between_flushes_leaves_the_bag_readable(tmp_path: Path) -> None:
    """rosbags writes a chunk of its own once 1 MiB is pending: the bag ends after it at once
    (metadata.yaml too), so a kill before the next flush loses only the later messages."""
    from rosbags.rosbag2 import Reader

    from snake_viz.bag import BagRecorder

    store = typestore()
    string = store.types["std_msgs/msg/String"]
    big = [
        bytes(store.serialize_cdr(string(data=f"{i}" * 400_000), string.__msgtype__))
        for i in range(1, 4)
    ]
    recorder = BagRecorder(tmp_path / "bag")
    recorder.open()
    recorder.add_topic("/chatter", "std_msgs/msg/String")
    for i, data in enumerate(big):
        recorder.write("/chatter", i + 1, data)  # the third passes 1 MiB: a chunk of three
    recorder.write("/chatter", 10, big[0])  # pending in memory, lost in a kill now
    with Reader(tmp_path / "bag") as reader:  # no close, no flush: as after a SIGKILL
        got = [store.deserialize_cdr(d, c.msgtype).data[0] for c, _, d in reader.messages()]
    assert got == ["1", "2", "3"]
    recorder.close()
    with Reader(tmp_path / "bag") as reader:
        assert reader.message_count == 4


def test_bad_bags_and_arguments(tmp_path: Path) -> None:
    """One-line errors naming the fix; the replay graph wires the bag into the player."""
    with pytest.raises(BagError, match="no such bag"), open_reader(tmp_path / "missing"):
        pass
    (tmp_path / "empty").mkdir()
    with pytest.raises(BagError, match=r"no metadata\.yaml"), open_reader(tmp_path / "empty"):
        pass
    with pytest.raises(BagError, match=r"no \.mcap file"):
        recover(tmp_path / "empty")
    with pytest.raises(GraphError, match="bag is required"):
        replay_graph("")
    with pytest.raises(GraphError, match="rate"):
        replay_graph("x", "fast")
    player, *others = replay_graph(str(tmp_path / "b"), "2", loop=True, rviz=False)
    assert player.executable == "replay_node"
    assert player.parameters == ({"bag": str(tmp_path / "b"), "rate": 2.0, "loop": True},)
    assert all(dict(spec.parameters[0]).get("use_sim_time") is True for spec in others)


def test_replay_rate_limits_are_one_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The graph (hence replay.launch.py and ``snake replay``) takes the rates replay_node
    declares, REPLAY_RATES, and refuses the others in one line."""
    low, high = REPLAY_RATES
    for rate in (low, high, str(high)):
        params = replay_graph(str(tmp_path), rate, rviz=False)[0].parameters[0]
        assert isinstance(params, dict) and params["rate"] == float(rate)
    for bad in (low / 2, high * 1.01, "inf", "nan", "fast"):
        with pytest.raises(GraphError, match=f"rate must be a number from {low:g} to {high:g}"):
            replay_graph(str(tmp_path), bad)
    assert snake_main(["replay", str(tmp_path), "--rate", f"{high * 2:g}", "--dry-run"]) == 1
    assert "rate must be a number from" in capsys.readouterr().err


def test_snake_replay_runs_the_replay_graph(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``snake replay --dry-run`` prints the commands of replay_graph's nodes, with the
    options in the player's parameters (what replay.launch.py starts, too)."""
    bag, out = tmp_path / "bag", tmp_path / "logs"
    args = ["--rate", "2", "--loop", "--topics", "/chatter", "--no-rviz", "--dry-run", "-o"]
    assert snake_main(["replay", str(bag), *args, str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    graph = replay_graph(
        str(bag),
        2.0,
        loop=True,
        rviz=False,
        topics=["/chatter"],
        delay=1.0,
        wait_for_subscribers=0,
    )
    assert graph[0].parameters[0] == {
        "bag": str(bag),
        "rate": 2.0,
        "loop": True,
        "topics": ["/chatter"],
        "delay": 1.0,
        "wait_for_subscribers": 0,
    }
    assert len(lines) == len(graph)
    for spec, line in zip(graph, lines, strict=True):
        if line.startswith("#"):
            assert spec.optional and spec.full_name in line and "skipped" in line
        else:
            assert f"__node:={spec.name}" in line and f"--params-file {out}/params" in line
    assert "__node:=replay_node" in lines[0]
    assert not out.exists()  # a dry run writes nothing


def test_types_missing_from_the_store_come_from_installed_msg_files(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With an empty rosbags type store, definitions and RIHS01 hashes come from the .msg
    files under AMENT_PREFIX_PATH (nested types too) and equal the store's."""
    from rosbags.typesys import Stores, get_typestore

    import snake_viz.bag as bag_module

    expected = bag_module.message_definition("sensor_msgs/msg/JointState")
    empty = get_typestore(Stores.EMPTY)
    monkeypatch.setattr(bag_module, "typestore", lambda: empty)
    monkeypatch.setenv("AMENT_PREFIX_PATH", sys.prefix)
    assert bag_module.message_definition("sensor_msgs/msg/JointState")[1] == expected[1]
    with pytest.raises(BagError, match=r"foo_msgs/msg/Bar\.msg"):
        bag_module.message_definition("foo_msgs/msg/Bar")
