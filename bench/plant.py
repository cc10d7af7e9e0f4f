"""What the emulated robot's plant costs per emulated millisecond, as JSON on stdout.

Drives :class:`snake_dynamics.sim.plant.Plant` the way ``snake_bringup.plant_bridge`` does
for the simavr runner: every exchange (``--period-ms``, the runner's PLANT_PERIOD_US: 4 ms,
firmware/tools/plant_link.h) the servo pulses the firmware would send
for the demo's gait (each channel's pulse every 20 ms, staggered, ``pulse_us`` of the
calibration), one ``Plant.step`` and the pose sensor's readings. Two plants: the held robot
(``robot_feedback.yaml`` on ``plant.yaml``, fixed tail) and the demo's robot on the table
(``robot_table.yaml`` on ``plant_floor.yaml``: the crawling body, the pose sensor at 100 Hz),
and the same robot on MuJoCo (``plant_mujoco.yaml``: every effect the model leaves out at
its default). The time is the CPU's per emulated millisecond [us], back to back: the
runner's lock-step leaves the rest of each millisecond to simavr and the other processes;
``real_time_factor`` is emulated over CPU seconds (above 1: faster than real time).

    python bench/plant.py [--seconds 6] [--period-ms 4] [--plant ROBOT:PLANT ...]
        [--output bench/results/plant.json]
"""

from __future__ import annotations

import argparse
import math
import platform
import time
from pathlib import Path

from report import emit  # bench/report.py (this folder is on sys.path)

from snake_bringup.demo import DEMO_GAIT, DEMO_GAIT_PARAMETERS
from snake_bringup.plant_bridge import build_plant
from snake_driver.calibration import load_servo_map
from snake_dynamics import make_gait
from snake_ros.paths import load_robot, robot_config

#: The demo's gait.
GAIT, GAIT_PARAMETERS = DEMO_GAIT, DEMO_GAIT_PARAMETERS[DEMO_GAIT]
PULSE_PERIOD = 0.02  # [s] the firmware's servo frame
#: The robot configs and plant files measured by default.
PLANTS = ("robot_feedback:plant", "robot_table:plant_floor", "robot_table:plant_mujoco")


def measure(robot: str, plant_file: str, seconds: float, period_ms: int) -> dict[str, object]:
    """Run ``seconds`` of emulated time of ``plant_file`` under ``robot``'s calibration, one
    exchange every ``period_ms``."""
    model, servos = load_servo_map(robot_config(robot))
    plant = build_plant(load_robot(robot), robot_config(plant_file))
    plant.warm_up()
    gait = make_gait(GAIT, model, **GAIT_PARAMETERS)
    channels = servos.by_joint()
    calibrations = [channels[name] for name in model.joint_names]
    widths, ages = [0.0] * 16, [math.inf] * 16
    ticks = round(seconds * 1000)
    pulses = []  # the runner's records, made before the clock starts
    for tick in range(1, ticks + 1):
        t = tick * 1e-3
        q = gait(t).q
        for j, cal in enumerate(calibrations):
            phase = (t - j * 1e-3) % PULSE_PERIOD  # channel j's pulse ends j ms into a frame
            if phase < 1e-3:
                widths[cal.channel] = float(cal.pulse_us(float(q[j])))
            ages[cal.channel] = phase if widths[cal.channel] else math.inf
        pulses.append((t, list(widths), list(ages)))
    start = time.perf_counter()
    for t, width, age in pulses[period_ms - 1 :: period_ms]:
        plant.step(t, width, age)
        plant.pose_readings()
    elapsed = time.perf_counter() - start
    return {
        "robot": robot,
        "plant": plant_file,
        "emulated_s": seconds,
        "period_ms": period_ms,
        "us_per_emulated_ms": round(elapsed / ticks * 1e6, 1),
        "share_of_a_core": round(elapsed / seconds, 3),
        "real_time_factor": round(seconds / elapsed, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=6.0, help="emulated time [s]")
    parser.add_argument("--period-ms", type=int, default=4, help="one exchange every ... [ms]")
    parser.add_argument(
        "--plant",
        action="append",
        metavar="ROBOT:PLANT",
        help="a robot config and a plant file (repeatable; default the three above)",
    )
    parser.add_argument("--output", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    pairs = [p.split(":", 1) for p in args.plant or PLANTS]
    emit(
        {
            "benchmark": "the emulated robot's plant per emulated millisecond (back to back)",
            "machine": platform.processor() or platform.machine(),
            "gait": {"name": GAIT, **GAIT_PARAMETERS},
            "runs": [measure(r, p, args.seconds, args.period_ms) for r, p in pairs],
        },
        args.output,
    )


if __name__ == "__main__":
    main()
