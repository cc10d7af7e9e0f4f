"""``snake flexible``: bad input stops with one line naming the file and key; a short run
writes the data and figures (docs/flexible.md, "The command")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from snake_bringup.cli import main


def test_a_bad_arm_file_is_one_line_naming_file_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "arm.yaml"
    link = {"kind": "elastic", "length": 0.5, "outer_diameter": 0.03, "young": -1.0}
    path.write_text(yaml.safe_dump({"links": [link]}), encoding="utf-8")
    assert main(["flexible", "--arm", str(path), "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: links[0].young must be" in err, err


def test_zero_modes_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["flexible", "--modes", "0", "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err == "snake: error: --modes must be >= 1, got 0\n", err


def test_a_short_run_writes_data_and_figures(tmp_path: Path) -> None:
    assert main(["flexible", "--t-end", "0.05", "--modes", "1", "-o", str(tmp_path)]) == 0
    data = np.load(tmp_path / "flexible.npz")
    assert data["q_nonlinear"].shape[1] == 4 + 2 * 3
    for name in (
        "fig6_joints",
        "fig7_flexure_xy",
        "fig8_torsion",
        "fig9_flexure_xz",
        "fig10_torques",
    ):
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
