"""How well ``snake identify`` recovers emulated robots, as JSON on stdout.

For each seed: draws a plant within the realistic ranges (snake_dynamics.sim.plant.random_plant),
runs ``snake identify --emulate`` on it (the firmware ELF in simavr, the plant in lock-step,
the driver's link in real time), and compares the fitted servo with the plant's (torques
relative to the config's body: divided by the plant's mass scale; the dead time after the
pulse). Reports each parameter's relative error per seed and the worst over the seeds, the
validation gait's RMS error before and after, and the wall time. With ``--floor`` the plant
lies on a floor drawn at random too (``random_plant(rng, floor=True)``: the same servo) and
the floor stage follows: the friction coefficients' relative errors and the validation
crawl's predicted travel against the measured, with the config's floor and the fitted one,
and the held-out crawls (two gaits neither fit saw, 15 s each) predicted with the config,
the identified overlay and the plant's truth: joint RMS, travel error and path RMS.

    python bench/identify.py [--seeds 1 2 3 4 5] [--floor] [--keep DIR] [--output FILE]

``--keep DIR`` keeps each seed's plant file and ``snake identify`` folder there
(``DIR/identify-<seed>``: its bags, report and overlay; ``bench/floor_grid.py`` reads it).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml
from report import emit  # bench/report.py (this folder is on sys.path)

from snake_dynamics.sim import random_plant

BODY = {"stiffness", "damping", "stall_torque"}
#: ``snake identify``'s line at a fit's end (``commands.clocked``).
DONE = re.compile(r"\[identify\] (.+) done: (\d+) predictions in ([\d.]+) s, ([\d.]+) s CPU")


def run_timed(cmd: list[str]) -> tuple[int, list[str], dict[str, object]]:
    """Run ``snake identify`` (``cmd``), stamping its progress lines as they come: its exit
    code, its stderr lines, and where the time went (module docstring)."""
    start = time.monotonic()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert child.stderr is not None
    lines, takes_end, fits = [], 0.0, {}
    for line in child.stderr:
        lines.append(line.rstrip("\n"))
        if line.rstrip().endswith("_bag"):
            takes_end = time.monotonic() - start
        elif match := DONE.match(line):
            what, count, wall, cpu = match.groups()
            fits[what] = {"predictions": int(count), "wall_s": float(wall), "cpu_s": float(cpu)}
    code = child.wait()
    wall = time.monotonic() - start
    timing = {
        "wall_s": round(wall, 1),
        "takes_s": round(takes_end, 1),
        "after_takes_s": round(wall - takes_end, 1),
        **fits,
    }
    return code, lines, timing


def floor_errors(doc: dict[str, object], floor: dict[str, object]) -> dict[str, object]:
    """fit.json's ``floor`` entry against the plant's floor: relative errors of the fitted
    coefficients (``floor["fitted"]``), and the validation crawl's predicted travel relative
    to the measured."""
    ground = doc["ground"]
    assert isinstance(ground, dict)
    fitted = floor["ground"]
    validation = floor["validation"]
    assert isinstance(fitted, dict) and isinstance(validation, dict)
    measured = validation["travel_measured_m"]
    return {
        "relative_error": {k: round(fitted[k] / ground[k] - 1.0, 4) for k in floor["fitted"]},
        "travel_measured_mm": round(measured * 1e3, 1),
        "travel_error": {
            which: round(validation[which]["travel"] / measured - 1.0, 4)
            for which in ("before", "after")
        },
        "validation_rms_mm": {
            which: round(validation[which]["rms"] * 1e3, 2) for which in ("before", "after")
        },
    }


def one(seed: int, folder: Path, floor: bool, held_out: bool) -> dict[str, object]:
    """Identify the plant of ``seed`` (on a floor with ``floor``, the held-out crawls with
    ``held_out``); its errors and timings."""
    doc = random_plant(np.random.default_rng(seed), floor=floor)
    servo, mass_scale = doc["servo"]["defaults"], float(doc["mass_scale"])  # type: ignore[index]
    plant = folder / f"plant-{seed}.yaml"
    plant.write_text(yaml.safe_dump(doc))
    out = folder / f"identify-{seed}"
    cmd = [sys.executable, "-m", "snake_bringup.cli", "identify", "--emulate", "--plant"]
    cmd += [str(plant), "-o", str(out), "--no-plots", *(["--held-out"] if held_out else [])]
    code, lines, timing = run_timed(cmd)
    if code != 0:
        return {"seed": seed, "failed": lines[-1:]}
    fit = json.loads((out / "fit.json").read_text())
    errors = {
        name: fit["params"][name] / (value / (mass_scale if name in BODY else 1.0)) - 1.0
        for name, value in servo.items()
        if name != "dead_time"
    }
    before = math.sqrt(float(np.mean(np.square(fit["validation_rms_before_rad"]))))
    after = math.sqrt(float(np.mean(np.square(fit["validation_rms_after_rad"]))))
    return {
        "seed": seed,
        "relative_error": {k: round(v, 4) for k, v in errors.items()},
        "dead_time_after_pulse_error_ms": round(
            (fit["dead_time_after_pulse"] - servo["dead_time"]) * 1e3, 2
        ),
        "validation_rms_deg": {
            "before": round(math.degrees(before), 3),
            "after": round(math.degrees(after), 3),
        },
        "improvement": round(before / after, 2),
        "fit_evaluations": fit["evaluations"],
        **({"floor": floor_errors(doc, fit["floor"])} if floor else {}),
        **({"held_out": held_out_errors(fit)} if "held_out" in fit else {}),
        "time": timing,
    }


def held_out_errors(fit: dict[str, object]) -> dict[str, object]:
    """fit.json's held-out crawls: per crawl and prediction, the joints' RMS [deg], the
    travel's error relative to the measured and the path's RMS [mm]."""
    crawls = fit.get("held_out") or {}
    assert isinstance(crawls, dict)
    out: dict[str, object] = {}
    for label, row in crawls.items():
        measured = row["measured_travel"]
        out[label] = {
            name: {
                "joint_rms_deg": round(math.degrees(p["joint_rms"]), 2),
                "travel_error": round(p["travel"] / measured - 1.0, 4),
                "path_rms_mm": round(p["path_rms"] * 1e3, 1),
            }
            for name, p in row.items()
            if name != "measured_travel"
        }
    return out


def worst_floor(runs: list[dict[str, object]]) -> dict[str, float]:
    """The largest |relative error| over the runs of each floor coefficient, and of the
    validation travel predicted with the fitted floor."""
    floors = [r["floor"] for r in runs]
    assert all(isinstance(f, dict) for f in floors)
    worst = {
        k: max(abs(f["relative_error"][k]) for f in floors)  # type: ignore[index]
        for k in ("mu_along", "mu_across")
    }
    worst["travel"] = max(abs(f["travel_error"]["after"]) for f in floors)  # type: ignore[index]
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--floor", action="store_true", help="plants on random floors too")
    parser.add_argument("--held-out", action="store_true", help="with --floor: held-out crawls")
    parser.add_argument("--keep", type=Path, help="keep the plants and the runs' folders here")
    parser.add_argument("--output", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) if args.keep is None else args.keep
        folder.mkdir(parents=True, exist_ok=True)
        runs = []
        for seed in args.seeds:
            runs.append(one(seed, folder, args.floor, args.held_out))
            print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    ok = [r for r in runs if "relative_error" in r]
    worst = {
        k: max(abs(r["relative_error"][k]) for r in ok)  # type: ignore[index]
        for k in (ok[0]["relative_error"] if ok else {})  # type: ignore[union-attr]
    }
    emit(
        {
            "runs": runs,
            "worst_relative_error": worst,
            "worst_dead_time_error_ms": max(
                (abs(r["dead_time_after_pulse_error_ms"]) for r in ok),
                default=None,  # type: ignore[arg-type]
            ),
            "least_improvement": min((r["improvement"] for r in ok), default=None),  # type: ignore[type-var]
            "failed": len(runs) - len(ok),
            **({"worst_floor": worst_floor(ok)} if args.floor else {}),
        },
        args.output,
    )


if __name__ == "__main__":
    main()
