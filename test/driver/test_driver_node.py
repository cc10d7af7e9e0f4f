"""driver_node (a real process, real rclpy) against the firmware core's POSIX build on a pty:
commands in, time-stamped measurements out, diagnostics, a latched e-stop answered at once
and confirmed in the diagnostics, bad and stale commands rejected, and authenticated mode
set up from the hardware graph's arguments."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.driver import (
    DRIVER_LOG,
    JOINTS,
    DriverClient,
    command,
    own_driver,
    serial_args,
    start_driver,
    stop_driver,
)
from support.fault_proxy import FakeDevice
from support.firmware import build_posix, start_firmware
from support.nodes import domain, ros_env, spin_until

from snake_bringup import cli, runner
from snake_bringup.graph import GraphError, hardware_graph
from snake_driver.health import HINT_ECHO
from snake_driver.keyfile import write_key_file
from snake_driver.protocol import Decoder, Direction, Estop, Ping

#: Every test here needs ROS 2 installed: the module imports rclpy and the nodes.
pytestmark = pytest.mark.ros
rclpy = pytest.importorskip("rclpy")
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from rclpy.time import Time  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Bool  # noqa: E402
from std_srvs.srv import SetBool, Trigger  # noqa: E402

from snake_ros.common import STOP_QOS, STOP_TOPIC  # noqa: E402

__all__ = ["domain"]  # the fixture of support.nodes: rclpy on this module's domain
KEY_HEX = "00112233445566778899aabbccddeeff"


@pytest.fixture(scope="module")
def firmware_build() -> Path:
    return build_posix()


@pytest.fixture(scope="module")
def firmware_pty(firmware_build: Path) -> Iterator[str]:
    proc, pty = start_firmware(firmware_build)
    yield pty
    proc.kill()
    proc.wait(timeout=5)


@pytest.fixture(scope="module")
def driver(
    domain: int, firmware_pty: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """driver_node on the emulated robot; yields its log file."""
    log = tmp_path_factory.mktemp("driver") / DRIVER_LOG
    proc = start_driver(serial_args(firmware_pty), log)
    yield log
    stop_driver(proc, log)


@pytest.mark.ros
@pytest.mark.simavr
def test_measured_joint_states_follow_commands_with_mcu_stamps(driver) -> None:
    target = [0.2 if k % 2 else -0.3 for k in range(8)]
    target[2] = 1.9  # beyond the +-90 deg limit, within command_limit_margin: clamped
    expected = [min(x, math.pi / 2) for x in target]
    with DriverClient("driver_test") as client:
        measured, diagnostics = client.measured, client.diagnostics

        def reached() -> bool:
            client.pub.publish(command(target))
            return bool(measured) and all(
                abs(a - b) < 1e-3 for a, b in zip(measured[-1].position, expected, strict=True)
            )

        assert client.spin_until(reached, 20.0), "measured state never reached the command"
        last = measured[-1]
        assert list(last.name) == JOINTS
        assert last.position[2] == pytest.approx(math.pi / 2, abs=1e-3)
        # stamped from the MCU clock mapped to ROS time: close to now, increasing
        now = client.node.get_clock().now().nanoseconds * 1e-9
        stamp = last.header.stamp.sec + last.header.stamp.nanosec * 1e-9
        assert abs(now - stamp) < 0.2
        stamps = [m.header.stamp.sec + m.header.stamp.nanosec * 1e-9 for m in measured[-20:]]
        assert all(b > a for a, b in itertools.pairwise(stamps))

        def clamped_counted() -> bool:  # a diagnostics message published after the clamps
            return int(client.values().get("commands_clamped", 0)) > 0

        assert client.spin_until(clamped_counted, 10.0), "the clamped commands were never counted"
        values = client.values()
        assert values["connected"] == "True" and values["bad_crc"] == "0"

        def ok() -> bool:
            status = diagnostics[-1].status[0] if diagnostics else None
            return status is not None and status.level == DiagnosticStatus.OK

        assert client.spin_until(ok, 5.0)
        assert diagnostics[-1].status[0].message.startswith("receiving telemetry at")


@pytest.mark.ros
@pytest.mark.simavr
def test_with_publish_clock_the_robot_clock_drives_clock_and_stamps(
    domain, firmware_build, tmp_path
) -> None:
    """``publish_clock``: /clock runs forward only, the measured states are stamped on it
    (never ahead of the /clock published before them), and a command stamped on it is
    followed (its age judged on the robot's clock). In a namespace of its own: the module's
    driver publishes measured states beside it."""
    clocked = ["-p", "publish_clock:=true", "-r", "__ns:=/clocked"]
    with own_driver(firmware_build, clocked, tmp_path / DRIVER_LOG) as own:
        node = rclpy.create_node("clock_test")
        clocks: list[int] = []
        node.create_subscription(
            Clock, "/clock", lambda m: clocks.append(Time.from_msg(m.clock).nanoseconds), 100
        )
        pub = node.create_publisher(JointState, "/clocked/joint_commands", 10)
        target = [0.3] * 8
        states: list[JointState] = []
        node.create_subscription(JointState, "/clocked/measured/joint_states", states.append, 100)

        def following() -> bool:
            if clocks:
                msg = command(target)
                msg.header.stamp = Time(nanoseconds=clocks[-1]).to_msg()
                pub.publish(msg)
            return bool(states) and all(abs(a - 0.3) < 1e-3 for a in states[-1].position)

        try:
            assert spin_until(node, following, 20.0), (
                "the robot did not follow clock-stamped commands"
            )
            assert spin_until(node, lambda: len(states) >= 50 and len(clocks) >= 50, 20.0)
            measured = [Time.from_msg(m.header.stamp).nanoseconds for m in states]
            assert all(b > a for a, b in itertools.pairwise(clocks))
            assert all(b > a for a, b in itertools.pairwise(measured))
            assert spin_until(node, lambda: clocks[-1] >= measured[-1], 5.0)
        finally:
            node.destroy_node()
    assert "refused /joint_commands" not in own.out


@pytest.mark.ros
@pytest.mark.simavr
def test_commands_that_stop_for_command_timeout_let_the_watchdog_trip(
    domain, firmware_build, tmp_path
) -> None:
    """``command_timeout`` 0.3 s (a station's link lost): once the commands stop, the driver
    sends the MCU no more targets, so the firmware's watchdog (500 ms) trips, as its
    telemetry reports: a trip. Commands again do not re-arm it (they did before issue 35),
    nor does the operator's heartbeat, the stop state false on /estop heard again and again
    (the current state, no act of the operator; the driver re-armed on it before). Its
    release does: the stop state true latches the e-stop (source topic), false releases it
    and ends the trip, with the next commands. The module's driver (0: never) keeps the robot
    on its last targets instead (test_estop_... pauses on that); the stop states reach it too
    and leave it as it was."""
    timed = ["-p", "command_timeout:=0.3", "-r", "__ns:=/timed"]
    with own_driver(firmware_build, timed, tmp_path / DRIVER_LOG) as own:
        node = rclpy.create_node("command_timeout_test")
        pub = node.create_publisher(JointState, "/timed/joint_commands", 10)
        stop = node.create_publisher(Bool, STOP_TOPIC, STOP_QOS)
        seen: list[dict[str, str]] = []

        def on_diagnostics(msg: DiagnosticArray) -> None:
            for status in msg.status:
                if own.pty in status.hardware_id:  # not the module's driver's
                    seen.append({kv.key: kv.value for kv in status.values})

        node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)

        def tripped() -> bool:
            return bool(seen) and seen[-1].get("watchdog_tripped") == "True"

        def commanded() -> bool:
            pub.publish(command([0.2] * 8))
            return bool(seen) and seen[-1].get("watchdog_tripped") == "False"

        try:
            assert spin_until(node, commanded, 30.0), "the driver never reported an armed robot"
            assert spin_until(node, tripped, 15.0), "the watchdog never tripped"
            mark = len(seen)

            def heartbeat() -> bool:
                stop.publish(Bool(data=False))  # the station's heartbeat, at 20 Hz here
                return commanded() or len(seen) >= mark + 3

            # three diagnostics (about 3 s) of commands and heartbeats: still tripped, the
            # driver says why
            assert spin_until(node, heartbeat, 15.0)
            assert all(v["watchdog_tripped"] == "True" for v in seen[mark:]), "re-armed"
            assert "watchdog" in seen[-1]["tripped"] and seen[-1]["trips"] == "1"
            assert seen[-1]["stop_state"] == "False"

            stop.publish(Bool(data=True))  # the operator's stop ...

            def latched() -> bool:
                pub.publish(command([0.2] * 8))
                return bool(seen) and (seen[-1]["estop"], seen[-1]["estop_source"]) == (
                    "True",
                    "topic",
                )

            assert spin_until(node, latched, 15.0), "the stop state true latched nothing"
            stop.publish(Bool(data=False))  # ... and its release
            assert spin_until(
                node, lambda: commanded() and seen[-1]["estop_latched"] == "False", 15.0
            ), "the stop state's release did not release its own e-stop and re-arm"
            assert seen[-1]["tripped"] == "no" and seen[-1]["trips"] == "1"
        finally:
            node.destroy_node()


@pytest.mark.ros
@pytest.mark.simavr
def test_bad_commands_are_rejected_and_the_driver_keeps_serving(driver) -> None:
    with DriverClient("driver_bad_commands") as client:
        measured = client.measured
        assert client.spin_until(client.following([0.1] * 8), 20.0)
        for bad in (command([math.nan] * 8), command([0.5] * 7), command([0.5], ["joint_99"])):
            client.pub.publish(bad)
        measured.clear()
        assert client.spin_until(lambda: len(measured) > 10, 5.0)
        assert all(abs(m.position[0] - 0.1) < 1e-3 for m in measured)  # bad ones never acted on

        def rejected() -> bool:
            return int(client.values().get("commands_rejected", 0)) >= 3

        assert client.spin_until(rejected, 5.0)


@pytest.mark.ros
@pytest.mark.simavr
def test_estop_is_confirmed_latched_and_released_only_by_enable(driver) -> None:
    """~/estop answers success (sent and latched) at once; the diagnostics say when the
    firmware's telemetry confirms it; from then on the driver sends no targets (the firmware
    refuses none as NOT_ARMED) until ~/enable."""
    with DriverClient("driver_estop") as client:
        measured, diagnostics, values = client.measured, client.diagnostics, client.values
        estop = client.node.create_client(Trigger, "/driver_node/estop")
        enable = client.node.create_client(SetBool, "/driver_node/enable")
        assert estop.wait_for_service(timeout_sec=10.0)
        assert enable.wait_for_service(timeout_sec=10.0)

        assert client.spin_until(client.following([0.15] * 8), 20.0)
        future = estop.call_async(Trigger.Request())
        assert client.spin_until(future.done, 5.0)
        assert future.result().success and "latched" in future.result().message

        def latched() -> bool:
            client.pub.publish(command([-0.15] * 8))
            return (
                values().get("estop") == "True"
                and values().get("estop_latched") == "True"
                and values().get("estop_confirmed") == "True"
            )

        assert client.spin_until(latched, 5.0)
        refused, reports = int(values()["error_reports"]), len(diagnostics)
        # two more diagnostics (about 2 s) of commands the firmware would refuse if they came
        assert client.spin_until(lambda: latched() and len(diagnostics) >= reports + 2, 5.0)
        assert int(values()["error_reports"]) == refused
        assert all(abs(a - 0.15) < 1e-3 for a in measured[-1].position)  # held, not moved

        future = enable.call_async(SetBool.Request(data=True))
        assert client.spin_until(future.done, 5.0) and future.result().success
        assert client.spin_until(client.following([-0.15] * 8), 5.0)
        assert client.spin_until(lambda: values().get("estop_latched") == "False", 5.0)
        assert values()["estop"] == "False"
        # the log tells what /diagnostics told: the e-stop, then the link OK again
        assert client.spin_until(
            lambda: "link OK" in driver.read_text().split("e-stop latched by")[-1], 10.0
        )
        # (by ~/estop; or still "by the operator's stop state" when an earlier test's stop
        # state left the level at WARN until this e-stop)
        assert "link WARN: e-stop latched by" in driver.read_text()


@pytest.mark.ros
@pytest.mark.simavr
def test_stale_and_future_commands_are_refused_and_counted(driver) -> None:
    """Commands stamped in 1970, an hour ago, 1e6 s ahead or before 1970 are never acted on
    and never stop the node; each is counted in the diagnostics (unstamped ones, as the
    other tests send, count as now)."""
    with DriverClient("driver_stale_commands") as client:
        measured, pub = client.measured, client.pub

        def stale_count() -> int:
            return int(client.values().get("commands_stale", 0))

        assert client.spin_until(client.following([0.05] * 8), 20.0)
        assert client.spin_until(lambda: bool(client.diagnostics), 5.0)
        before = stale_count()
        now = client.node.get_clock().now().nanoseconds * 1e-9
        for stamp in (1.0, now - 3600.0, now + 1e6):
            msg = command([-0.4] * 8)
            msg.header.stamp = Time(nanoseconds=int(stamp * 1e9)).to_msg()
            pub.publish(msg)
        negative = command([-0.4] * 8)
        negative.header.stamp.sec = -5  # int32 allows it; rclpy's Time refuses it
        pub.publish(negative)
        assert client.spin_until(lambda: stale_count() >= before + 4, 10.0)
        measured.clear()
        assert client.spin_until(lambda: len(measured) > 10, 5.0)
        assert all(abs(a - 0.05) < 1e-3 for m in measured for a in m.position)


#: Builds driver_node against a device that answers PINGs only (never confirms an e-stop),
#: waits for the session, calls the e-stop service's callback directly and reports how often
#: it polled the link meanwhile.
ESTOP_PROBE = """
import json, sys, time, rclpy
from std_srvs.srv import Trigger
rclpy.init(args=["--ros-args", "-p", "transport:=tcp", "-p", "port:='" + sys.argv[1] + "'",
                 "-p", "robot_config:=robot"])
from snake_driver.driver_node import DriverNode
node = DriverNode()
deadline = time.monotonic() + 20.0
while not node.link.connected and time.monotonic() < deadline:
    rclpy.spin_once(node, timeout_sec=0.05)
polls = []
poll = node.link.poll
node.link.poll = lambda timeout=0.0: (polls.append(timeout), poll(timeout))[1]
response = node.on_estop(Trigger.Request(), Trigger.Response())
print(json.dumps({"connected": node.link.connected, "polls": len(polls),
                  "success": response.success, "message": response.message}))
node.destroy_node()
rclpy.shutdown()
"""


@pytest.mark.ros
def test_estop_answers_from_state_without_polling(domain) -> None:
    """The e-stop callback never waits for the firmware (the old one polled the link for up
    to 0.3 s inside the callback, stalling every timer): it latches, sends and answers."""
    with FakeDevice("pong") as device:
        out = subprocess.run(
            [sys.executable, "-c", ESTOP_PROBE, str(device.port)],
            capture_output=True,
            text=True,
            timeout=120,
            env=ros_env(),
        )
        sent = sent_estops(bytes(device.received))
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["connected"] and result["polls"] == 0
    assert result["success"] and "until the firmware confirms" in result["message"]
    assert sent >= 1


#: Builds driver_node on the firmware's pty, spins it until the session's first report, then
#: never again: a command published meanwhile waits in its subscription, and only the send
#: callback, called directly as its timer would be, can take it. Reports whether the robot
#: followed it.
SEND_PROBE = """
import json, sys, time, rclpy
from sensor_msgs.msg import JointState
rclpy.init(args=["--ros-args", "-p", "transport:=serial", "-p", "port:=" + sys.argv[1],
                 "-p", "robot_config:=robot"])
from snake_driver.driver_node import DriverNode
from snake_ros.common import stream_qos
node = DriverNode()
deadline = time.monotonic() + 30.0
while node.last_measurement is None and time.monotonic() < deadline:
    rclpy.spin_once(node, timeout_sec=0.05)
talker = rclpy.create_node("send_probe")
pub = talker.create_publisher(JointState, "joint_commands", stream_qos())
while pub.get_subscription_count() < 1 and time.monotonic() < deadline:
    time.sleep(0.01)
msg = JointState()
msg.name = [f"joint_{i}" for i in range(1, 9)]
msg.position = [0.1] * 8
def followed():
    m = node.last_measurement
    return m is not None and all(abs(a - 0.1) < 2e-3 for a in m.positions.values())
sends = 0
while not followed() and time.monotonic() < deadline:
    pub.publish(msg)
    node.on_poll()
    node.on_send()
    sends += 1
    time.sleep(0.01)
print(json.dumps({"connected": node.link.connected, "followed": followed(), "sends": sends}))
talker.destroy_node()
node.destroy_node()
rclpy.shutdown()
"""


@pytest.mark.ros
@pytest.mark.simavr
def test_a_send_takes_the_command_waiting_in_the_middleware(firmware_build) -> None:
    """The executor runs a ready send timer before the command that arrived with it, so the
    send used to go out with the command before it, a whole command period (20 ms) older: in
    46 % of a loaded demo's sends (bench/notes/2026-12-07-compensation-on-mujoco.md). The
    send now takes every waiting command first. Reference: the firmware's reports, with the
    driver's subscription never run by an executor: the robot follows the command only if
    the send takes it."""
    firmware, pty = start_firmware(firmware_build)
    try:
        out = subprocess.run(
            [sys.executable, "-c", SEND_PROBE, pty],
            capture_output=True,
            text=True,
            timeout=120,
            env=ros_env(),
        )
    finally:
        firmware.kill()
        firmware.wait(timeout=5)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["connected"], result
    assert result["followed"], result


def sent_estops(stream: bytes) -> int:
    """ESTOP frames in what the host sent."""
    return sum(
        isinstance(m, Estop) for _, m in Decoder(None, Direction.TO_MCU).feed_messages(stream)
    )


@pytest.mark.ros
def test_a_port_that_echoes_is_an_error_with_its_hint_and_gets_only_pings(domain) -> None:
    """The driver pointed at a loopback (as at a wrong port that echoes): its own frames come
    back; diagnostics say ERROR with the echo hint, never OK, and nothing but PINGs is sent."""
    node = rclpy.create_node("driver_echo_test")
    diagnostics: list[DiagnosticArray] = []
    node.create_subscription(DiagnosticArray, "/diagnostics", diagnostics.append, 10)
    with FakeDevice("echo") as device:
        proc = start_driver(
            [
                "-r",
                "__node:=driver_echo",
                "-p",
                "transport:=tcp",
                "-p",
                f"port:='{device.port}'",
                "-p",
                "robot_config:=robot",
            ]
        )
        try:

            def echo_reported() -> bool:
                return any(
                    s.name == "mfm_snake driver: link" and HINT_ECHO in s.message
                    for d in diagnostics
                    for s in d.status
                )

            assert spin_until(node, echo_reported, 20.0), [
                s.message for d in diagnostics for s in d.status
            ]
        finally:
            stop_driver(proc)
            node.destroy_node()
        sent = Decoder(None, Direction.TO_MCU).feed_messages(bytes(device.received))
    statuses = [s for d in diagnostics for s in d.status if s.hardware_id.startswith("tcp")]
    assert statuses and all(s.level == DiagnosticStatus.ERROR for s in statuses)
    assert sent and all(isinstance(m, Ping) for _, m in sent)


@pytest.mark.ros
@pytest.mark.simavr
def test_commands_faster_than_the_line_are_skipped_counted_and_warned_about(
    domain, firmware_build
) -> None:
    """command_rate 200 Hz of 26-byte targets (5 200 bytes/s) on a 9600 baud line (960
    bytes/s; the driver uses 90 %): targets that do not fit are skipped, the diagnostics
    count them and the log says what to change; telemetry keeps coming."""
    slow = ["-r", "__node:=driver_slow_line", "-r", "measured/joint_states:=/slow/joint_states",
            "-r", "joint_commands:=/slow/joint_commands", "-p", "baudrate:=9600",
            "-p", "command_rate:=200.0"]  # fmt: skip
    with own_driver(firmware_build, slow) as own:
        node = rclpy.create_node("driver_slow_line_test")
        diagnostics: list[DiagnosticArray] = []
        measured: list[JointState] = []
        node.create_subscription(DiagnosticArray, "/diagnostics", diagnostics.append, 10)
        node.create_subscription(JointState, "/slow/joint_states", measured.append, 50)
        pub = node.create_publisher(JointState, "/slow/joint_commands", 10)

        def skipped() -> int:
            values = [
                dict((kv.key, kv.value) for kv in s.values)
                for d in diagnostics
                for s in d.status
                if s.hardware_id == f"serial {own.pty} @ 9600"
            ]
            return max((int(v.get("frames_skipped_line_busy", 0)) for v in values), default=0)

        def busy() -> bool:
            pub.publish(command([0.1] * 8))
            return skipped() > 10 and len(measured) > 10

        try:
            assert spin_until(node, busy, 20.0), (skipped(), len(measured))
        finally:
            node.destroy_node()
    assert "command_rate x frame size exceeds the line" in own.out
    assert "lower command_rate (now 200 Hz) or raise baudrate" in own.out


@pytest.mark.ros
@pytest.mark.simavr
def test_the_hardware_graph_sets_up_authenticated_mode(domain, firmware_build, tmp_path) -> None:
    """The driver as the launch file and ``snake hardware`` start it with auth_key_file talks
    to the firmware built with that key (a plain driver would verify none of its telemetry)."""
    key_file = write_key_file(tmp_path / "key", bytes.fromhex(KEY_HEX))
    firmware, pty = start_firmware(firmware_build, "--key-file", str(key_file))
    graph = hardware_graph("robot", "serial", pty, auth_key_file=str(key_file), rviz=False)
    spec = next(s for s in graph if s.executable == "driver_node")
    # beside the module's driver: its own name and measured topic
    spec = dataclasses.replace(
        spec, name="driver_auth", remappings=(("/measured/joint_states", "/auth/joint_states"),)
    )
    cmd, files = runner.ros_command(spec, Path(sys.executable), tmp_path)
    for path, text in files.items():
        path.write_text(text)
    proc = start_driver(cmd[cmd.index("--ros-args") + 1 :])
    node = rclpy.create_node("driver_auth_test")
    measured: list[JointState] = []
    node.create_subscription(JointState, "/auth/joint_states", measured.append, 50)
    try:
        assert spin_until(node, lambda: len(measured) > 5, 20.0), "no authenticated telemetry"
    finally:
        node.destroy_node()
        out = stop_driver(proc)
        firmware.kill()
        firmware.wait(timeout=5)
    assert "(authenticated)" in out


def test_a_bad_auth_key_is_one_line_from_the_graph_and_the_cli(capsys, tmp_path) -> None:
    bad = write_key_file(tmp_path / "bad", b"")
    bad.write_text(KEY_HEX[:-1] + "z\n")
    with pytest.raises(GraphError, match=r"auth_key_file: key file \S+: the key must be 32 hex"):
        hardware_graph(auth_key_file=str(bad))
    assert cli.main(["hardware", "--key-file", str(bad), "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"snake: error: --key-file: key file {bad}: the key must be 32 hex digits (128 bits), "
        "got other characters"
    ]


@pytest.mark.ros
@pytest.mark.simavr
def test_commands_far_beyond_the_limits_are_refused_counted_and_never_executed(driver) -> None:
    """The campaign's 1e9 rad and DBL_MAX: before, clamped and executed (every joint driven to
    its limit); now refused whole and counted in commands_out_of_range. Reference: the
    measured angles (the firmware's reports) stay at the last good command."""
    with DriverClient("driver_out_of_range") as client:
        measured, values = client.measured, client.values
        assert client.spin_until(client.following([0.15] * 8), 20.0)
        assert client.spin_until(lambda: "commands_out_of_range" in values(), 10.0), values()
        before = int(values()["commands_out_of_range"])
        bad = [[1e9] * 8, [sys.float_info.max] * 8, [0.15] * 7 + [-1e9]]
        for positions in bad:
            client.pub.publish(command(positions))
        measured.clear()
        assert client.spin_until(lambda: len(measured) > 10, 5.0)
        assert all(abs(a - 0.15) < 1e-3 for m in measured for a in m.position)  # never acted on
        counted = lambda: int(values().get("commands_out_of_range", 0)) >= before + 3  # noqa: E731
        assert client.spin_until(counted, 10.0), values()
