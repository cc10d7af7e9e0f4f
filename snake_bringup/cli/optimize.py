"""``snake optimize``: its options, then one call of
:func:`snake_bringup.optimization.optimize` (the study: an Optuna search over a gait's
parameters on the ground for the fastest or the cheapest gait, on a Dask cluster)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..optimization import DEFAULT_RANGES, DIRECTIONS, SAMPLERS, optimize, parse_range
from .options import (
    cluster_options,
    gait_option,
    no_plots_option,
    output_option,
    quiet_option,
    robot_option,
    study_options,
)
from .sweep import ground_runs

if TYPE_CHECKING:
    from .options import Subparsers


def register(sub: Subparsers) -> None:
    """Add ``snake optimize`` to the ``snake`` command."""
    p = sub.add_parser(
        "optimize", help="search a gait's parameters for the fastest or cheapest gait on the ground"
    )
    robot_option(p)
    gait_option(p)
    p.add_argument(
        "--param",
        action="append",
        metavar="NAME=LOW:HIGH",
        help="a searched parameter, repeatable (default: "
        f"{' and '.join(DEFAULT_RANGES)}; see `snake gaits`)",
    )
    p.add_argument(
        "--objective",
        choices=sorted(DIRECTIONS),
        default="speed",
        help="maximise the mean speed, or minimise the cost of transport (default: speed)",
    )
    p.add_argument(
        "--sampler",
        choices=SAMPLERS,
        default="tpe",
        help="Optuna's TPE, or CMA-ES (continuous parameters) (default: tpe)",
    )
    p.add_argument(
        "--trials",
        type=int,
        default=50,
        help="the study's total trials, those already stored included (default: 50)",
    )
    p.add_argument("--seed", type=int, default=0, help="the sampler's seed (default: 0)")
    study_options(p, "trial")
    output_option(
        p,
        "results folder, with the study in its study.db (default: runs/optimize-...); "
        "the same command resumes the study",
    )
    p.add_argument(
        "--storage",
        metavar="URL",
        help="the study's Optuna storage instead of study.db (an SQLAlchemy URL, e.g. "
        "sqlite:///study.db or postgresql://...)",
    )
    no_plots_option(p, "only the CSV and the gait entry")
    quiet_option(p, "no progress lines")
    p.set_defaults(
        run=lambda a: optimize(
            runs=ground_runs(a),
            ranges=[parse_range(text) for text in (a.param or DEFAULT_RANGES)],
            objective=a.objective,
            sampler=a.sampler,
            trials=a.trials,
            seed=a.seed,
            cluster=cluster_options(a),
            output=a.output,
            storage=a.storage,
            plots=not a.no_plots,
            quiet=a.quiet,
        )
    )
