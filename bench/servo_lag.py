"""How far dynamics_node's servo-aware prediction is behind the gait, as JSON on stdout.

Runs the node's prescribed-mode work without ROS (100 Hz commands of the configured gait,
config/gaits.yaml, into the reference; RK4 at 1 kHz run to 20 ms behind them; the robot
config's servo model, no feed-forward) for ``--seconds`` and compares the predicted joint
angles with the gait itself after the first 3 s: RMS error, peak error, amplitude ratio and
the lag (the shift of the gait that fits the prediction best, 0.1 ms grid), per moving joint.
For contrast, the previous prediction (inverse-dynamics feed-forward plus a 2 N m/rad,
0.05 N m s/rad PD: an echo of the gait) on the same commands.

    python bench/servo_lag.py [--robot robot.yaml] [--seconds 10] [--output FILE]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import yaml
from report import emit  # bench/report.py (this folder is on sys.path)

from snake_dynamics import SnakeModel, make_gait
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim import CommandReference, PrescribedInput, Simulator

ROOT = Path(__file__).resolve().parents[1]
SIM_RATE, COMMAND_RATE, DELAY, SETTLE = 1000.0, 100.0, 0.02, 3.0  # node defaults; transient [s]


def predict(model: SnakeModel, gait, servo: ServoModel, feed_forward: bool, seconds: float):
    """The node's loop; returns the state times [s] and angles [rad] after every tick."""
    sim = Simulator(model, 1.0 / SIM_RATE, servo=servo)
    reference = CommandReference(gait(0.0).q, timeout=0.5)
    source = PrescribedInput(sim.fast_model, reference, servo.dead_times, feed_forward)
    sim.reset(0.0, gait(0.0).q, gait(0.0).qd)
    t, q = [], []
    for k in range(round(seconds * COMMAND_RATE) + 1):
        sample = gait(k / COMMAND_RATE)
        reference.push(k / COMMAND_RATE, sample.q, sample.qd)
        sim.run_until(k / COMMAND_RATE - DELAY, source, max_steps=100)
        t.append(sim.time)
        q.append(sim.q.copy())
    return np.array(t), np.array(q)


def tracking(model: SnakeModel, gait, t: np.ndarray, q: np.ndarray) -> dict[str, object]:
    """Per moving joint: RMS and peak error [deg], amplitude ratio, lag [ms]."""
    exact = np.array([gait(float(tk)).q for tk in t])
    steady = t > SETTLE
    lags = np.arange(-0.02, 0.2, 1e-4)
    out: dict[str, list[float]] = {
        "rms_deg": [],
        "max_deg": [],
        "amplitude_ratio": [],
        "lag_ms": [],
    }
    moving = [j for j in range(model.n_joints) if np.ptp(exact[steady, j]) > 1e-6]
    for j in moving:
        error = q[steady, j] - exact[steady, j]
        fit = [
            np.mean((q[steady, j] - np.interp(t[steady] - lag, t, exact[:, j])) ** 2)
            for lag in lags
        ]
        out["rms_deg"].append(round(float(np.degrees(np.sqrt(np.mean(error**2)))), 3))
        out["max_deg"].append(round(float(np.degrees(np.max(np.abs(error)))), 3))
        out["amplitude_ratio"].append(
            round(float(np.ptp(q[steady, j]) / np.ptp(exact[steady, j])), 4)
        )
        out["lag_ms"].append(round(float(lags[int(np.argmin(fit))]) * 1e3, 1))
    return {"joints": [model.joint_names[j] for j in moving], **out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="robot.yaml", help="a config file in config/")
    parser.add_argument("--seconds", type=float, default=10.0, help="simulated time [s]")
    parser.add_argument("--output", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    path = ROOT / "config" / args.robot
    model = SnakeModel.from_yaml(path)
    gaits = yaml.safe_load((ROOT / "config" / "gaits.yaml").read_text())["/**"]["ros__parameters"]
    gait = make_gait(gaits["gait"], model, **gaits[gaits["gait"]])
    servo = ServoModel.from_yaml(path, model.joint_names)
    pd = ServoModel.pd(2.0, 0.05, model.n_joints)
    emit(
        {
            "benchmark": "servo-aware prediction versus the gait (dynamics_node, prescribed)",
            "robot": model.name,
            "gait": {"name": gaits["gait"], **gaits[gaits["gait"]]},
            "servo_model": servo.describe(),
            "prediction": tracking(model, gait, *predict(model, gait, servo, False, args.seconds)),
            "previous_prediction_feed_forward_pd": tracking(
                model, gait, *predict(model, gait, pd, True, args.seconds)
            ),
        },
        args.output,
    )


if __name__ == "__main__":
    main()
