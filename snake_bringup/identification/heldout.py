"""Identification judged by held-out motion: crawls of gaits neither fit saw
(:data:`HELD_OUT`, 15 s each), each predicted with the robot config, with the identified
servos and floor, and (for reference) with the plant's own parameters on the model, and
compared with what the robot did: the joints' RMS error, the travel and the path error
(docs/hardware.md, "Held-out crawls"). On a plant that is not the model there is no true
friction coefficient to compare with: the prediction is the judge."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from snake_dynamics.ground import Ground
from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim.floor_identification import PathRecording, aligned_error, predict_crawl
from snake_dynamics.sim.identification import in_parallel, residuals

from .experiment import IdentifyError
from .poses import crawl_recording

#: The held-out crawls: (bag label, gait, parameters), gaits and parameters neither the servo
#: experiment nor the floor's crawls use: a turning serpenoid, slower and wider, and a
#: sidewinding of a smaller pitch wave.
HELD_OUT: tuple[tuple[str, str, dict[str, float]], ...] = (
    ("heldout_serpenoid", "serpenoid", {"amplitude": 0.7, "frequency": 0.5, "offset": 0.15}),
    (
        "heldout_sidewinding",
        "sidewinding",
        {"amplitude": 0.4, "frequency": 0.6, "pitch_amplitude": 0.08},
    ),
)
#: Each held-out crawl's length [s].
HELD_OUT_S = 15.0


@dataclass(frozen=True)
class Prediction:
    """One held-out crawl predicted with one set of parameters.

    Attributes:
        joint_rms: the joints' RMS error, each pot's constant offset removed (eq. 209) [rad].
        travel: the predicted marker's distance from its first pose to its last [m].
        path_rms: the path error's RMS after the best rigid motion in the plane (eq. 248:
            the start pose, as noisy as any pose, set by the whole path) [m].
    """

    joint_rms: float
    travel: float
    path_rms: float


@dataclass(frozen=True)
class Model:
    """What a prediction is made with: a label, the body, the servos and the floor."""

    label: str
    body: SnakeModel
    servo: ServoModel
    ground: Ground


def predict_take(model: Model, take: PathRecording) -> Prediction:
    """A held-out crawl predicted with ``model`` against the measured one.

    Raises:
        IdentifyError: a held-out crawl's bag without measured joint states.
        snake_dynamics.errors.IdentificationError: a prediction that diverged.
    """
    if take.measured is None:
        raise IdentifyError("a held-out crawl's bag has no measured joint states")
    got = predict_crawl(model.body, model.servo, model.ground, take)
    return Prediction(
        float(np.sqrt(np.mean(residuals(got.q, take.measured) ** 2))),
        float(np.hypot(*(got.xy[-1] - got.xy[0]))),
        float(np.sqrt(np.mean(aligned_error(got.xy, take) ** 2))),
    )


def measured_travel(take: PathRecording) -> float:
    """The measured marker's distance from its first pose to its last [m]."""
    return float(np.hypot(*(take.xy[-1] - take.xy[0])))


def judge(
    bags: Path, names: Sequence[str], models: Sequence[Model]
) -> dict[str, dict[str, Prediction | float]]:
    """Every held-out crawl of ``bags`` predicted with each of ``models``: crawl label ->
    {model label: :class:`Prediction`, "measured_travel": [m]}.

    Raises:
        IdentifyError: a held-out crawl's bag missing, unreadable or with too few poses.
    """
    out: dict[str, dict[str, Prediction | float]] = {}
    for label, _, _ in HELD_OUT:
        take = crawl_recording(bags / f"{label}_bag", names).recording
        row: dict[str, Prediction | float] = {"measured_travel": measured_travel(take)}
        predicted = in_parallel(functools.partial(predict_take, take=take), models)
        row.update({m.label: p for m, p in zip(models, predicted, strict=True)})
        out[label] = row
    return out


def report_section(judged: dict[str, dict[str, Prediction | float]]) -> str:
    """The report's held-out section (Markdown): a row per crawl and model."""
    lines = [
        "## Held-out crawls",
        "",
        f"Gaits neither fit saw, {HELD_OUT_S:g} s each; the path after the best rigid motion "
        "in the plane (eq. 248).",
        "",
        "| crawl | prediction | joint RMS [deg] | travel [mm] | travel error | path RMS [mm] |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for label, row in judged.items():
        measured = row["measured_travel"]
        assert isinstance(measured, float)
        lines.append(f"| {label} | measured | | {measured * 1e3:.1f} | | |")
        for name, p in row.items():
            if isinstance(p, Prediction):
                lines.append(
                    f"| {label} | {name} | {math.degrees(p.joint_rms):.2f} | "
                    f"{p.travel * 1e3:.1f} | {(p.travel - measured) / measured:+.1%} | "
                    f"{p.path_rms * 1e3:.1f} |"
                )
    return "\n".join([*lines, ""])


def judged_json(judged: dict[str, dict[str, Prediction | float]]) -> dict[str, object]:
    """``fit.json``'s ``held_out`` entry: per crawl, the measured travel and each
    prediction's joint RMS [rad], travel and path RMS [m]."""
    return {
        label: {name: (p if isinstance(p, float) else vars(p).copy()) for name, p in row.items()}
        for label, row in judged.items()
    }
