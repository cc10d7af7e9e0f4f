"""The identification's plots: ``steps.png`` (the experiment's steps) and ``validation.png``
(the validation gait), each joint measured, predicted with the config's servo model and
with the fitted one, beside the servo's commanded angle (its pulses)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim.identification import Recording, predict


def plot(
    out: Path,
    model: SnakeModel,
    experiment: Recording,
    check: Recording,
    before: ServoModel,
    after: ServoModel,
) -> None:
    """Write ``out/steps.png`` (``experiment``) and ``out/validation.png`` (``check``):
    measured, ``before`` (the config's servo model) and ``after`` (the fitted one)."""
    from snake_viz.offline import panel_grid, pyplot

    plt = pyplot()
    for name, rec in (("steps", experiment), ("validation", check)):
        curves = {
            "measured": rec.measured,
            "config servo": predict(model, before, rec),
            "identified": predict(model, after, rec),
        }
        n = len(rec.joint_names)
        rows, cols = panel_grid(n)
        fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 2.6 * rows), squeeze=False)
        for k, joint in enumerate(rec.joint_names):
            ax = axes[k // cols][k % cols]
            ax.plot(rec.t - rec.t[0], np.degrees(rec.reference[:, k]), "k:", lw=0.8, label="pulses")
            for label, q in curves.items():
                offset = np.mean(rec.measured[:, k] - q[:, k]) if label != "measured" else 0.0
                ax.plot(rec.t - rec.t[0], np.degrees(q[:, k] + offset), lw=1.0, label=label)
            ax.set_title(joint)
            ax.set_xlabel("t [s]")
            ax.set_ylabel("angle [deg]")
        axes[0][0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / f"{name}.png", dpi=90)
        plt.close(fig)
