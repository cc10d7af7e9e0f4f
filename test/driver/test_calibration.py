"""Servo calibration: the pulse formula of PROTOCOL.md, the YAML section and its errors."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from snake_driver.calibration import CalibrationError, load_servo_map, servo_map, to_cdeg
from snake_driver.protocol import ConfigFeedback, SetTargets, WatchdogAction

ROOT = Path(__file__).resolve().parents[2]


def test_robot_yaml_maps_every_joint() -> None:
    model, servos = load_servo_map(ROOT / "config/robot.yaml")
    assert servos.joint_names == model.joint_names
    assert [c.channel for c in servos.channels] == list(range(8))
    assert servos.system.watchdog_ms == 500 and servos.system.watchdog_action == WatchdogAction.HOLD
    assert servos.system.servo_speed_cdeg_s == 60000
    config = servos.config_messages()
    assert config[1].min_cdeg == -9000 and config[1].max_cdeg == 9000  # from the model's limits


def test_pulse_formula_by_hand() -> None:
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    c = servos.channels[0]
    assert c.pulse_us(0.0) == 1500
    assert c.pulse_us(math.radians(45.0)) == 2000  # 1500 + 4500 cdeg * 2000 us / 18000 cdeg
    assert c.pulse_us(math.radians(-90.0)) == 500
    assert c.pulse_us(math.radians(120.0)) == 2500  # clamped at the joint limit first


def test_targets_clamp_to_limits_and_report_it() -> None:
    _, servos = load_servo_map(ROOT / "config/robot.yaml")
    positions = {f"joint_{k}": 0.1 * k for k in range(1, 9)}
    positions["joint_3"] = 2.0  # beyond +90 deg
    message, clamped = servos.targets(positions, duration_ms=20)
    assert isinstance(message, SetTargets) and message.duration_ms == 20
    assert clamped == ["joint_3"]
    assert message.targets_cdeg[2] == 9000 and message.targets_cdeg[0] == to_cdeg(0.1)
    with pytest.raises(CalibrationError, match="no position for joints"):
        servos.targets({"joint_1": 0.0})


def pot(**change: float) -> dict[str, float]:
    """A potentiometer calibration (robot.yaml's feedback: keys) with some values changed."""
    return {"adc_lo": 102, "angle_lo_deg": -90.0, "adc_hi": 921, "angle_hi_deg": 90.0} | change


def test_feedback_calibration_is_sent_per_channel() -> None:
    """A joint's feedback: becomes CONFIG_FEEDBACK for its channel (angles in cdeg); every
    other channel gets feedback off, so an earlier session's calibration does not linger."""
    doc = yaml.safe_load((ROOT / "config/robot.yaml").read_text())
    doc["servos"]["joints"]["joint_3"]["feedback"] = pot(angle_lo_deg=60.5, angle_hi_deg=-60.25)
    doc["servos"]["joints"]["joint_5"]["feedback"] = None
    from snake_dynamics import SnakeModel

    servos = servo_map(doc["servos"], SnakeModel.from_dict(doc["model"]))
    feedback = [m for m in servos.config_messages() if isinstance(m, ConfigFeedback)]
    assert [m.channel for m in feedback] == list(range(8))
    assert feedback[2] == ConfigFeedback(2, True, 102, 6050, 921, -6025)
    assert all(not m.on for k, m in enumerate(feedback) if k != 2)
    assert [c.joint for c in servos.channels if c.feedback] == ["joint_3"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s["joints"].pop("joint_4"), "joints.joint_4 is missing"),
        (lambda s: s["joints"].update(joint_9={"channel": 9}), r"unknown joints \['joint_9'\]"),
        (lambda s: s["joints"]["joint_2"].update(channel=0), "channels must be distinct"),
        (lambda s: s["joints"]["joint_2"].update(channel=16), "channel must be an integer 0..15"),
        (lambda s: s["joints"]["joint_2"].update(direction=2), "direction must be 1 or -1"),
        (lambda s: s["joints"]["joint_2"].update(pulse_min_us=400), "500 <= pulse_min_us"),
        (lambda s: s["joints"]["joint_2"].update(gain=1), r"unknown keys \['gain'\]"),
        (
            lambda s: s["driver"].update(watchdog_action="panic"),
            "watchdog_action must be hold or limp",
        ),
        (lambda s: s["driver"].update(telemetry_period_ms="fast"), "must be a finite number"),
        (lambda s: s["joints"]["joint_2"].update(feedback=5), "feedback must be a mapping"),
        (
            lambda s: s["joints"]["joint_2"].update(feedback={"adc_lo": 0}),
            "feedback needs exactly the keys",
        ),
        (
            lambda s: s["joints"]["joint_2"].update(feedback=pot(adc_lo=900, adc_hi=100)),
            "0 <= adc_lo < adc_hi <= 1023",
        ),
        (
            lambda s: s["joints"]["joint_2"].update(feedback=pot(adc_hi=1024)),
            "0 <= adc_lo < adc_hi <= 1023",
        ),
        (
            lambda s: s["joints"]["joint_2"].update(feedback=pot(angle_hi_deg=-90)),
            "two different angles",
        ),
        (
            lambda s: s["joints"]["joint_2"].update(feedback=pot(angle_lo_deg=-181)),
            "two different angles",
        ),
    ],
)
def test_bad_servo_sections_name_the_field(edit, message) -> None:  # type: ignore[no-untyped-def]
    doc = yaml.safe_load((ROOT / "config/robot.yaml").read_text())
    edit(doc["servos"])
    from snake_dynamics import SnakeModel

    model = SnakeModel.from_dict(doc["model"])
    with pytest.raises(CalibrationError, match=message):
        servo_map(doc["servos"], model)
