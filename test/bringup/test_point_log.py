"""``snake sweep``'s resume file (:class:`snake_bringup.cluster.PointLog`): what is on disk is
what a resume runs from, and what an interrupted sweep reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from snake_bringup.cluster import ClusterError, PointLog

STUDY = {"robot": "robot", "gait": "serpenoid", "duration_s": 4.0}


def test_a_line_written_but_not_yet_counted_is_counted_on_reload(tmp_path: Path) -> None:
    """A Ctrl-C between the write and the count (inside ``append``): reload counts it."""
    log = PointLog(tmp_path, STUDY)
    log.append("0", {"params": {"amplitude": 0.3}})
    with log.path.open("a") as f:  # as append writes it, interrupted before it counts it
        f.write(json.dumps({"key": "1", "params": {"amplitude": 0.9}}) + "\n")
    assert list(log.records) == ["0"]
    assert list(log.reload()) == ["0", "1"] and list(log.records) == ["0", "1"]


def test_a_torn_last_line_is_cut_and_the_rest_kept(tmp_path: Path) -> None:
    log = PointLog(tmp_path, STUDY)
    log.append("0", {"params": {}})
    with log.path.open("a") as f:
        f.write('{"key": "1", "par')  # a crash inside the write
    assert list(PointLog(tmp_path, STUDY).records) == ["0"]
    assert log.path.read_text().count("\n") == 1 and log.path.read_text().endswith("\n")


def test_another_study_s_folder_is_refused(tmp_path: Path) -> None:
    PointLog(tmp_path, STUDY)
    with pytest.raises(ClusterError, match=r"duration_s: 4.0 there, 2.0 here"):
        PointLog(tmp_path, {**STUDY, "duration_s": 2.0})
