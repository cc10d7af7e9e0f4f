"""What ``rosdep install`` puts on Debian 12 runs the features that need no ROS graph: the
library example, ``snake simulate`` on the ground, ``snake sweep --jobs 1``, ``snake optimize
--trials 4`` and ``snake identify --from-bags``, each with the system Python
(``/usr/bin/python3``, not the venv) and Debian's own python3-* packages, the code from this
checkout on ``PYTHONPATH`` as a colcon install would have it on ``sys.path``.

The reference is the same command in the venv (requirements.txt's pins), with the same seed:
the results must be the same numbers. Not to the last bit: numba 0.56 (LLVM 11) and 0.68
compile the same kernels into other instruction orders, which round differently (6e-16
relative in a 2 s crawl's summary, 2e-15 in the optimizer's trials, measured 2026-12-07), so
to 1e-9 relative, far below any change of the model or the gait (1e-3 and more) and far above
the rounding after thousands of steps.

Debian does not package rosbags: ``python3-rosbags-pip`` installs it with pip beside Debian's
packages, with its requirements that those do not meet (all but numpy). Here they go into a
``pip --target`` folder at requirements.txt's pins instead of the system's site-packages,
which CI must not change for the other tests; the Debian packages come from
tools/apt-packages-test.txt (``make test`` installs them).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from snake_bringup.identification.recording import (
    JOINT_STATE,
    MEASURED,
    SERVO_TARGETS,
    _joint_state,
)
from snake_bringup.versions import FLOORS, release
from snake_dynamics.gaits import make_gait
from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import ServoParams
from snake_dynamics.sim.identification import Excitation, Recording, predict
from snake_ros.paths import robot_config
from snake_viz.bag import BagRecorder

pytestmark = [pytest.mark.slow, pytest.mark.distro]

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = "/usr/bin/python3"
#: What the rosdep keys of package.xml resolve to on Debian 12 for these features.
DEBIAN = [
    line
    for line in (ROOT / "tools" / "apt-packages-test.txt").read_text().splitlines()
    if line and not line.startswith("#")
]
#: What the pip rule adds beside them: rosbags and the requirements Debian's packages miss.
PIP_ONLY = ("rosbags", "apsw", "backports.zstd", "lz4", "ruamel.yaml", "typing_extensions")
PIP_OPTIONS = ("-q", "--disable-pip-version-check", "--no-deps")
#: Debian's numba's cache of the compiled kernels.
NUMBA_CACHE = ROOT / "build" / "numba-debian"
#: The relative tolerance of venv against Debian (the module's docstring).
RTOL = 1e-9


class Side:
    """One interpreter with its packages: runs ``python ARGS`` in ``cwd``."""

    def __init__(self, python: str, env: dict[str, str]) -> None:
        self.python, self.env = python, env

    def run(self, *args: str, cwd: Path) -> str:
        done = subprocess.run(
            [self.python, *args],
            cwd=cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"{self.python} {' '.join(args)}:\n{done.stderr[-3000:]}"
        return done.stdout

    def snake(self, *args: str, cwd: Path) -> str:
        return self.run("-m", "snake_bringup.cli", *args, cwd=cwd)


def pinned(names: tuple[str, ...]) -> list[str]:
    """requirements.txt's ``name==version`` lines of these packages."""
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        name, sep, version = line.split("#")[0].strip().partition("==")
        if sep:
            pins[name.lower()] = f"{name}=={version}"
    return [pins[n.lower()] for n in names]


@pytest.fixture(scope="module")
def debian(tmp_path_factory: pytest.TempPathFactory) -> Side:
    """The system Python with Debian's packages and the pip rule's, the checkout on its path
    and its own numba cache (numba caches beside the source, and the venv's numba would
    overwrite a cache of another version's): in build/, shared by the pytest workers and kept
    for the next run, as the venv's is (numba keys it by the source)."""
    missing = [
        p
        for p in DEBIAN
        if subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True
        ).stdout
        != "install ok installed"
    ]
    if not Path(SYSTEM_PYTHON).exists() or missing:
        pytest.skip(f"needs {SYSTEM_PYTHON} and apt-get install {' '.join(missing)}")
    home = tmp_path_factory.mktemp("debian")
    target = home / "pip"
    pip = [sys.executable, "-m", "pip", "--python", SYSTEM_PYTHON, "install", *PIP_OPTIONS]
    subprocess.run(
        [*pip, "--target", str(target), *pinned(PIP_ONLY)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "PYTHONPATH": f"{ROOT}{os.pathsep}{target}",
        "PYTHONNOUSERSITE": "1",
        "NUMBA_CACHE_DIR": str(NUMBA_CACHE),
        "MPLBACKEND": "Agg",
    }
    return Side(SYSTEM_PYTHON, env)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Side:
    """This interpreter (the venv), the checkout on its path, as the other tests run it."""
    home = tmp_path_factory.mktemp("venv")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "PYTHONPATH": str(ROOT)}
    return Side(sys.executable, {**env, "MPLBACKEND": "Agg"})


def both(tmp_path: Path, debian: Side, venv: Side, run: Callable[[Side, Path], Any]) -> Any:
    """``run(side, folder)`` for Debian's side and the venv's, each in its own folder."""
    results = []
    for name, side in (("debian", debian), ("venv", venv)):
        folder = tmp_path / name
        folder.mkdir()
        results.append(run(side, folder))
    return results


def assert_same_numbers(got: Any, want: Any, where: str = "") -> None:
    """Equal structures; floats to :data:`RTOL` relative, everything else exactly."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), where
        for k in want:
            assert_same_numbers(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_same_numbers(g, w, f"{where}[{k}]")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=RTOL, abs=1e-300), where
    else:
        assert got == want, where


def number(text: str) -> float | str:
    """A CSV cell: its float, or the text itself."""
    try:
        return float(text)
    except ValueError:
        return text


def test_the_system_python_imports_debian_s_packages_at_the_floors(debian: Side) -> None:
    """What the other tests run on: Debian's own files, at package.xml's floors (Debian's
    versions are the floors: snake_bringup/versions.py)."""
    names = ["numpy", "scipy", "PyYAML", "numba", "matplotlib", "dask", "distributed"]
    names += ["optuna", "cmaes", "SQLAlchemy", "cryptography"]
    script = (
        "import importlib.metadata as m, json, numpy, numba, scipy, optuna, distributed\n"
        f"print(json.dumps({{n: m.version(n) for n in {names!r}}}))\n"
        "print(json.dumps([x.__file__ for x in (numpy, numba, scipy, optuna, distributed)]))\n"
    )
    versions, files = (
        json.loads(line) for line in debian.run("-c", script, cwd=ROOT).split("\n")[:2]
    )
    assert all(f.startswith("/usr/lib/python3/dist-packages/") for f in files), files
    for name, found in versions.items():
        assert release(found) == release(FLOORS[name].version), (name, found)


def test_the_library_example_prints_the_same_torques(
    tmp_path: Path, debian: Side, venv: Side
) -> None:
    example = [str(ROOT / "examples" / "inverse_dynamics.py"), str(ROOT / "config" / "robot.yaml")]
    outputs = both(tmp_path, debian, venv, lambda side, cwd: side.run(*example, cwd=cwd))
    got, want = (re.findall(r"^(joint_\d+: tau = \S+ N m)$", out, re.M) for out in outputs)
    assert len(want) == 8 and got == want


def test_simulate_on_the_ground_gives_the_same_crawl(
    tmp_path: Path, debian: Side, venv: Side
) -> None:
    """The servo-driven crawl (the robot's servos, its floor), with its plots (matplotlib)."""

    def simulate(side: Side, cwd: Path) -> tuple[dict[str, Any], Any]:
        side.snake("simulate", "--ground", "--duration", "2", "-q", "-o", "out", cwd=cwd)
        assert list((cwd / "out").glob("*.png"))  # the plots, by Debian's matplotlib
        run = np.load(cwd / "out" / "run.npz")
        return json.loads((cwd / "out" / "summary.json").read_text()), {k: run[k] for k in run}

    (summary, run), (summary_venv, run_venv) = both(tmp_path, debian, venv, simulate)
    assert_same_numbers(summary["travel"], summary_venv["travel"], "travel")
    assert run.keys() == run_venv.keys()
    for key, want in run_venv.items():
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(run[key], want, rtol=RTOL, atol=1e-12, err_msg=key)
        else:
            np.testing.assert_array_equal(run[key], want, err_msg=key)


def test_sweep_on_one_worker_gives_the_same_points(
    tmp_path: Path, debian: Side, venv: Side
) -> None:
    """A local Dask cluster of one worker (distributed 2022.12.1 on Debian)."""
    grid = ["--x", "amplitude=0.3:0.9:2", "--y", "frequency=0.5:1.0:2", "--duration", "1"]

    def sweep(side: Side, cwd: Path) -> dict[str, Any]:
        side.snake("sweep", *grid, "--jobs", "1", "-q", "-o", "out", cwd=cwd)
        assert list((cwd / "out").glob("*.png"))
        lines = (cwd / "out" / "points.jsonl").read_text().splitlines()
        return {p["key"]: p for p in map(json.loads, lines)}

    points, points_venv = both(tmp_path, debian, venv, sweep)
    assert sorted(points_venv) == ["0", "1", "2", "3"]
    assert_same_numbers(points, points_venv, "points")


def test_optimize_samples_the_same_trials_and_scores_them_the_same(
    tmp_path: Path, debian: Side, venv: Side
) -> None:
    """Optuna 3.1.0's TPE with seed 0 draws the same 4 start-up trials as the venv's, and
    each scores the same; with its plots (optuna.visualization on matplotlib)."""
    search = ["--param", "phase_lag=0.3:1.0", "--set", "amplitude=0.8", "--set", "frequency=1"]
    search += ["--duration", "1", "--ideal-servos", "--trials", "4", "--seed", "0"]

    def optimize(side: Side, cwd: Path) -> list[dict[str, Any]]:
        side.snake("optimize", *search, "--jobs", "1", "-q", "-o", "out", cwd=cwd)
        with (cwd / "out" / "trials.csv").open() as f:
            rows = [{k: number(v) for k, v in row.items()} for row in csv.DictReader(f)]
        assert list((cwd / "out").glob("*.png"))
        return rows

    trials, trials_venv = both(tmp_path, debian, venv, optimize)
    assert len(trials_venv) == 4
    assert [t["phase_lag"] for t in trials] == [t["phase_lag"] for t in trials_venv]
    assert_same_numbers(trials, trials_venv, "trials")


def write_identification_bags(folder: Path) -> ServoParams:
    """A small recorded set as ``snake identify`` writes it: the first 4 s of the experiment
    and 2 s of the validation gait, the robot's servos being ``true`` (the servo stage's
    body: the tail held, no gravity); returns ``true``."""
    config = robot_config("robot_feedback")
    model = SnakeModel.from_yaml(config)
    model = dataclasses.replace(model, gravity=np.zeros(3), base="fixed", ground=None)
    true = ServoParams(0.024, 0.005, 8.0, 0.4, 0.8, 6.0)
    excitation = Excitation.within(model.joint_limits[:, 0], model.joint_limits[:, 1])
    validation = make_gait("serpenoid", model, amplitude=0.6, frequency=0.8)
    for label, trajectory, seconds in (
        ("experiment", excitation, 4.0),
        ("validation", validation, 2.0),
    ):
        t = 0.0073 + np.arange(0.0, seconds, 0.02)  # a report every 20 ms
        reference = np.array([trajectory.evaluate(x - 0.0073).q for x in t])
        measured = predict(
            model, true, Recording(t, reference, reference, tuple(model.joint_names))
        )
        bag = BagRecorder(folder / f"{label}_bag")
        bag.open()
        for topic in (SERVO_TARGETS, MEASURED):
            bag.add_topic(topic, JOINT_STATE)
        for k, stamp in enumerate(t):
            ns = int(stamp * 1e9)
            bag.write(SERVO_TARGETS, ns, _joint_state(model.joint_names, stamp, reference[k]))
            bag.write(MEASURED, ns, _joint_state(model.joint_names, stamp, measured[k]))
        bag.close()
    return true


def test_identify_from_bags_fits_the_same_servo(tmp_path: Path, debian: Side, venv: Side) -> None:
    """scipy 1.10's least squares on the recorded set finds the servo that made it, as the
    venv's does."""
    bags = tmp_path / "bags"
    bags.mkdir()
    true = write_identification_bags(bags)

    def identify(side: Side, cwd: Path) -> dict[str, Any]:
        side.snake("identify", "--from-bags", str(bags), "--no-plots", "-q", "-o", "out", cwd=cwd)
        fit: dict[str, Any] = json.loads((cwd / "out" / "fit.json").read_text())
        return fit

    fit, fit_venv = both(tmp_path, debian, venv, identify)
    for name, value in dataclasses.asdict(true).items():
        assert fit["params"][name] == pytest.approx(value, rel=1e-6), name
    assert_same_numbers(fit["params"], fit_venv["params"], "params")
    shutil.rmtree(bags)


def test_cluster_certs_writes_the_cluster_s_files(tmp_path: Path, debian: Side) -> None:
    """Debian's cryptography 38.0.4 makes the TLS cluster's CA and certificates (random:
    nothing to compare with the venv's but the files)."""
    debian.snake("cluster-certs", "certs", cwd=tmp_path)
    names = {p.name for p in (tmp_path / "certs").iterdir()}
    assert {"ca.pem", "scheduler.pem", "worker.pem", "client.pem", "client-key.pem"} <= names
