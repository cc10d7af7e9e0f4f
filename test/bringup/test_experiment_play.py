"""snake identify is the operator of its own takes: each take it plays is fresh intent, which
ends a trip of the pause before it (the firmware's watchdog trips while the last take's bag
is written), read before the intent, and never an e-stop
(snake_bringup.identification.experiment.play, docs/safety.md).

Reference: a link stub that refuses targets while tripped or e-stopped, as
snake_driver.link.DriverLink does, and counts what it sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from snake_bringup.identification import experiment
from snake_dynamics.gaits import make_gait

JOINTS = ("joint_1", "joint_2")


@dataclass
class Servos:
    joint_names: tuple[str, ...] = JOINTS


@dataclass
class LinkStub:
    """The parts of DriverLink that ``play`` uses; held after a trip or an e-stop."""

    tripped: bool = False
    trip_reported: bool = True  # the pause's reports, not read yet, show the watchdog tripped
    estopped: bool = False
    servos: Servos = field(default_factory=Servos)
    connected: bool = True
    lost_reason: str = ""
    sent: int = 0
    refused: int = 0

    def operator_stop(self, stop: bool) -> list[object]:
        assert not stop
        self.tripped = False  # fresh intent ends the trip, not the e-stop
        return []

    def send_targets(self, targets: dict[str, float], duration_ms: int) -> tuple[list[str], list]:
        assert set(targets) == set(JOINTS)
        if self.tripped or self.estopped:
            self.refused += 1
        else:
            self.sent += 1
        return [], []

    def now(self) -> float:
        return 0.0

    def ping(self) -> list[object]:
        return []

    def poll(self, timeout: float) -> tuple[list[object], list[object]]:
        if self.trip_reported:  # DriverLink trips when it reads them
            self.tripped, self.trip_reported = True, False
        return [], []


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(experiment, "REST_S", 0.05)
    monkeypatch.setattr(experiment, "COMMAND_RATE", 200.0)


def test_a_take_after_a_trip_is_played_to_an_armed_robot(quick: None) -> None:
    link = LinkStub()
    gait = make_gait("serpenoid", [[0.0, 0.0, 1.0]] * len(JOINTS))
    experiment.play(link, gait, 0.1, lambda _line: None, "validation")  # type: ignore[arg-type]
    assert link.refused == 0 and link.sent >= 10


def test_a_take_never_plays_past_an_e_stop(quick: None) -> None:
    link = LinkStub(estopped=True)
    gait = make_gait("serpenoid", [[0.0, 0.0, 1.0]] * len(JOINTS))
    experiment.play(link, gait, 0.1, lambda _line: None, "validation")  # type: ignore[arg-type]
    assert link.sent == 0 and link.refused >= 10
