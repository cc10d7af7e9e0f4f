"""snake identify is the operator of its own takes: each take it plays is fresh intent, which
ends a trip of the pause before it (the firmware's watchdog trips while the last take's bag
is written), read before the intent on the robot's own clock, however far it lags the
host's; never an e-stop; and a take the robot did not play is refused in one line
(snake_bringup.identification.experiment.play, docs/safety.md).

Reference: a link stub over a firmware emulated in a few lines, on an MCU clock that runs at
``rate`` times the host's, with the rules of firmware/core (a watchdog that trips
``watchdog_ms`` after the last frame acted on, ENABLE beside the first targets of a fresh
intent, targets refused while tripped or e-stopped) and of snake_driver.link.DriverLink (a
trip read after targets flowed holds the targets until a resume() after it, which ends the
trip, never the e-stop; a latched e-stop sends none); it counts the targets sent and
refused.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import pytest

from snake_bringup.identification import experiment
from snake_driver.link import Measurement
from snake_driver.protocol import Counters, Flag
from snake_dynamics.gaits import make_gait

JOINTS = ("joint_1", "joint_2")
GAIT = make_gait("serpenoid", [[0.0, 0.0, 1.0]] * len(JOINTS))
HELD_US = 1500  # the pulse the firmware holds at the end of the last take [us]


@dataclass
class System:
    watchdog_ms: int = 500
    telemetry_period_ms: int = 20


@dataclass
class Servos:
    joint_names: tuple[str, ...] = JOINTS
    system: System = field(default_factory=System)


@dataclass
class LinkStub:
    """The parts of DriverLink that ``play`` uses. At the start the last take has just ended
    (its last targets acted on at MCU time 0, the firmware armed) unless ``fresh`` (a new
    session: no targets flowed, so a watchdog trip is no trip of the link). The firmware's
    reports reach the link ``delay`` [s] of host time after it made them (a backlog in a
    loaded emulator's pty); frames reach the firmware at once."""

    rate: float = 1.0  # MCU seconds per host second
    delay: float = 0.0
    fresh: bool = False
    estopped: bool = False  # latched in the link
    firmware_estop: bool = False  # pressed on the robot: disarmed, refuses every target
    enable_lost: bool = False  # every ENABLE lost on the way: a trip holds the firmware
    reporting: bool = True
    servos: Servos = field(default_factory=Servos)
    connected: bool = True
    lost_reason: str = ""
    tripped: str = ""
    sent: int = 0  # targets the link sent
    refused: int = 0  # targets the link held back (tripped or e-stopped)
    firmware_refused: int = 0  # targets the firmware refused (tripped, e-stopped, disarmed)
    trip_read_at: float | None = None  # host time the link read the trip [s, monotonic]
    intent_at: float | None = None  # host time of the take's intent [s, monotonic]

    def __post_init__(self) -> None:
        self.t0 = time.monotonic()
        # the firmware
        self.fed_us = 0  # the latest frame acted on [us, MCU]
        self.frames_ok = 0
        self.enabled = not self.firmware_estop
        self.watchdog_tripped = False
        self.pulses = dict.fromkeys(JOINTS, 0 if self.firmware_estop else HELD_US)
        self.next_report_us = 0
        self.made: list[Measurement] = []  # reports on their way to the link
        # the link
        self.flowed = not self.fresh
        self.armed_seen = not self.fresh
        self.read_flags = Flag.ENABLED if self.enabled else Flag.ESTOP
        self.acted_on: tuple[int, int] | None = None  # as DriverLink's mcu_quiet_us
        self.newest_us: int | None = None

    def mcu_us(self, host_t: float | None = None) -> int:
        return int(((time.monotonic() if host_t is None else host_t) - self.t0) * self.rate * 1e6)

    def _run_firmware(self, until_us: int) -> None:
        """The firmware's reports up to MCU time ``until_us``, in order."""
        system = self.servos.system
        while self.reporting and self.next_report_us <= until_us:
            t = self.next_report_us
            self.next_report_us += system.telemetry_period_ms * 1000
            if self.enabled and t - self.fed_us >= system.watchdog_ms * 1000:
                self.watchdog_tripped = True
            flags = Flag(0)
            for on, flag in (
                (self.enabled, Flag.ENABLED),
                (self.firmware_estop, Flag.ESTOP),
                (self.watchdog_tripped, Flag.WATCHDOG_TRIPPED),
            ):
                flags |= flag if on else Flag(0)
            counters = Counters(frames_ok=self.frames_ok)
            self.made.append(Measurement(None, t, {}, dict(self.pulses), flags, 0, counters))

    @property
    def mcu_quiet_us(self) -> int | None:
        if self.acted_on is None or self.newest_us is None:
            return None
        return self.newest_us - self.acted_on[1]

    def resume(self) -> None:
        self.intent_at = time.monotonic()
        self.tripped = ""  # the operator's go ends the trip, not the e-stop

    def send_targets(self, targets: dict[str, float], duration_ms: int) -> tuple[list[str], list]:
        assert set(targets) == set(JOINTS)
        if self.tripped or self.estopped:
            self.refused += 1
            return [], []
        now_us = self.mcu_us()
        self._run_firmware(now_us)
        self.sent += 1
        self.flowed = True
        rearm = not self.read_flags & Flag.ENABLED or self.read_flags & Flag.WATCHDOG_TRIPPED
        if rearm and not self.read_flags & Flag.ESTOP:  # the link's ENABLE beside them
            self.frames_ok += 1
            if not (self.firmware_estop or self.enable_lost):
                self.enabled, self.watchdog_tripped = True, False
        self.fed_us, self.frames_ok = now_us, self.frames_ok + 1
        if self.firmware_estop or self.watchdog_tripped or not self.enabled:
            self.firmware_refused += 1
        else:
            self.pulses = {j: HELD_US + round(600 * q) for j, q in targets.items()}
        return [], []

    def now(self) -> float:
        return time.monotonic()

    def ping(self) -> list[object]:
        return []

    def poll(self, timeout: float) -> tuple[list[Measurement], list[object]]:
        time.sleep(timeout)  # as a blocking read
        now = time.monotonic()
        self._run_firmware(self.mcu_us(now))
        arrived_us = self.mcu_us(now - self.delay)
        reports = [m for m in self.made if m.mcu_time_us <= arrived_us]
        del self.made[: len(reports)]
        for m in reports:  # as DriverLink reads them
            self.read_flags = m.flags
            if self.acted_on is None or self.acted_on[0] != m.counters.frames_ok:
                self.acted_on = (m.counters.frames_ok, m.mcu_time_us)
            self.newest_us = m.mcu_time_us
            if m.flags & Flag.ENABLED and not m.flags & Flag.WATCHDOG_TRIPPED:
                self.armed_seen = True
            elif m.flags & Flag.WATCHDOG_TRIPPED and self.armed_seen and self.flowed:
                self.armed_seen = False
                if not (self.estopped or self.tripped):
                    self.tripped = "the firmware's watchdog tripped"
                    self.trip_read_at = now
        return reports, []


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(experiment, "REST_S", 0.05)
    monkeypatch.setattr(experiment, "COMMAND_RATE", 200.0)


def play(link: LinkStub, duration: float = 0.1) -> experiment.Take:
    """The validation take of ``duration`` [s] on the stub."""
    return experiment.play(
        link,  # type: ignore[arg-type]
        GAIT,
        duration,
        lambda _line: None,
        "validation",
    )


@pytest.mark.parametrize(
    ("rate", "delay", "read_after"),
    [(1.0, 0.0, 0.5), (1.0, 0.6, 1.1), (0.4, 0.0, 1.25), (0.4, 0.6, 1.85)],
    ids=["prompt", "reports-late", "clock-slow", "both"],
)
def test_a_trip_of_the_pause_is_read_before_the_intent_on_the_robot_clock(
    quick: None, rate: float, delay: float, read_after: float
) -> None:
    """The firmware's watchdog trips 0.5 s of its clock after the last take; its report
    reaches the link ``read_after`` [s] of host time after the last take when the robot's
    clock runs at ``rate`` times the host's and its reports come ``delay`` late (an emulator
    under load). The trip is read before the take's intent, which ends it, and the whole
    take is played (the old 0.7 s of host time played "reports-late" to a robot held by the
    trip it read during the take)."""
    link = LinkStub(rate=rate, delay=delay)
    take = play(link, 0.2 + delay)  # the reports of its start come before its end
    assert link.trip_read_at is not None and link.intent_at is not None
    assert read_after <= link.trip_read_at - link.t0 < link.intent_at - link.t0
    assert link.refused == link.firmware_refused == 0
    assert link.sent == len(take.commands) >= 10


def test_a_take_in_a_fresh_session_plays_and_keeps_its_reports(quick: None) -> None:
    link = LinkStub(fresh=True)
    take = play(link)
    assert link.trip_read_at is None, "a watchdog trip before the first targets is no trip"
    assert link.refused == 0 and link.sent == len(take.commands) >= 10
    assert take.measurements and all(m.flags & Flag.ENABLED for m in take.measurements[-3:])
    moved = {m.pulses_us["joint_1"] for m in take.measurements}
    assert len(moved) > 1, "the pulses followed the take"


@pytest.mark.parametrize(
    ("where", "said"),
    [
        ("estopped", "the e-stop is latched"),
        ("firmware_estop", "it reported its e-stop throughout"),
        ("enable_lost", "it reported its watchdog tripped throughout"),
    ],
    ids=["latched-in-the-link", "pressed-on-the-robot", "held-by-its-watchdog"],
)
def test_a_take_the_robot_never_played_is_refused_in_one_line(
    quick: None, where: str, said: str
) -> None:
    link = LinkStub(**{where: True})
    with pytest.raises(experiment.IdentifyError) as error:
        play(link)
    message = str(error.value)
    assert message == (
        f"the robot did not play the validation: {said}; check the e-stop and the watchdog"
    )
    if link.estopped:
        assert link.sent == 0 and link.refused >= 10
    else:
        assert link.firmware_refused == link.sent >= 10


def test_a_robot_whose_reports_do_not_cover_the_pause_is_an_error(
    quick: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(experiment, "DRAIN_TIMEOUT_S", 0.1)
    link = LinkStub(reporting=False)
    with pytest.raises(experiment.IdentifyError) as error:
        play(link)
    message = str(error.value)
    assert message.startswith("before the validation, the robot's reports did not cover 560 ms")
    assert "\n" not in message and link.sent == link.refused == 0
