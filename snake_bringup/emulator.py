"""The robot without the robot: the real ATmega2560 firmware in simavr, plus a socat bridge.

:class:`Emulator` builds the firmware and the simavr runner when needed (``make -C
firmware``), starts the unmodified ELF paced to real time, reads the pty the runner prints
and, when asked, puts socat in front of it as the Wi-Fi bridge (TCP or UDP on 127.0.0.1).
With a plant file it also starts the physical plant (:mod:`snake_bringup.plant_bridge`:
servos, body and feedback potentiometers) and connects it to the runner by a socket pair,
exchanged with in lock-step every 4 ms of emulated time (plant_link.h); a plant with a pose
sensor sends its readings to a UDP port on 127.0.0.1 chosen here (:attr:`Endpoint.pose_port`,
where ``pose_sensor_node`` listens). It only starts, watches and stops processes.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

from snake_driver.keyfile import write_key_file
from snake_ros.paths import robot_config, share_dir, state_dir

from .errors import BringupError
from .process import die_with_parent, robot_priority_raised, robot_process

#: The firmware's default USART0 speed [baud].
DEFAULT_BAUD = 115200


class EmulatorError(BringupError, RuntimeError):
    """The emulator cannot be built or started; the message says what to install or fix."""


@dataclass(frozen=True)
class Endpoint:
    """Where a driver connects: ``transport`` serial/tcp/udp and ``port`` (device or number);
    and where the emulated pose sensor's datagrams arrive: UDP ``pose_port`` on 127.0.0.1
    (None: no pose sensor)."""

    transport: str
    port: str
    host: str = "127.0.0.1"
    pose_port: int | None = None

    def __str__(self) -> str:
        if self.transport == "serial":
            return f"serial {self.port}"
        return f"{self.transport} {self.host}:{self.port}"


def firmware_dir() -> Path:
    """The firmware sources: $MFM_SNAKE_FIRMWARE, ./firmware, or the copy installed with the
    package (the checkout this runs from, when it runs from one).

    Raises:
        EmulatorError: none found (the sources are not installed with the package).
    """
    candidates = [Path(p) for p in (os.environ.get("MFM_SNAKE_FIRMWARE"),) if p]
    candidates += [Path.cwd() / "firmware", share_dir() / "firmware"]
    for path in candidates:
        if (path / "Makefile").is_file() and (path / "PROTOCOL.md").is_file():
            return path
    raise EmulatorError(
        "firmware sources not found (not installed with the package?): run from a checkout "
        "of mfm_snake or set MFM_SNAKE_FIRMWARE"
    )


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A free 127.0.0.1 port number for a bridge."""
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tcp_listening(port: int) -> bool:
    """True when a socket listens on 127.0.0.1:``port`` (read from /proc/net/tcp).

    A probe connection would not do: socat's ``fork`` gives every connection a child that
    opens the pty, and a probe's child keeps reading it for a while after the probe closes,
    stealing bytes from the real client.
    """
    wanted = f"0100007F:{port:04X}"
    try:
        rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return False
    # columns: sl local_address rem_address st ...; st 0A is LISTEN
    return any(row.split()[1] == wanted and row.split()[3] == "0A" for row in rows)


def build_firmware(key_hex: str | None = None, baud: int = DEFAULT_BAUD) -> tuple[Path, Path]:
    """Build (if out of date) the AVR ELF (USART0 at ``baud``; ``key_hex``: the authenticated
    build, its image mode 0600) and the simavr runner; return their paths. The key reaches
    make through a private temporary file (``AUTH_KEY_FILE``), never a command line.

    Raises:
        EmulatorError: missing toolchain, or the build failed (with make's last lines).
    """
    missing = [tool for tool in ("make", "avr-gcc", "cc") if shutil.which(tool) is None]
    if missing:
        raise EmulatorError(
            f"missing {', '.join(missing)}: apt-get install gcc-avr avr-libc binutils-avr simavr "
            "libsimavr-dev (or run `make demo`, which installs them)"
        )
    fw = firmware_dir()
    build = firmware_build_dir(fw)
    args = ["make", "--no-print-directory", "-C", str(fw), "avr", "runner", f"BAUD={baud}"]
    args += [f"BUILD={build}"]
    with tempfile.TemporaryDirectory(prefix="snake-key-") as private:  # 0700
        if key_hex:
            key_file = write_key_file(Path(private) / "key", bytes.fromhex(key_hex))
            args += [f"AUTH_KEY_FILE={key_file}"]
        proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
        raise EmulatorError(f"firmware build failed:\n{tail}")
    built = re.search(r"^ELF (\S+)$", proc.stdout, re.MULTILINE)  # the Makefile names it
    if built is None:
        raise EmulatorError("the firmware build did not report its ELF")
    return fw / built[1], build / "tools" / "simavr_runner"


def default_eeprom() -> Path:
    """Where the emulated MCU keeps its EEPROM (its boot counter) between runs:
    ``$ROS_HOME/mfm_snake/emulator_eeprom.bin`` (``~/.ros`` unless set), so that restarting
    the emulator is a new boot (a new boot id), as power-cycling the robot is."""
    return state_dir() / "emulator_eeprom.bin"


def firmware_build_dir(fw: Path) -> Path:
    """Where the firmware in ``fw`` builds: its ``build/`` folder when ``fw`` is writable (a
    checkout, a venv), else a per-user cache (the sources installed read-only with a ROS
    package): ``$XDG_CACHE_HOME/mfm_snake/firmware`` (default ``~/.cache``)."""
    if os.access(fw, os.W_OK):
        return fw / "build"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "mfm_snake" / "firmware"


def _ends_within(proc: subprocess.Popen[str] | subprocess.Popen[bytes], seconds: float) -> bool:
    """Whether ``proc`` exits within ``seconds``."""
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


class Emulator:
    """The firmware in simavr (real-time paced) and an optional socat bridge.

    Args:
        bridge: None (serial pty only), "tcp" or "udp".
        bridge_port: the bridge's port (0: a free one).
        seconds: stop after this much emulated time (None: run until stopped).
        key_hex: 32 hex digits to run the authenticated firmware build.
        vcd: write pin traces of the servo channels to this VCD file.
        baud: the firmware's UART speed [baud] (a build option).
        runner_args: further simavr_runner options (e.g. ``--loop-pin K0``); what the runner
            prints stays in :attr:`output`.
        eeprom: the file holding the MCU's EEPROM across runs (default:
            :func:`default_eeprom`); the runner writes it whenever the firmware changes it.
        plant: a plant file (config/plant.yaml): the servo pins drive emulated servos and
            the robot's body, whose potentiometers feed ADC0-7 (None: no plant).
        robot: the robot config the plant's body and channels come from (a file or a name
            in the package's config folder).
        plant_log: the plant writes its joint angles and targets here every tick (CSV).
    """

    def __init__(
        self,
        bridge: str | None = None,
        bridge_port: int = 0,
        seconds: float | None = None,
        key_hex: str | None = None,
        vcd: Path | None = None,
        baud: int = DEFAULT_BAUD,
        runner_args: Sequence[str] = (),
        eeprom: Path | None = None,
        plant: Path | None = None,
        robot: str = "robot",
        plant_log: Path | None = None,
    ) -> None:
        if bridge not in (None, "tcp", "udp"):
            raise EmulatorError(f"bridge must be tcp or udp, got {bridge!r}")
        self.bridge = bridge
        self.bridge_port = bridge_port
        self.seconds = seconds
        self.key_hex = key_hex
        self.vcd = vcd
        self.baud = baud
        self.runner_args = tuple(runner_args)
        self.eeprom = eeprom or default_eeprom()
        self.plant = plant
        self.robot = robot
        self.plant_log = plant_log
        self.pose_port: int | None = None  # the plant's pose sensor sends here (if it has one)
        self.plant_proc: subprocess.Popen[str] | None = None
        self.started = 0.0  # time.monotonic() when simavr started [s]
        self._drainer: threading.Thread | None = None
        self._plant_drainer: threading.Thread | None = None
        self.runner: subprocess.Popen[str] | None = None
        self.socat: subprocess.Popen[bytes] | None = None
        self.pty: str | None = None
        self.output: deque[str] = deque(maxlen=50)  # the runner's last lines, for error reports

    @property
    def endpoint(self) -> Endpoint:
        """Where to connect the driver."""
        if self.pty is None:
            raise EmulatorError("the emulator is not running")
        if self.bridge is None:
            return Endpoint("serial", self.pty, pose_port=self.pose_port)
        return Endpoint(self.bridge, str(self.bridge_port), pose_port=self.pose_port)

    def start(self) -> Endpoint:
        """Build if needed, start simavr (and socat); return the endpoint."""
        try:
            robot_priority_raised()  # checked here: robot_process runs where it cannot say
        except BringupError as exc:
            raise EmulatorError(str(exc)) from None
        elf, runner = build_firmware(self.key_hex, self.baud)
        try:
            self.eeprom.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise EmulatorError(
                f"cannot create {self.eeprom.parent} for the emulator's EEPROM ({e.strerror}): "
                "set ROS_HOME to a writable folder"
            ) from None
        with contextlib.suppress(OSError):  # one from before the runner wrote it 0600
            self.eeprom.chmod(0o600)
        args = [str(runner), "--realtime", "--eeprom", str(self.eeprom), *self.runner_args]
        if self.seconds is not None:
            args += ["--seconds", f"{self.seconds:g}"]
        if self.vcd is not None:
            args += ["--vcd", str(self.vcd)]
        plant_fd = self._start_plant()
        if plant_fd is not None:
            args += ["--plant-fd", str(plant_fd.fileno())]
        self.started = time.monotonic()
        # own sessions: a terminal's Ctrl-C reaches the nodes (through the runner) and the
        # emulator only after them (stop()), so the driver never sees its robot vanish first
        self.runner = subprocess.Popen(
            [*args, str(elf)],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
            preexec_fn=robot_process,
            pass_fds=() if plant_fd is None else (plant_fd.fileno(),),
        )
        if plant_fd is not None:
            plant_fd.close()  # the runner's now: it alone closes it, which ends the plant
        assert self.runner.stdout is not None
        seen = []
        for _ in range(20):  # simavr prints a few loader lines first
            line = self.runner.stdout.readline().strip()
            if line.startswith("PTY ") or not line:
                break
            seen.append(line)
        if not line.startswith("PTY "):
            self.stop()
            raise EmulatorError(f"simavr runner did not report its pty: {seen[-3:]}")
        self.pty = line.split(" ", 1)[1]
        # keep reading the runner's output so a full pipe can never stall the emulation
        self._drainer = threading.Thread(
            target=self._drain, args=(self.runner.stdout,), daemon=True
        )
        self._drainer.start()
        if self.bridge is not None:
            self._start_bridge()
        return self.endpoint

    def _start_plant(self) -> socket.socket | None:
        """Start the plant process (if a plant file is given) and wait until it is ready;
        return the runner's end of their socket pair.

        Raises:
            EmulatorError: the plant file or robot config is invalid (the plant's one line).
        """
        if self.plant is None:
            return None
        ours, theirs = socket.socketpair()
        args = [sys.executable, "-m", "snake_bringup.plant_bridge", "--fd", str(theirs.fileno())]
        args += ["--robot", str(robot_config(self.robot))]
        args += ["--plant", str(robot_config(str(self.plant)))]  # a file, or a config name
        args += ["--log", str(self.plant_log)] if self.plant_log is not None else []
        args += ["--pose-port", str(free_port(socket.SOCK_DGRAM))]  # used with a pose sensor
        self.plant_proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            preexec_fn=die_with_parent,  # it raises its priority once ready
            pass_fds=(theirs.fileno(),),
        )
        theirs.close()
        assert self.plant_proc.stdout is not None
        lines = []
        for line in self.plant_proc.stdout:  # compiling the kernels may take a few seconds
            if line.startswith("PLANT ready"):
                break
            lines.append(line.strip())
        else:
            ours.close()
            self.stop()
            raise EmulatorError(lines[-1] if lines else "the plant process ended silently")
        self.output.append(line.strip())
        pose = re.search(r"\bpose_port=(\d+)", line)
        self.pose_port = int(pose[1]) if pose else None
        self._plant_drainer = threading.Thread(
            target=self._drain, args=(self.plant_proc.stdout,), daemon=True
        )
        self._plant_drainer.start()
        return ours

    def _drain(self, stream: IO[str]) -> None:
        for line in stream:
            self.output.append(line.rstrip())

    def _start_bridge(self) -> None:
        if shutil.which("socat") is None:
            self.stop()
            raise EmulatorError("socat is missing: apt-get install socat")
        kind = socket.SOCK_STREAM if self.bridge == "tcp" else socket.SOCK_DGRAM
        self.bridge_port = self.bridge_port or free_port(kind)
        listen = "TCP-LISTEN" if self.bridge == "tcp" else "UDP-LISTEN"
        # nodelay: without it socat's Nagle adds ~44 ms to every round trip (bench/driver.py)
        options = ",fork,nodelay" if self.bridge == "tcp" else ""
        self.socat = subprocess.Popen(
            [
                "socat",
                f"{listen}:{self.bridge_port},bind=127.0.0.1,reuseaddr{options}",
                f"FILE:{self.pty},raw,echo=0",
            ],
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        if self.bridge == "tcp":  # wait until it listens
            deadline = time.monotonic() + 5.0
            while not tcp_listening(self.bridge_port):
                if time.monotonic() > deadline or self.socat.poll() is not None:
                    self.stop()
                    raise EmulatorError(f"socat did not listen on tcp {self.bridge_port}")
                time.sleep(0.05)
            return
        time.sleep(0.2)  # UDP: nothing to probe without consuming the first datagram

    def running(self) -> bool:
        """True while simavr runs."""
        return self.runner is not None and self.runner.poll() is None

    def exit_reason(self) -> str | None:
        """Why the emulated robot has ended, or None while it runs (for
        :func:`snake_bringup.runner.run_graph`'s ``outside``)."""
        if self.running():
            return None
        last = self.output[-1] if self.output else "no output"
        return f"the emulated robot (simavr) exited ({last})"

    def graph_ready(self) -> None:
        """Tell the plant that the graph around the emulated robot is up (SIGUSR1): its end
        line then also tells the lag the running graph added (``running_behind_ms``)."""
        if self.plant_proc is not None and self.plant_proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.plant_proc.send_signal(signal.SIGUSR1)

    def stop(self) -> None:
        """Stop socat, simavr and the plant (SIGTERM, then SIGKILL after 3 s)."""
        for proc in (self.socat, self.runner, self.plant_proc):
            if proc is None or proc.poll() is not None:
                continue
            if proc is self.plant_proc and proc is not None and _ends_within(proc, 3.0):
                continue  # the runner gone, the plant ends by itself (its log whole)
            with contextlib.suppress(ProcessLookupError):  # its group: socat's children too
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=3.0)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=3.0)
        self.socat = None
        for drainer in (self._drainer, self._plant_drainer):  # last lines: summaries on exit
            if drainer is not None:
                drainer.join(timeout=3.0)

    @property
    def plant_report(self) -> str:
        """How the plant kept real time, once stopped (its ``PLANT end ...`` line), or ""."""
        return next((x for x in reversed(self.output) if x.startswith("PLANT end ")), "")

    def __enter__(self) -> Emulator:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
