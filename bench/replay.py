"""How close to a bag's timing ``snake replay`` delivers it, as JSON on stdout.

Writes a bag of ``/joint_commands`` at 200 Hz for 3 s (rosbags, MCAP), plays it with
``snake replay --rate R --no-rviz`` (the player waits for this process's subscription) and
compares each message's arrival [time.monotonic() in this process's callback] with the
schedule, the bag's offsets divided by the rate:

* ``median_gap_error_ms``: median over consecutive messages of |arrival gap - scheduled gap|;
* ``p75_drift_ms``: 75th percentile of |arrival offset - scheduled offset| about its median
  (one stall of this process delays a burst of arrivals; a wrong schedule shifts most);
* ``end_drift_ms``: the last message's arrival offset minus its scheduled offset.

``--load N`` keeps N busy processes running meanwhile.

    python bench/replay.py [--rate 2] [--repeat 3] [--load 0] [--output FILE]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from report import emit  # bench/report.py (this folder is on sys.path)

#: The bag: messages per second [Hz] and length [s].
BAG_HZ, BAG_S = 200, 3.0
#: Longest wait for a replay to finish [s].
TIMEOUT_S = 60.0


def write_bag(bag: Path) -> None:
    """A bag of /joint_commands at ``BAG_HZ`` for ``BAG_S``, written as the recorder does."""
    from snake_viz.bag import BagRecorder, typestore

    store = typestore()
    joint_state = store.types["sensor_msgs/msg/JointState"]
    header, stamp = store.types["std_msgs/msg/Header"], store.types["builtin_interfaces/msg/Time"]
    recorder = BagRecorder(bag)
    recorder.open()
    recorder.add_topic("/joint_commands", joint_state.__msgtype__)
    t0, step = 1_700_000_000 * 10**9, 10**9 // BAG_HZ
    for i in range(int(BAG_HZ * BAG_S)):
        msg = joint_state(
            header(stamp(0, 0), ""), ["a"], np.array([float(i)]), np.array([]), np.array([])
        )
        data = bytes(store.serialize_cdr(msg, joint_state.__msgtype__))
        recorder.write("/joint_commands", t0 + i * step, data)
    recorder.close()


def one(bag: Path, rate: float, logs: Path) -> dict[str, float]:
    """Play ``bag`` once at ``rate``; the arrival figures (see the module docstring)."""
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.signals import SignalHandlerOptions
    from sensor_msgs.msg import JointState

    context = Context()
    rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
    node = Node("replay_bench", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    arrivals: list[float] = []
    node.create_subscription(
        JointState, "/joint_commands", lambda _: arrivals.append(time.monotonic()), 1000
    )
    cmd = [sys.executable, "-m", "snake_bringup.cli", "replay", str(bag), "--rate", str(rate)]
    cmd += ["--wait-for-subscribers", "1", "--delay", "0.5", "--no-rviz", "-o", str(logs)]
    player = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while player.poll() is None and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.01)
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.01)
    finally:
        if player.poll() is None:
            player.kill()
        player.wait()
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    n = int(BAG_HZ * BAG_S)
    if player.returncode != 0 or len(arrivals) != n:
        raise SystemExit(f"replay failed: status {player.returncode}, {len(arrivals)}/{n} messages")
    got = np.array(arrivals)
    expected = np.arange(n) / BAG_HZ / rate
    drift = (got - got[0]) - expected
    return {
        "median_gap_error_ms": round(
            float(np.median(np.abs(np.diff(got) - np.diff(expected)))) * 1e3, 3
        ),
        "p75_drift_ms": round(float(np.percentile(np.abs(drift - np.median(drift)), 75)) * 1e3, 3),
        "end_drift_ms": round(float(drift[-1]) * 1e3, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=2.0, help="playback speed factor")
    parser.add_argument("--repeat", type=int, default=3, help="replays")
    parser.add_argument("--load", type=int, default=0, help="busy processes meanwhile")
    parser.add_argument("--output", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.load)]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            bag = Path(tmp) / "bag"
            write_bag(bag)
            runs = []
            for i in range(args.repeat):
                runs.append(one(bag, args.rate, Path(tmp) / f"logs-{i}"))
                print(f"replay {i + 1}/{args.repeat}: {runs[-1]}", file=sys.stderr)
    finally:
        for hog in hogs:
            hog.kill()
    worst = {key: max(abs(run[key]) for run in runs) for key in runs[0]}
    emit(
        {
            "bag": f"{BAG_HZ} Hz for {BAG_S:g} s",
            "rate": args.rate,
            "load_processes": args.load,
            "runs": runs,
            "worst": worst,
        },
        args.output,
    )


if __name__ == "__main__":
    main()
