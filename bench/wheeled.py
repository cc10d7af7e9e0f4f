"""The wheeled snake (docs/mfm.md eqs. 401-414) against Tavakoli Nia et al.'s Tables I-III.

* Operation counts: one evaluation of ż by Kane's recursions, counted by running the code
  on counting scalars (``wheeled_snake.kane_operation_count``), against the paper's
  Table I (its printed M and A labels swapped back, as the errata say).
* Table II (n = 3, T_k = sin(t)/(n-k) N m, θ_k = π(-1)^k/6, at rest) and Table III
  (n = 30, T_k = 1 N m, straight at rest, 100 s): both formulations with scipy's DOP853 at
  ``--tolerance``; the energy residual S(t) = E(t) - E(0) - work (eq. 414) and the wheels'
  lateral velocities, as the paper reports precision; wall time.
* Single against double precision, as the paper's figures 4 and 5 do: each formulation
  computed in numpy.float32 and in float throughout, each integrated by fixed-step RK4 at
  ``--dt`` on the same scenario; the largest difference of the headings.
* CPU time of one evaluation of ż against n, both formulations (best of ``--repeat``
  timeit rounds), and their ratio (the paper's figures 2 and 3).

Figures: docs/img/wheeled-energy.png (S(t) and the lateral velocities, Table III),
docs/img/wheeled-precision.png (single against double precision, Table III) and
docs/img/wheeled-cpu.png (CPU time and ratio against n).

    python bench/wheeled.py [--tolerance 1e-10] [--table3-seconds 100] [--dt 0.01]
        [--repeat 5] [--sizes 2 3 5 10 20 30 50 100] [--output FILE]
"""

from __future__ import annotations

import argparse
import functools
import math
import platform
import sys
import time
import timeit
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout

from report import emit  # bench/report.py (this folder is on sys.path)

from snake_dynamics.planar import wheeled as ws

IMG = Path(__file__).resolve().parents[1] / "docs" / "img"


def paper_table_i(n: int) -> dict[str, float]:
    """Table I's counts, the printed M and A labels swapped back (errata)."""
    return {
        "kane_multiplications": 7.5 * n * n + 48.5 * n - 21,
        "kane_additions": 3 * n * n + 24 * n - 27,
        "lagrange_multiplications": 3 * n**3 + 15.5 * n * n + 19.5 * n - 11,
        "lagrange_additions": 1.5 * n**3 + 11 * n * n + 15.5 * n - 2,
    }


def operation_counts(sizes: Sequence[int]) -> dict[str, Any]:
    """Ours (counted) against Table I at each n, and ours as a formula in n."""
    rng = np.random.default_rng(2005)
    rows = []
    for n in sizes:
        snake = ws.WheeledSnake.uniform(n)
        count, _ = ws.kane_operation_count(snake, rng.normal(size=n + 4), rng.normal(size=n - 1))
        rows.append(
            {
                "n": n,
                "additions": count.additions,
                "multiplications": count.multiplications + count.divisions,
                "divisions": count.divisions,
                "sin_cos": count.functions,
                "paper": paper_table_i(n),
            }
        )
    first, second = rows[0], rows[1]
    dn = second["n"] - first["n"]
    formula = {}
    for key in ("additions", "multiplications", "sin_cos"):
        slope = (second[key] - first[key]) // dn
        formula[key] = f"{slope} n {first[key] - slope * first['n']:+d}"
    return {"rows": rows, "ours_formula": formula}


def table_ii() -> tuple[
    ws.WheeledSnake, Callable[[float], NDArray[np.float64]], NDArray[np.float64]
]:
    """The paper's Table II scenario: n = 3."""
    n = 3
    snake = ws.WheeledSnake.uniform(n)
    k = np.arange(1, n)
    theta = math.pi * (-1.0) ** np.arange(1, n + 1) / 6.0
    return snake, lambda t: np.sin(t) / (n - k), ws.initial_state(snake, theta)


def table_iii() -> tuple[
    ws.WheeledSnake, Callable[[float], NDArray[np.float64]], NDArray[np.float64]
]:
    """The paper's Table III scenario: n = 30, 1 N m on every joint, straight at rest."""
    n = 30
    snake = ws.WheeledSnake.uniform(n)
    return snake, lambda t: np.ones(n - 1), ws.initial_state(snake, np.zeros(n))


def run_both(name: str, scenario: Any, seconds: float, tolerance: float) -> dict[str, Any]:
    """Both formulations on one scenario: S(t), lateral velocities, wall time."""
    snake, torque, z0 = scenario
    out: dict[str, Any] = {"scenario": name, "n": snake.n, "seconds": seconds, "runs": {}}
    for method in ("kane", "lagrange"):
        print(f"  {name}: {method} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        run = ws.simulate(
            snake, torque, z0, seconds, method=method, samples=501, rtol=tolerance, atol=tolerance
        )
        wall = time.perf_counter() - start
        out["runs"][method] = {
            "wall_s": round(wall, 3),
            "max_abs_S_J": float(np.abs(run.energy_residual).max()),
            "max_energy_J": float(run.energy.max()),
            "max_lateral_m_s": float(np.abs(run.lateral).max()),
            "_run": run,
        }
    return out


def rk4_headings(
    scenario: Any, seconds: float, dt: float, dtype: type[np.floating[Any]], method: str
) -> NDArray[np.float64]:
    """θ_k(t) by fixed-step RK4 of one formulation computed in ``dtype`` throughout
    (Kane: :func:`ws.kane_rate` on scalars of that type; Lagrange: its arrays), (T, n)."""
    snake, torque, z0 = scenario
    n = snake.n
    h = dtype(dt)
    if method == "kane":
        constants = ws.KaneConstants.of(snake, dtype)
        y = np.asarray(z0, dtype=dtype)

        def rate(t: float, y: NDArray[Any]) -> NDArray[Any]:
            tau = list(np.asarray(torque(t), dtype=dtype))
            return np.array(ws.kane_rate(constants, list(y), tau, np.cos, np.sin), dtype=dtype)

        headings = slice(2, n + 2)
    else:
        y = ws.full_state(snake, z0).astype(dtype)

        def rate(t: float, y: NDArray[Any]) -> NDArray[Any]:
            return ws.lagrange_derivative(snake, y, np.asarray(torque(t), dtype=dtype))

        headings = slice(0, n)
    out = [y[headings].astype(float)]
    for i in range(round(seconds / dt)):
        t = i * dt
        k1 = rate(t, y)
        k2 = rate(t + dt / 2, y + h / 2 * k1)
        k3 = rate(t + dt / 2, y + h / 2 * k2)
        k4 = rate(t + dt, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        out.append(y[headings].astype(float))
    return np.array(out)


def precision(name: str, scenario: Any, seconds: float, dt: float) -> dict[str, Any]:
    """Single against double precision, each formulation, RK4 at dt: the largest heading
    difference, over the whole run and over its first 5 s."""
    out: dict[str, Any] = {"scenario": name, "dt_s": dt, "seconds": seconds}
    for method in ("kane", "lagrange"):
        print(f"  {name}: {method} float32 against float64 ...", file=sys.stderr, flush=True)
        single = rk4_headings(scenario, seconds, dt, np.float32, method)
        double = rk4_headings(scenario, seconds, dt, np.float64, method)
        diff = np.abs(single - double).max(axis=1)
        early = diff[: round(min(seconds, 5.0) / dt) + 1]
        out[method] = {
            "max_heading_difference_rad": float(diff.max()),
            "first_5_s_max_heading_difference_rad": float(early.max()),
            "_difference": diff,
        }
    return out


def cpu_time(sizes: Sequence[int], repeat: int) -> list[dict[str, float]]:
    """Best time of one evaluation of ż per formulation, at each n."""
    rng = np.random.default_rng(3)
    rows = []
    for n in sizes:
        snake = ws.WheeledSnake.uniform(n)
        z = ws.initial_state(snake, rng.uniform(-1, 1, n), rng.normal(size=2))
        s = ws.full_state(snake, z)
        tau = rng.normal(size=n - 1)
        row: dict[str, float] = {"n": n}
        for method, call in (
            ("kane", functools.partial(ws.kane_derivative, snake, z, tau)),
            ("lagrange", functools.partial(ws.lagrange_derivative, snake, s, tau)),
        ):
            timer = timeit.Timer(call)
            number, _ = timer.autorange()
            row[f"{method}_us"] = min(timer.repeat(repeat, number)) / number * 1e6
        row["ratio"] = row["lagrange_us"] / row["kane_us"]
        rows.append(row)
        print(f"  cpu n={n}: {row['kane_us']:.1f} / {row['lagrange_us']:.1f} us", file=sys.stderr)
    return rows


def plot_energy(table: dict[str, Any], path: Path) -> None:
    """|S(t)| and the largest lateral wheel velocity against t, both formulations."""
    fig, (ax_s, ax_l) = plt.subplots(1, 2, figsize=(10, 3.8))
    for method, style in (("kane", "-"), ("lagrange", "--")):
        run = table["runs"][method]["_run"]
        ax_s.semilogy(run.t, np.abs(run.energy_residual) + 1e-18, style, label=method)
        ax_l.semilogy(run.t, np.abs(run.lateral).max(axis=1) + 1e-18, style, label=method)
    ax_s.set(xlabel="t [s]", ylabel="|S(t)| [J]", title=f"energy residual, n = {table['n']}")
    ax_l.set(xlabel="t [s]", ylabel="max_k |n_k · v_k| [m/s]", title="lateral wheel velocity")
    for ax in (ax_s, ax_l):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_precision(result: dict[str, Any], path: Path) -> None:
    """max_k |θ_k(float32) - θ_k(float64)| against t, both formulations."""
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for method, style in (("kane", "-"), ("lagrange", "--")):
        diff = result[method]["_difference"]
        t = np.arange(diff.size) * result["dt_s"]
        ax.semilogy(t, diff + 1e-12, style, label=method)
    ax.set(
        xlabel="t [s]",
        ylabel="max_k |θ_k single - θ_k double| [rad]",
        title=f"single against double precision, {result['scenario']}",
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_cpu(rows: list[dict[str, float]], path: Path) -> None:
    """CPU time per evaluation against n, and the Lagrange/Kane ratio."""
    n = [r["n"] for r in rows]
    fig, (ax_t, ax_r) = plt.subplots(1, 2, figsize=(10, 3.8))
    ax_t.loglog(n, [r["kane_us"] for r in rows], "o-", label="Kane, recursive O(n)")
    ax_t.loglog(n, [r["lagrange_us"] for r in rows], "s--", label="Lagrange with multipliers")
    ax_t.set(xlabel="links n", ylabel="one evaluation of the state rate [µs]")
    ax_r.plot(n, [r["ratio"] for r in rows], "o-")
    ax_r.set(xlabel="links n", ylabel="Lagrange / Kane CPU time")
    for ax in (ax_t, ax_r):
        ax.grid(True, which="both", alpha=0.3)
    ax_t.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tolerance", type=float, default=1e-10, help="DOP853 rtol = atol")
    parser.add_argument("--table2-seconds", type=float, default=10.0)
    parser.add_argument("--table3-seconds", type=float, default=100.0)
    parser.add_argument("--dt", type=float, default=0.01, help="RK4 step of the precision runs")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2, 3, 5, 10, 20, 30, 50, 100])
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)

    counts = operation_counts(sorted({2, 3, 12, 20, *args.sizes}))
    tables = [
        run_both("Table II", table_ii(), args.table2_seconds, args.tolerance),
        run_both("Table III", table_iii(), args.table3_seconds, args.tolerance),
    ]
    precisions = [
        precision("Table II", table_ii(), args.table2_seconds, args.dt),
        precision("Table III", table_iii(), args.table3_seconds, args.dt),
    ]
    cpu = cpu_time(args.sizes, args.repeat)
    IMG.mkdir(parents=True, exist_ok=True)
    plot_energy(tables[1], IMG / "wheeled-energy.png")
    plot_cpu(cpu, IMG / "wheeled-cpu.png")
    plot_precision(precisions[1], IMG / "wheeled-precision.png")
    for result in precisions:
        for method in ("kane", "lagrange"):
            del result[method]["_difference"]
    for table in tables:
        for run in table["runs"].values():
            del run["_run"]
    emit(
        {
            "benchmark": "wheeled",
            "operation_counts": counts,
            "tables": tables,
            "single_vs_double": precisions,
            "cpu_time": cpu,
            "figures": [
                "docs/img/wheeled-energy.png",
                "docs/img/wheeled-cpu.png",
                "docs/img/wheeled-precision.png",
            ],
            "machine": {"python": platform.python_version(), "cpu": platform.processor()},
        },
        args.output,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
