"""``snake emulate``: the robot's real firmware in simavr (and a socat bridge), until Ctrl-C
or ``--seconds``; prints where to connect the driver."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..emulator import Emulator
from .options import auth_key, key_options, plant_option, positive, robot_option

if TYPE_CHECKING:
    from .options import Subparsers


def register(sub: Subparsers) -> None:
    """Add ``snake emulate`` to the ``snake`` command."""
    p = sub.add_parser("emulate", help="run the robot's firmware in simavr; print the port")
    p.add_argument("--bridge", choices=["tcp", "udp"], help="also serve it on 127.0.0.1 (Wi-Fi)")
    p.add_argument("--bridge-port", type=int, default=0, help="the bridge's port (default: free)")
    p.add_argument("--seconds", type=positive, help="stop after this much emulated time [s]")
    key_options(p, "run the authenticated build with this key")
    p.add_argument("--vcd", type=Path, help="trace the servo pins to this VCD file")
    robot_option(p, "robot", "robot config of the plant's body and channels")
    plant_option(p)
    p.set_defaults(
        run=lambda a: run(
            bridge=a.bridge,
            bridge_port=a.bridge_port,
            seconds=a.seconds,
            key=auth_key(a.key_file, a.key),
            key_file=a.key_file,
            vcd=a.vcd,
            robot=a.robot,
            plant=a.plant,
        )
    )


def run(
    *,
    bridge: str | None,
    bridge_port: int,
    seconds: float | None,
    key: str,
    vcd: Path | None,
    robot: str,
    plant: Path | None,
    key_file: Path | None = None,
) -> int:
    """Run the emulated robot until Ctrl-C, SIGTERM or ``seconds`` of emulated time.

    Args:
        bridge: None (the pty only), "tcp" or "udp" on 127.0.0.1.
        bridge_port: the bridge's port (0: a free one).
        seconds: stop after this much emulated time [s] (None: until a signal).
        key: 32 hex digits: the authenticated build with this key ("": the plain build).
        vcd: trace the servo pins to this VCD file.
        robot: robot config of the plant's body and channels.
        plant: the plant file (None: pulses drive nothing).
        key_file: the file ``key`` came from, for the driver's command it prints (None: the
            environment, which the driver reads too).
    """
    emulator = Emulator(
        bridge=bridge,
        bridge_port=bridge_port,
        seconds=seconds,
        key_hex=key or None,
        vcd=vcd,
        plant=plant,
        robot=robot,
    )
    stop: list[int] = []
    previous = {
        s: signal.signal(s, lambda n, f: stop.append(n)) for s in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        endpoint = emulator.start()
        print(f"emulated robot (ATmega2560 firmware in simavr) on {endpoint}", flush=True)
        link = f"transport:={endpoint.transport} port:={endpoint.port}"
        option = f"--transport {endpoint.transport} --port {endpoint.port}"
        if endpoint.transport != "serial":
            link += f" host:={endpoint.host}"
        if key and key_file:  # the file's path, never the key
            link += f" auth_key_file:={key_file.resolve()}"
            option += f" --key-file {key_file.resolve()}"
        print(f"connect: ros2 launch mfm_snake hardware.launch.py {link}")
        print(f"     or: snake hardware {option}", flush=True)
        while not stop and emulator.running():
            time.sleep(0.1)
    finally:
        emulator.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("emulator stopped")
    if plant:
        print(f"plant: {emulator.plant_report or 'no report (it did not end normally)'}")
    return 0
