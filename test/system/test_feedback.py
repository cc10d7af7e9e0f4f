"""Analog feedback through the real firmware ELF in simavr: voltages held on ADC0-2 by the
runner (`--adc K=MV`), two-point calibrations sent over the protocol (CONFIG_FEEDBACK), and
telemetry's measured angles and feedback_mask.

Reference: the calibration formula of firmware/PROTOCOL.md ("Feedback") applied, in floating
point, to the ideal reading of each voltage, 1024 * MV / 5000 counts (the AVcc reference of
an Arduino Mega; simavr 1.6 converts to floor(1023 * MV / 5000), the chip to
floor(1024 * MV / 5000)). Tolerance: one count of the 10-bit ADC through the calibration's
slope, plus the firmware's rounding to a whole centidegree.
"""

from __future__ import annotations

import math
import os
import re
import time
from pathlib import Path

import pytest
import yaml
from support.driver import DriverClient, command, start_driver, stop_driver
from support.firmware import build_posix, start_firmware
from support.nodes import domain
from support.waits import wait_for

from snake_driver import protocol as p
from snake_driver.calibration import load_servo_map
from snake_driver.link import DriverLink, Measurement
from snake_driver.transport import SerialTransport
from system.test_firmware import TIMEOUT_S, Link, build_avr, emulator
from system.test_flood import PASS_LIMIT_CYCLES

rclpy = pytest.importorskip("rclpy")
from diagnostic_msgs.msg import DiagnosticStatus  # noqa: E402

pytestmark = pytest.mark.simavr

ROOT = Path(__file__).resolve().parents[2]
__all__ = ["domain"]  # the fixture of support.nodes: rclpy on this module's domain

AVCC_MV = 5000
VOLTS_MV = {0: 1000, 1: 2500, 2: 4200}
#: potentiometers in robot.yaml's terms (servos.joints.<joint>.feedback)
FEEDBACK = {
    "joint_1": {"adc_lo": 0, "angle_lo_deg": -90.0, "adc_hi": 1023, "angle_hi_deg": 90.0},
    "joint_2": {"adc_lo": 100, "angle_lo_deg": 90.0, "adc_hi": 900, "angle_hi_deg": -90.0},
}
CALIBRATIONS = {
    0: p.ConfigFeedback(0, True, 0, -9000, 1023, 9000),
    1: p.ConfigFeedback(1, True, 100, 9000, 900, -9000),  # a reversed pot, clamped range
    2: p.ConfigFeedback(2, True, 0, 0, 1023, 1023),  # 1 cdeg per count: the raw reading
}


def calibrated_cdeg(cal: p.ConfigFeedback, counts: float) -> float:
    """PROTOCOL.md's two-point calibration, clamped to its angle range [cdeg]."""
    x = min(max(counts, cal.adc_lo), cal.adc_hi)
    slope = (cal.angle_hi_cdeg - cal.angle_lo_cdeg) / (cal.adc_hi - cal.adc_lo)
    return cal.angle_lo_cdeg + (x - cal.adc_lo) * slope


def test_measured_angles_are_the_calibrated_voltages() -> None:
    """Three voltages on ADC0-2, each channel with its own calibration: telemetry reports
    their angles with feedback_mask 0b111; channel 3 (no feedback) reports its estimate with
    its bit clear; a channel switched off goes back to its estimate; nonsense is refused."""
    elf = build_avr()
    adc_args = [a for k, mv in VOLTS_MV.items() for a in ("--adc", f"{k}={mv}")]
    with emulator(elf, *adc_args) as emulated:
        link = Link(emulated.pty)
        link.ping(
            p.ConfigFeedback(3, True, 500, 0, 500, 9000),  # one reading for two angles
            p.ConfigFeedback(4, True, 0, 0, 1024, 9000),  # beyond 10 bits
            *CALIBRATIONS.values(),
            p.SetTargets((0, 0, 0, 2500)),
        )
        assert [(e.code, e.msg_type) for e in link.errors] == [
            (p.ErrorCode.BAD_PAYLOAD, p.MsgType.CONFIG_FEEDBACK)
        ] * 2
        t = link.wait_telemetry(
            "three measured angles, channel 3's estimate at its target",
            lambda t: t.feedback_mask == 0b111 and t.angles_cdeg[3] == 2500,
        )
        for k, mv in VOLTS_MV.items():
            cal = CALIBRATIONS[k]
            slope = abs(cal.angle_hi_cdeg - cal.angle_lo_cdeg) / (cal.adc_hi - cal.adc_lo)
            ideal = calibrated_cdeg(cal, 1024 * mv / AVCC_MV)
            assert abs(t.angles_cdeg[k] - ideal) <= slope + 0.5, (k, t.angles_cdeg[k], ideal)
        assert t.angles_cdeg[2] == 1023 * VOLTS_MV[2] // AVCC_MV  # simavr's reading: 859
        assert [t.measured(k) for k in range(5)] == [True, True, True, False, False]
        link.send(p.ConfigFeedback(1, on=False))
        link.wait_telemetry(
            "channel 1 back to its estimate",
            lambda t: t.feedback_mask == 0b101 and t.angles_cdeg[1] == 0,
        )
        os.close(link.fd)


def test_driver_link_reports_measured_joints(tmp_path: Path) -> None:
    """The host end to end: a servo map with feedback: on joint_1 and joint_2 (robot.yaml
    plus two calibrations) sends CONFIG_FEEDBACK in the session's configuration, and the
    link's measurements name those joints as measured, at their calibrated voltages; the
    other six stay estimates."""
    _, servos = load_servo_map(feedback_config(tmp_path))
    elf = build_avr()
    adc_args = [a for k, mv in VOLTS_MV.items() for a in ("--adc", f"{k}={mv}")]
    with emulator(elf, *adc_args) as emulated:
        link = DriverLink(SerialTransport(emulated.pty), servos, now=time.monotonic)
        seen: list[Measurement] = []

        def both_measured() -> bool:
            seen.extend(link.poll(0.02)[0])
            return bool(seen) and seen[-1].measured == {"joint_1", "joint_2"}

        wait_for(both_measured, TIMEOUT_S, "joint_1 and joint_2 measured")
        link.close()
    m = seen[-1]
    assert m.estimated == [f"joint_{k}" for k in range(3, 9)]
    for joint, channel in (("joint_1", 0), ("joint_2", 1)):
        cal = servos.by_joint()[joint].feedback
        assert cal is not None
        cdeg = calibrated_cdeg(cal.config_message(channel), 1024 * VOLTS_MV[channel] / AVCC_MV)
        slope = 18000 / (cal.adc_hi - cal.adc_lo)
        assert abs(math.degrees(m.positions[joint]) * 100 - cdeg) <= slope + 0.5, joint


def feedback_config(tmp_path: Path) -> Path:
    """robot.yaml with potentiometer calibrations on joint_1 and joint_2 (channels 0, 1)."""
    doc = yaml.safe_load((ROOT / "config/robot.yaml").read_text())
    joints = doc["servos"]["joints"]
    joints["joint_1"]["feedback"] = FEEDBACK["joint_1"]
    joints["joint_2"]["feedback"] = FEEDBACK["joint_2"]
    path = tmp_path / "robot_feedback.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.ros
def test_driver_node_publishes_measured_angles_and_says_which(domain: int, tmp_path: Path) -> None:
    """driver_node on the ELF with voltages on ADC0-1: /measured/joint_states carries
    joint_1 and joint_2 at their calibrated voltages, and the diagnostics count 2 measured
    joints and name the 6 estimated ones. On the firmware's host build (no ADC) the same
    config's joints report no feedback: WARN, naming them."""
    config = feedback_config(tmp_path)
    _, servos = load_servo_map(config)
    elf = build_avr()
    adc_args = [a for k, mv in VOLTS_MV.items() for a in ("--adc", f"{k}={mv}")]
    with DriverClient("feedback_test") as client:
        states, diagnostics, values = client.measured, client.diagnostics, client.values
        args = ["-p", "transport:=serial", "-p", f"robot_config:={config}"]
        with emulator(elf, *adc_args) as emulated:
            driver = start_driver([*args, "-p", f"port:={emulated.pty}"])
            try:
                ok = client.spin_until(lambda: values().get("measured_joints") == "2", 20.0)
                assert ok, values()
                assert client.spin_until(lambda: bool(states), 5.0)
            finally:
                stop_driver(driver)
        assert values()["estimated_joints"] == ", ".join(f"joint_{k}" for k in range(3, 9))
        assert values()["feedback_missing"] == "none"
        last = states[-1]
        for k, joint in enumerate(("joint_1", "joint_2")):
            cal = servos.by_joint()[joint].feedback
            assert cal is not None
            cdeg = calibrated_cdeg(cal.config_message(k), 1024 * VOLTS_MV[k] / AVCC_MV)
            slope = 18000 / (cal.adc_hi - cal.adc_lo)
            assert abs(math.degrees(last.position[k]) * 100 - cdeg) <= slope + 0.5, joint

        proc, pty = start_firmware(build_posix())
        diagnostics.clear()
        driver = start_driver([*args, "-p", f"port:={pty}"])
        try:

            def warned() -> bool:
                client.pub.publish(command([0.0] * 8))  # feeds the watchdog
                status = diagnostics[-1].status[0] if diagnostics else None
                return status is not None and status.message.startswith("no feedback")

            assert client.spin_until(warned, 20.0), values()
            status = diagnostics[-1].status[0]
            assert status.level == DiagnosticStatus.WARN
            assert status.message.startswith("no feedback from joint_1, joint_2: publishing")
            assert values()["feedback_missing"] == "joint_1, joint_2"
            assert values()["measured_joints"] == "0"
        finally:
            stop_driver(driver)
            proc.kill()
            proc.wait(timeout=5)


def loop_run(channels: int) -> tuple[list[p.Telemetry], str]:
    """2 s of 16 enabled channels moving (1 s moves re-sent every ~50 ms), 20 ms telemetry,
    feedback on ADC0..channels-1 (held at 0.5, 1.0, ... V): the reports and the runner's
    output (its LOOP line: --loop-pin K0)."""
    elf = build_avr()
    adc_args = [a for k in range(8) for a in ("--adc", f"{k}={500 + 500 * k}")]
    with emulator(elf, "--loop-pin", "K0", *adc_args) as emulated:
        link = Link(emulated.pty)
        link.ping(
            *(p.ConfigChannel(k) for k in range(16)),
            *(p.ConfigFeedback(k, True, 0, -9000, 1023, 9000) for k in range(channels)),
            p.SetTargets((0,) * 16),
            p.Enable(True),
        )
        sweep = p.SetTargets(tuple(4000 if k % 2 else -4000 for k in range(16)), 1000)
        link.feed_for(2.0, sweep)
        os.close(link.fd)
    assert "RESET" not in emulated.output
    return link.telemetry, emulated.output


def loop_cycles(output: str) -> tuple[int, int]:
    """The runner's longest and median main-loop pass [CPU cycles]."""
    found = re.search(r"^LOOP .*max_cycles=(\d+) .*median_cycles=(\d+)", output, re.MULTILINE)
    assert found is not None, output
    return int(found[1]), int(found[2])


def test_eight_feedback_channels_keep_the_main_loop_bounded() -> None:
    """Feedback on all of ADC0-7 (the ADC interrupt converting without pause) beside 16
    enabled, moving channels and 20 ms telemetry: every report carries the 8 measured
    angles, the MCU never resets, and the longest main-loop pass (PK0) stays within 5 ms
    (an ESTOP waits for the running pass), as under a flood (test_flood), with and without
    feedback. The figures printed are PROTOCOL.md's ("Feedback")."""
    figures = {}
    for channels in (0, 8):
        telemetry, output = loop_run(channels)
        worst, median = loop_cycles(output)
        assert worst <= PASS_LIMIT_CYCLES, output
        figures[channels] = f"worst pass {worst} cycles ({worst / 16e3:.2f} ms), median {median}"
    # the channels start measuring one by one as their calibrations arrive; then all stay
    first = next(i for i, t in enumerate(telemetry) if t.feedback_mask == 0xFF)
    reports = telemetry[first:]
    assert len(reports) >= 50 and all(t.feedback_mask == 0xFF for t in reports)
    for k in range(8):
        counts = 1023 * (500 + 500 * k) // AVCC_MV  # simavr's reading
        assert reports[-1].angles_cdeg[k] == round(-9000 + counts * 18000 / 1023)
    print(f"no feedback: {figures[0]}; feedback on ADC0-7: {figures[8]}")
