"""Benchmark of the hardware path with the real ATmega2560 firmware in simavr; prints JSON.

* Round trip over the emulated UART (pty) and over the emulator's socat TCP bridge (with
  TCP_NODELAY, as ``snake emulate`` starts it), real-time paced:
  ``ping_pong_ms``, host time from sending PING to decoding its PONG; and
  ``target_to_telemetry_ms``, host time from sending a target change until the first
  telemetry whose commanded pulse width shows it (so it includes waiting for the next
  report: up to one telemetry period, 20 ms by config/robot.yaml). Commands are sent at a
  random phase against the telemetry. Median and p99 over the samples.
* Telemetry rate sustained with all 16 channels (every report carries all 16) at 115200
  and 1000000 baud (``make BAUD=``): the host asks for a report every 1 ms and drives
  targets and pings at 50 Hz; the rate is counted on the MCU clock (telemetry timestamps).
  Reports that would not leave room for replies in the transmit ring are skipped (the
  firmware's ``tx_skipped``).
* Worst-case main-loop pass in CPU cycles: the firmware raises PK0 while a pass of its main
  loop runs (hal/avr), and ``simavr_runner --loop-pin K0`` times the high phases in emulated
  cycles (interrupts taken during a pass included). Measured during the two rate runs and
  an authenticated run (SipHash on every frame), each including the configuration burst on
  connect.

Usage: python bench/driver.py [--quick] [--output bench/results/driver.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import random
import statistics
import sys
import time
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout

from report import emit  # bench/report.py (this folder is on sys.path)

from snake_bringup.emulator import Emulator
from snake_driver import protocol as p
from snake_driver.calibration import ServoMap, load_servo_map
from snake_driver.link import DriverLink, Measurement
from snake_driver.transport import SerialTransport, make_transport
from snake_ros.paths import robot_config

ROOT = Path(__file__).resolve().parents[1]
F_CPU_HZ = 16e6
LOOP_PIN = "K0"
AUTH_KEY_HEX = "000102030405060708090a0b0c0d0e0f"
ENDPOINTS = ("pty", "tcp")
WAIT_S = 5.0  # bound on every wait for the emulator [s]


def percentiles_ms(samples_s: list[float]) -> dict[str, float | int]:
    """Median and p99 [ms] of samples [s] (p99: nearest rank)."""
    ordered = sorted(samples_s)
    p99 = ordered[min(len(ordered) - 1, max(0, round(0.99 * len(ordered)) - 1))]
    return {
        "median_ms": round(statistics.median(ordered) * 1e3, 3),
        "p99_ms": round(p99 * 1e3, 3),
        "n": len(ordered),
    }


def poll_until(link: DriverLink, done: object, timeout_s: float) -> list[Measurement]:
    """Poll until ``done(measurement)`` holds for one received measurement, or timeout [s]."""
    deadline = time.perf_counter() + timeout_s
    seen: list[Measurement] = []
    while time.perf_counter() < deadline:
        measurements, _ = link.poll(0.002)
        seen += measurements
        if any(done(m) for m in measurements):  # type: ignore[operator]
            return seen
    raise TimeoutError(f"no matching telemetry within {timeout_s} s over {link.transport}")


def poll_for(link: DriverLink, seconds: float) -> None:
    """Keep polling for ``seconds``: a pause of random length puts the next request at a
    random phase against the telemetry (a single ``poll`` would return with the next
    report's first bytes, and every request would then start behind a whole report)."""
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        link.poll(0.002)


def connect(link: DriverLink) -> None:
    """Connect and wait for the first telemetry and pong (the pty drops bytes sent earlier)."""
    deadline = time.perf_counter() + WAIT_S
    while time.perf_counter() < deadline and not (link.stats.pongs and link.stats.telemetry):
        link.ping()
        link.poll(0.05)
    if not (link.stats.pongs and link.stats.telemetry):
        raise TimeoutError(f"the emulated firmware does not answer over {link.transport}")


def round_trips(servos: ServoMap, kind: str, samples: int) -> dict[str, object]:
    """PING->PONG and target->telemetry times [ms] over one kind of emulated endpoint."""
    rng = random.Random(1)
    joint = servos.joint_names[0]
    calibration = servos.by_joint()[joint]
    with Emulator(bridge="tcp" if kind == "tcp" else None) as emulator:
        transport, port = emulator.endpoint.transport, emulator.endpoint.port
        link = DriverLink(make_transport(transport, port), servos, time.monotonic)
        connect(link)
        pings: list[float] = []
        for _ in range(samples):
            pongs = link.stats.pongs
            start = time.perf_counter()
            link.ping()
            deadline = start + 1.0
            while link.stats.pongs == pongs and time.perf_counter() < deadline:
                link.poll(0.002)
            if link.stats.pongs > pongs:
                pings.append(time.perf_counter() - start)
            link.send_targets(dict.fromkeys(servos.joint_names, 0.0))  # feeds the watchdog
            poll_for(link, rng.uniform(0.0, 0.02))  # random phase against the telemetry
        commands: list[float] = []
        for k in range(samples):
            angle = 0.35 if k % 2 else -0.35  # [rad], alternating so every command is a change
            pulse = calibration.pulse_us(angle)
            start = time.perf_counter()
            link.send_targets(dict.fromkeys(servos.joint_names, angle))
            poll_until(link, lambda m, p=pulse: m.pulses_us[joint] == p, 1.0)
            commands.append(time.perf_counter() - start)
            poll_for(link, rng.uniform(0.0, 0.02))  # random phase against the telemetry
        link.close()
    return {
        "endpoint": f"{transport} {port}",
        "ping_pong": percentiles_ms(pings),
        "target_to_telemetry": percentiles_ms(commands),
        "bad_crc": link.decoder.stats.bad_crc,
    }


def runner_loop_line(output: Iterable[str]) -> dict[str, float]:
    """The ``LOOP key=value ...`` summary simavr_runner --loop-pin prints when it stops."""
    for line in output:
        if line.startswith("LOOP "):
            return {k: float(v) for k, v in (kv.split("=") for kv in line[5:].split())}
    raise RuntimeError("simavr_runner printed no LOOP line")


def loop_summary(loop: dict[str, float], connect_at_s: float) -> dict[str, float]:
    """The runner's LOOP line; the worst pass also in microseconds at 16 MHz, and when it
    started [emulated s since reset] next to when the host connected (its wall clock)."""
    return {
        "passes": int(loop["passes"]),
        "max_cycles": int(loop["max_cycles"]),
        "max_us": round(loop["max_cycles"] / F_CPU_HZ * 1e6, 1),
        "max_at_s": round(loop["max_at_cycle"] / F_CPU_HZ, 3),
        "host_connected_at_s": round(connect_at_s, 3),
        "p99_cycles": int(loop["p99_cycles"]),
        "median_cycles": int(loop["median_cycles"]),
        "mean_cycles": loop["mean_cycles"],
    }


def telemetry_frame_bytes(channels: int, authenticated: bool) -> int:
    """Bytes on the wire of one telemetry report of ``channels`` channels."""
    report = p.Telemetry(0, p.Flag(0), 0, p.Counters(), (0,) * channels, (0,) * channels)
    return p.HEADER_LEN + len(report.payload()) + p.CRC_LEN + (p.AUTH_LEN if authenticated else 0)


def telemetry_rate(
    servos: ServoMap, baud: int, seconds: float, key_hex: str | None = None, period_ms: int = 1
) -> dict[str, object]:
    """Telemetry asked for every ``period_ms``, targets and pings at 50 Hz, for ``seconds``."""
    fast = dataclasses.replace(
        servos, system=dataclasses.replace(servos.system, telemetry_period_ms=period_ms)
    )
    key = bytes.fromhex(key_hex) if key_hex else None
    emulator = Emulator(
        seconds=seconds + 4 * WAIT_S,
        key_hex=key_hex,
        baud=baud,
        runner_args=("--loop-pin", LOOP_PIN),
    )
    with emulator:
        link = DriverLink(
            SerialTransport(emulator.endpoint.port, baud), fast, time.monotonic, key=key
        )
        connect_at_s = time.monotonic() - emulator.started
        connect(link)
        window: list[Measurement] = []
        deadline = time.perf_counter() + seconds
        next_command = 0.0
        angle = 0.3
        while time.perf_counter() < deadline:
            if time.perf_counter() >= next_command:
                next_command = time.perf_counter() + 0.02
                angle = -angle
                link.send_targets(dict.fromkeys(servos.joint_names, angle))
                link.ping()
            window += link.poll(0.002)[0]
        link.close()
    span_s = (window[-1].mcu_time_us - window[0].mcu_time_us) * 1e-6
    rate = (len(window) - 1) / span_s
    counters = window[-1].counters
    frame_bytes = telemetry_frame_bytes(p.MAX_CHANNELS, key is not None)
    return {
        "baud": baud,
        "authenticated": key is not None,
        "requested_hz": 1000 // period_ms,
        "sustained_hz": round(rate, 1),
        "frame_bytes": frame_bytes,
        "line_utilisation": round(rate * frame_bytes * 10 / baud, 3),  # 8N1: 10 bits a byte
        "reports": len(window),
        "mcu_span_s": round(span_s, 3),
        "frames_skipped": counters.tx_skipped - window[0].counters.tx_skipped,
        "host_seq_gaps": link.decoder.stats.seq_gaps,
        "host_bad_crc": link.decoder.stats.bad_crc,
        "mcu_rx_dropped": counters.rx_dropped,
        "mcu_bad_crc": counters.bad_crc,
        "main_loop": loop_summary(runner_loop_line(emulator.output), connect_at_s),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples (smoke run)")
    parser.add_argument("--output", type=Path, default=ROOT / "bench/results/driver.json")
    args = parser.parse_args()
    samples, seconds = (20, 1.0) if args.quick else (200, 5.0)
    servos = load_servo_map(robot_config("robot"))[1]

    round_trip = {kind: round_trips(servos, kind, samples) for kind in ENDPOINTS}
    rates = [telemetry_rate(servos, baud, seconds) for baud in (115200, 1000000)]
    auth = telemetry_rate(servos, 115200, seconds, AUTH_KEY_HEX)
    default = telemetry_rate(servos, 115200, seconds, period_ms=20)
    loops = {
        "default_config_115200": default["main_loop"],
        "plain_115200": rates[0]["main_loop"],
        "plain_1000000": rates[1]["main_loop"],
        "authenticated_115200": auth["main_loop"],
    }
    worst = max(loops.values(), key=lambda loop: loop["max_cycles"])  # type: ignore[index]
    report = {
        "benchmark": "driver",
        "quick": args.quick,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "round_trip": {
            "definitions": {
                "ping_pong": "host time from sending PING to decoding its PONG",
                "target_to_telemetry": "host time from sending SET_TARGETS to the first "
                "telemetry whose commanded pulse shows it (includes the wait for the next "
                "report; telemetry period 20 ms)",
                "tcp": "the emulator's socat bridge as snake_bringup.emulator starts it "
                "(nodelay: without it Nagle holds socat's small writes until the host's "
                "delayed ACK)",
            },
            **round_trip,
        },
        "telemetry_rate_16_channels": {str(r["baud"]): r for r in rates},
        "telemetry_rate_authenticated_115200": auth,
        "telemetry_default_config_115200": default,
        "main_loop_cycles": {
            "how": "simavr_runner --loop-pin K0: high time of PK0, raised by the firmware for "
            "each main-loop pass (hal/avr hal_idle), in emulated 16 MHz cycles, interrupts "
            "during the pass included; under the loads above (telemetry every 1 ms, or every "
            "20 ms for default_config), each from reset through the host's connect burst "
            "(configuration of 8 channels, system, enable) on",
            "worst_cycles": worst["max_cycles"],  # type: ignore[index]
            "worst_us": worst["max_us"],  # type: ignore[index]
            **loops,
        },
    }
    emit(report, args.output)


if __name__ == "__main__":
    main()
