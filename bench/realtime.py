"""Real-time factor of dynamics_node's integration loop, as JSON on stdout.

Runs the node's per-tick work without ROS: a 100 Hz command from the gait pushed into the
reference, then RK4 at 1 kHz up to ``delay`` behind it under the robot config's servo model
(prescribed mode: each servo its dead time late, no feed-forward; default parameters).
Real-time factor = simulated time / wall time spent in that work, with the ticks back to
back (the CPU cost) and paced at 100 Hz like the node (what its status line reports); the
same over the thread's CPU time (``real_time_factor_cpu``: what other work on a shared
machine does not move, as the time this process waited for a core is left out).
Target: >= 20x for the 20-body model. On the ground (``on_the_ground`` of the config, as a
``base: floating`` robot config runs the node) the tick also moves the free tail under the
step's joints (``FastBaseTracker``, eqs. 228, 239, ``ground_model: prescribed``). Target:
>= 5x for the 20-body model. Under the servos on the ground (``ground_model: servos``, the
node's default for such a robot) the node's ``CrawlingSimulator`` (eqs. 240-242) integrates
joints and base together. Targets: >= 20x paced for the 8-joint robot, >= 10x for the
20-body one (issue 38).
On wheels (config/robot_wheels.yaml) the node's ``WheeledSimulator`` (eqs. 415-417) does
the work instead.

    python bench/realtime.py [--seconds 5] [--output bench/results/realtime.json]
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np
from report import emit  # bench/report.py (this folder is on sys.path)

from snake_dynamics import SnakeModel, make_gait
from snake_dynamics.floating import FastBaseTracker, on_the_ground
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim import (
    CommandReference,
    CrawlingSimulator,
    PrescribedInput,
    Simulator,
    WheeledSimulator,
)

ROOT = Path(__file__).resolve().parents[1]
SIM_RATE, COMMAND_RATE, DELAY = 1000.0, 100.0, 0.02  # config/dynamics_node.yaml defaults


def measure(
    config: str, gait_name: str, seconds: float, paced: bool, ground: str = ""
) -> dict[str, object]:
    """Simulate ``seconds`` of ``gait_name`` on ``config`` the way the node does; time it.

    ``paced``: sleep between the 10 ms ticks as the node does (a CPU that idles between
    ticks runs the next one slower: caches and clocks go cold), else run them back to back.
    ``ground``: "" (the robot as its file says), or on its ground: "prescribed" (the tail
    moved by the unloaded joints) or "servos" (the servos on the free body).
    """
    model = SnakeModel.from_yaml(ROOT / "config" / config)
    gait = make_gait(gait_name, model)
    servo = ServoModel.from_yaml(ROOT / "config" / config, model.joint_names)
    sim: Simulator
    if model.wheels:
        sim = WheeledSimulator(model, 1.0 / SIM_RATE, servo=servo)
    elif ground == "servos":
        sim = CrawlingSimulator(on_the_ground(model), 1.0 / SIM_RATE, servo=servo)
    else:
        sim = Simulator(model, 1.0 / SIM_RATE, servo=servo)
    sim.warm_up()
    tracked = ground == "prescribed"
    tracker = FastBaseTracker(on_the_ground(model), 1.0 / SIM_RATE) if tracked else None
    if tracker is not None:
        tracker.advance(0.0, np.zeros((1, model.n_joints)), np.zeros((1, model.n_joints)))
    reference = CommandReference(np.zeros(model.n_joints), timeout=0.5)
    source = PrescribedInput(sim.fast_model, reference, servo.dead_times, feed_forward=False)
    ticks = round(seconds * COMMAND_RATE)
    commands = [gait(k / COMMAND_RATE) for k in range(ticks)]  # the gait node's work
    per_tick, cpu = [], 0.0
    for k, (q, qd, _) in enumerate(commands):
        start, cpu_start = time.perf_counter(), time.thread_time()
        reference.push(k / COMMAND_RATE, q, qd)
        before = sim.time
        report = sim.run_until(k / COMMAND_RATE - DELAY, source, max_steps=100)
        if tracker is not None:
            tracker.advance(before, report.q, report.qd)
        cpu += time.thread_time() - cpu_start
        per_tick.append(time.perf_counter() - start)
        if paced:
            time.sleep(max(0.0, 1.0 / COMMAND_RATE - per_tick[-1]))
    busy = float(np.sum(per_tick))
    return {
        "robot": model.name,
        "n_joints": model.n_joints,
        "on_the_ground": ground or False,
        "on_wheels": model.wheels,
        "gait": gait_name,
        "paced_like_the_node": paced,
        "sim_rate_hz": SIM_RATE,
        "simulated_s": round(sim.time, 6),
        "busy_s": round(busy, 6),
        "real_time_factor": round(sim.time / busy, 2),
        "real_time_factor_cpu": round(sim.time / cpu, 2),
        "us_per_step": round(busy / (sim.time * SIM_RATE) * 1e6, 2),
        "tick_ms_p99": round(float(np.percentile(per_tick, 99)) * 1e3, 3),
        "finite": bool(np.all(np.isfinite(sim.q))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="simulated time per model [s]")
    parser.add_argument("--output", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    results = {
        "benchmark": "dynamics_node integration loop (prescribed mode, RK4 + servo)",
        "machine": platform.machine(),
        "python": platform.python_version(),
        "target_real_time_factor_20_body": 20.0,
        "target_real_time_factor_20_body_on_the_ground": 5.0,
        "target_real_time_factor_under_servos_on_the_ground": {"8 joints": 20.0, "20 body": 10.0},
        "runs": [
            measure(config, gait, args.seconds, paced, ground)
            for ground in ("", "prescribed", "servos")
            for paced in (False, True)
            for config, gait in (
                ("robot.yaml", "serpenoid"),
                ("paper_3d.yaml", "sidewinding"),
                ("snake20.yaml", "sidewinding"),
            )
        ]
        + [  # the demo's robot: flat-bottomed bodies (ground.width), 12 contacts per body
            measure("robot_table.yaml", "serpenoid", args.seconds, paced, "servos")
            for paced in (False, True)
        ]
        + [
            measure("robot_wheels.yaml", "serpenoid", args.seconds, paced)
            for paced in (False, True)
        ],
    }
    emit(results, args.output)


if __name__ == "__main__":
    main()
