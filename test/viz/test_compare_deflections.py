"""``snake compare`` on a bag with the prediction's elastic links (docs/flexible.md): each
link's largest and RMS tip deflection and twist, from ``/sim/link_deflections``; nothing on a
bag without it. No ROS: the bags are written with rosbags' own Writer (MCAP).

Reference: tip values built from sines over whole periods, whose largest and RMS values are
known in closed form (the tip is the sum of each kind's coordinates, F117).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pytest

from snake_bringup.cli.compare import register
from snake_bringup.comparison import compare_bag
from snake_viz.compare import DEFLECTIONS_TOPIC, MEASURED_TOPIC, SIM_TOPIC, CompareError

JOINTS = ("joint_1", "joint_2")
#: Two elastic links as dynamics_node names their coordinates (link_5 with two xy modes).
MODAL = ("link_5/torsion_1", "link_5/xy_1", "link_5/xy_2", "link_5/xz_1",
         "link_6/torsion_1", "link_6/xy_1", "link_6/xz_1")  # fmt: skip
#: 2 s at 100 Hz: two whole periods of the 1 Hz sines below.
T = np.arange(200) * 0.01


def modal_values(t: np.ndarray) -> np.ndarray:
    """link_5: y = 3 + 1 mm, z = 3 mm, both times sin(2 pi t): its tip 5 mm |sin|, twist
    2 mrad; link_6: y 1 mm, z 0, twist -1 mrad. (N, 7) [m or rad]."""
    s = np.sin(2 * np.pi * t)
    one = np.ones_like(t)
    return np.stack([2e-3 * one, 3e-3 * s, 1e-3 * s, 3e-3 * s, -1e-3 * one, 1e-3 * one, 0 * t], 1)


def write_bag(path: Path, names: tuple[str, ...] | None) -> None:
    """Both joint series (the measurement 0.01 rad off) and, unless ``names`` is None, the
    deflections named ``names`` on /sim/link_deflections."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    types = store.types
    kind = "sensor_msgs/msg/JointState"

    def message(t: float, msg_names: tuple[str, ...], values: np.ndarray) -> bytes:
        sec = math.floor(t)
        stamp = types["builtin_interfaces/msg/Time"](sec=sec, nanosec=round((t - sec) * 1e9))
        header = types["std_msgs/msg/Header"](stamp=stamp, frame_id="")
        msg = types[kind](
            header=header,
            name=list(msg_names),
            position=np.asarray(values, dtype=float),
            velocity=np.zeros(0),
            effort=np.zeros(0),
        )
        return store.serialize_cdr(msg, kind)

    topics = (SIM_TOPIC, MEASURED_TOPIC) + ((DEFLECTIONS_TOPIC,) if names else ())
    modal = modal_values(T)
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conns = {topic: writer.add_connection(topic, kind, typestore=store) for topic in topics}
        for k, t in enumerate(T):
            at = round(t * 1e9) + 1
            q = np.array([0.3 * math.sin(t), 0.2 * math.cos(t)])
            writer.write(conns[SIM_TOPIC], at, message(t, JOINTS, q))
            writer.write(conns[MEASURED_TOPIC], at + 1, message(t, JOINTS, q + 0.01))
            if names:
                writer.write(conns[DEFLECTIONS_TOPIC], at + 2, message(t, names, modal[k]))


def test_snake_compare_reports_each_elastic_link_s_tip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The terminal, summary.md and summary.json give each link's largest and RMS tip
    deflection and twist: link_5's 5 mm and 5 / sqrt(2) mm, 2 mrad; link_6's 1 mm, 1 mrad."""
    bag = tmp_path / "elastic"
    write_bag(bag, MODAL)
    parser = argparse.ArgumentParser(prog="snake")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["compare", str(bag), "-o", str(tmp_path / "r"), "--no-plots"])
    assert args.run(args) == 0
    out = capsys.readouterr().out
    assert f"link deflections ({DEFLECTIONS_TOPIC}, quasi-static): 200 messages over 1.99 s" in out
    assert (
        "link_5: tip deflection max 5.000 mm, RMS 3.536 mm; twist max 2.000 mrad, RMS 2.000 mrad"
        in out
    )
    assert (
        "link_6: tip deflection max 1.000 mm, RMS 1.000 mm; twist max 1.000 mrad, RMS 1.000 mrad"
        in out
    )
    data = json.loads((tmp_path / "r" / "summary.json").read_text())["deflections"]
    assert data["topic"] == DEFLECTIONS_TOPIC and data["samples"] == 200
    assert list(data["links"]) == ["link_5", "link_6"]
    five = data["links"]["link_5"]
    assert five["max_tip_deflection_m"] == pytest.approx(5e-3, rel=1e-12)
    assert five["rms_tip_deflection_m"] == pytest.approx(5e-3 / math.sqrt(2), rel=1e-12)
    assert five["max_tip_twist_rad"] == pytest.approx(2e-3, rel=1e-12)
    assert data["links"]["link_6"]["rms_tip_twist_rad"] == pytest.approx(1e-3, rel=1e-12)
    markdown = (tmp_path / "r" / "summary.md").read_text()
    assert "## Elastic links" in markdown
    assert "- link_5: tip deflection max 5.000 mm, RMS 3.536 mm;" in markdown


def test_a_bag_without_deflections_reports_none(tmp_path: Path) -> None:
    """A rigid robot's bag: no section in the summary, summary.md or summary.json."""
    bag = tmp_path / "rigid"
    write_bag(bag, None)
    summary = compare_bag(bag, tmp_path / "r", None, plots=False)
    assert summary.deflections is None
    assert "link deflections" not in summary.table()
    assert "deflections" not in json.loads((tmp_path / "r" / "summary.json").read_text())
    assert "Elastic links" not in (tmp_path / "r" / "summary.md").read_text()


def test_an_unnamed_elastic_coordinate_is_one_line(tmp_path: Path) -> None:
    """A coordinate whose name says neither link nor kind stops the report in one line."""
    bag = tmp_path / "bad"
    write_bag(bag, (*MODAL[:-1], "link_6/bend_1"))
    line = (
        r"^/sim/link_deflections: elastic coordinate 'link_6/bend_1' is not link/torsion_j, "
        r"link/xy_j or link/xz_j$"
    )
    with pytest.raises(CompareError, match=line):
        compare_bag(bag, tmp_path / "r", None, plots=False)
