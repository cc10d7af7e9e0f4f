"""Benchmark of the MFM dynamics against Pinocchio and MuJoCo; prints JSON.

Every figure is process time (CPU seconds of this process; every side is single-threaded,
and what other work on a shared machine takes from the cores is not counted), and each
ratio compares figures timed in turn in the same run.

Forward dynamics: median microseconds per call for n = 5, 10, 20, 40, 80 of the literal MFM
(B, M*, N*, F* as printed), the fast MFM (recursive, compiled: the entry that writes into
preallocated arrays, ``recursive.forward_dynamics_into``, like ``pin.aba`` into its data, and
the allocating ``FastModel.forward_dynamics``), ``pin.aba`` and MuJoCo ``mj_forward``
(setting qpos, qvel and qfrc_applied included). Simulation: 10 s at dt = 1 ms, n = 20, fast
MFM ``simulate`` versus MuJoCo's RK4 integrator stepped from Python, passive (tau = 0) and
with a prescribed torque input (median of five runs of each, in turn). The input is sampled
before the loop on both sides, timed with the run: a table at ``stage_times`` for
``simulate``, a row a step set into ``qfrc_applied`` for MuJoCo; ``simulate`` with the same
input as a Python function of t (called at every stage time) is reported too.

Usage: python bench/dynamics.py [--quick] [--output bench/results/dynamics.json]
"""

from __future__ import annotations

import argparse
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout

from report import emit  # bench/report.py (this folder is on sys.path)

import snake_dynamics as sd
from snake_dynamics.mfm import integrators, recursive
from snake_dynamics.urdf import to_urdf

SIZES = [5, 10, 20, 40, 80]


def median_us(fn: Callable[[], object], calls: int, repeats: int = 7) -> float:
    """Median over ``repeats`` blocks of the mean process time per call [us]."""
    fn()
    samples = []
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(calls):
            fn()
        samples.append((time.process_time() - start) / calls * 1e6)
    return statistics.median(samples)


def interleaved_us(
    fns: dict[str, Callable[[], object]], calls: int, repeats: int = 9
) -> dict[str, float]:
    """Per function, the median over ``repeats`` rounds of the mean process time per call
    [us]; each round times every function in turn, so that other work on the machine slows
    them alike and a ratio of two holds when the absolute figures do not."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():
        fn()
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.process_time()
            for _ in range(calls):
                fn()
            samples[name].append((time.process_time() - start) / calls * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


def mujoco_model(model: sd.SnakeModel, rk4: bool = False) -> tuple[mujoco.MjModel, mujoco.MjData]:
    options = '<mujoco><compiler discardvisual="true" fusestatic="false"/></mujoco>'
    xml = re.sub(r"(<robot [^>]*>)", lambda m: m.group(1) + options, to_urdf(model), count=1)
    mm = mujoco.MjModel.from_xml_string(xml)
    mm.opt.gravity[:] = model.gravity
    mm.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    mm.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_LIMIT)
    if rk4:
        mm.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
        mm.opt.timestep = 0.001
    return mm, mujoco.MjData(mm)


def forward_dynamics_cost(n: int, quick: bool, rng: np.random.Generator) -> dict[str, float]:
    """Median cost of one forward-dynamics call at n joints, four implementations."""
    model = sd.SnakeModel.uniform(n, 0.1, 0.1, 0.02)
    q, qd, tau = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    packed = recursive.FastModel(model)
    work, qdd = recursive.workspace(n), np.empty(n)
    into = recursive.forward_dynamics_into
    pm = pin.buildModelFromXML(to_urdf(model))
    pm.gravity.linear[:] = 0.0
    pd = pm.createData()
    mm, md = mujoco_model(model)

    def mj() -> None:
        md.qpos[:] = q
        md.qvel[:] = qd
        md.qfrc_applied[:] = tau
        mujoco.mj_forward(mm, md)

    calls = 200 if quick else 2000
    literal_calls = max(3, (20 if quick else 200) // n)
    fast = interleaved_us(
        {
            "fast_mfm_us": lambda: into(packed.packed, work, q, qd, tau, qdd),
            "fast_mfm_allocating_us": lambda: packed.forward_dynamics(q, qd, tau),
            "pinocchio_aba_us": lambda: pin.aba(pm, pd, q, qd, tau),
            "mujoco_mj_forward_us": mj,
        },
        calls,
    )
    literal = median_us(lambda: sd.forward_dynamics(model, q, qd, tau), literal_calls, 5)
    return {"n": n, "literal_mfm_us": literal, **fast}


def simulation_costs() -> dict[str, float]:
    n, t_end, dt = 20, 10.0, 0.001
    model = sd.SnakeModel.from_yaml(Path(__file__).resolve().parents[1] / "config/snake20.yaml")
    rng = np.random.default_rng(1)
    q0, qd0 = rng.uniform(-0.5, 0.5, n), rng.uniform(-0.5, 0.5, n)
    torque = rng.uniform(-0.01, 0.01, n)
    integrators.simulate(model, q0, qd0, None, 0.01, dt)  # load the compiled kernels

    def by_time(t: float) -> np.ndarray:
        return np.asarray(torque * np.sin(t))

    def mfm_run(tau_input: str) -> float:
        start = time.process_time()
        tau_fn: integrators.TorqueFn | np.ndarray | None = None
        if tau_input == "table":
            tau_fn = np.outer(np.sin(integrators.stage_times(t_end, dt)), torque)
        elif tau_input == "function":
            tau_fn = by_time
        integrators.simulate(model, q0, qd0, tau_fn, t_end, dt)
        return time.process_time() - start

    def mujoco_run(with_input: bool) -> float:
        mm, md = mujoco_model(model, rk4=True)
        md.qpos[:], md.qvel[:] = q0, qd0
        steps = round(t_end / dt)
        start = time.process_time()
        table = np.outer(np.sin(np.arange(steps) * dt), torque) if with_input else None
        for i in range(steps):
            if table is not None:
                md.qfrc_applied[:] = table[i]
            mujoco.mj_step(mm, md)
        return time.process_time() - start

    runs: dict[str, list[float]] = {"mfm_p": [], "mj_p": [], "mfm_i": [], "mj_i": [], "mfm_f": []}
    for _ in range(5):  # in turn, so that other work on the machine slows both alike
        runs["mfm_p"].append(mfm_run("none"))
        runs["mj_p"].append(mujoco_run(False))
        runs["mfm_i"].append(mfm_run("table"))
        runs["mj_i"].append(mujoco_run(True))
        runs["mfm_f"].append(mfm_run("function"))
    mfm_passive, mujoco_passive, mfm_input, mujoco_input, mfm_function = (
        statistics.median(runs[key]) for key in ("mfm_p", "mj_p", "mfm_i", "mj_i", "mfm_f")
    )
    return {
        "n": n,
        "simulated_s": t_end,
        "dt_s": dt,
        "fast_mfm_simulate_passive_s": mfm_passive,
        "mujoco_rk4_passive_s": mujoco_passive,
        "fast_mfm_simulate_with_input_s": mfm_input,
        "mujoco_rk4_with_input_s": mujoco_input,
        "fast_mfm_simulate_with_input_function_s": mfm_function,
        "passive_over_mujoco": mfm_passive / mujoco_passive,
        "with_input_over_mujoco": mfm_input / mujoco_input,
        "with_input_function_over_mujoco": mfm_function / mujoco_input,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (smoke run)")
    parser.add_argument("--output", type=Path, default=Path("bench/results/dynamics.json"))
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    fd = []
    for n in SIZES:
        fd.append(forward_dynamics_cost(n, args.quick, rng))
        print(f"n = {n}: {fd[-1]}", file=sys.stderr)
    report = {
        "machine": {"python": platform.python_version(), "processor": platform.machine()},
        "versions": {"pinocchio": pin.__version__, "mujoco": mujoco.__version__},
        "forward_dynamics": fd,
        "fast_over_pinocchio": {str(r["n"]): r["fast_mfm_us"] / r["pinocchio_aba_us"] for r in fd},
        "allocating_over_pinocchio": {
            str(r["n"]): r["fast_mfm_allocating_us"] / r["pinocchio_aba_us"] for r in fd
        },
        "fast_growth_80_over_20": fd[-1]["fast_mfm_us"] / fd[2]["fast_mfm_us"],
        "simulation_10s": simulation_costs(),
    }
    emit(report, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
