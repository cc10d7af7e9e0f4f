"""What a client on the ROS domain with no credentials gets from driver_node (a real
process, real rclpy): not the link key (no parameter holds it, and no command line), and no
"successful" change of a parameter the driver read once at start (rclpy refuses a set of a
read-only parameter). The driver also refuses a key file open to other users, warns once
about plain mode over a network transport, and refuses a domain open to other hosts unless
allowed. The driver's link is a serial device that does not exist: the node starts and
serves its parameters while its worker thread retries the link."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.nodes import interrupt, node_process, parameters

from snake_driver.keyfile import write_key_file
from snake_ros import READY_TEXT

pytestmark = [pytest.mark.ros, pytest.mark.parallel]
rclpy = pytest.importorskip("rclpy")
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue  # noqa: E402
from rcl_interfaces.srv import GetParameters, ListParameters, SetParameters  # noqa: E402

KEY_HEX = "c0ffee00112233445566778899aabbcc"
NO_DEVICE = "/dev/mfm_snake_no_such_device"
START_S = 60.0  # the driver's start on a loaded 2-core machine (rclpy import included)


def driver_process(
    tmp_path: Path, *params: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """driver_node with these ``-p`` parameters (output on a pipe)."""
    return node_process(
        "snake_driver.driver_node",
        parameters("robot_config:=robot", *params),
        log_dir=tmp_path / "ros_log",
        env=env,
    )


def stop(proc: subprocess.Popen[str]) -> str:
    """Ctrl-C, then its output."""
    return interrupt(proc, 15.0)


@pytest.fixture(scope="module")
def node(ros_domain: int) -> Iterator[object]:
    """A client with no credentials: a plain rclpy node on the driver's domain."""
    rclpy.init()
    client = rclpy.create_node("stranger")
    yield client
    client.destroy_node()
    rclpy.try_shutdown()


def call(node, service_type, name: str, request):  # type: ignore[no-untyped-def]
    client = node.create_client(service_type, name)
    try:
        assert client.wait_for_service(timeout_sec=START_S), f"{name} never appeared"
        future = client.call_async(request)
        rclpy.spin_until_future_complete(node, future, timeout_sec=30.0)
        assert future.done(), f"{name} did not answer"
        return future.result()
    finally:
        node.destroy_client(client)


def set_request(name: str, value: ParameterValue) -> SetParameters.Request:
    return SetParameters.Request(parameters=[Parameter(name=name, value=value)])


def test_a_stranger_cannot_read_the_key_nor_change_a_read_once_parameter(
    node, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    key_file = write_key_file(tmp_path / "key", bytes.fromhex(KEY_HEX))
    proc = driver_process(
        tmp_path, f"auth_key_file:={key_file}", f"port:={NO_DEVICE}", "command_timeout:=0.5"
    )
    try:
        listed = call(
            node, ListParameters, "/driver_node/list_parameters", ListParameters.Request()
        )
        names = list(listed.result.names)
        assert "auth_key" not in names and "auth_key_file" in names
        values = call(
            node, GetParameters, "/driver_node/get_parameters", GetParameters.Request(names=names)
        )
        assert KEY_HEX not in repr(values.values).lower()  # no parameter holds the key
        asked = call(
            node,
            GetParameters,
            "/driver_node/get_parameters",
            GetParameters.Request(names=["auth_key"]),
        )
        assert [v.type for v in asked.values] in ([], [ParameterType.PARAMETER_NOT_SET])
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode()
        assert KEY_HEX not in cmdline.lower() and str(key_file) in cmdline

        # the campaign's two sets, answered "successful" before: now refused with the reason
        zero = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=0.0)
        other = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value="/tmp/other")
        for name, value in (("command_timeout", zero), ("auth_key_file", other)):
            answer = call(
                node, SetParameters, "/driver_node/set_parameters", set_request(name, value)
            )
            assert [r.successful for r in answer.results] == [False], name
            assert "read-only" in answer.results[0].reason, answer.results[0].reason
        key = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=KEY_HEX)
        answer = call(
            node, SetParameters, "/driver_node/set_parameters", set_request("auth_key", key)
        )
        assert [r.successful for r in answer.results] == [False]  # not declared
        after = call(
            node,
            GetParameters,
            "/driver_node/get_parameters",
            GetParameters.Request(names=["command_timeout"]),
        )
        assert after.values[0].double_value == 0.5
    finally:
        out = stop(proc)
    assert KEY_HEX not in out.lower() and "Traceback" not in out, out


def test_a_key_file_open_to_others_stops_the_driver_in_one_line(tmp_path: Path) -> None:
    key_file = write_key_file(tmp_path / "key", bytes.fromhex(KEY_HEX))
    key_file.chmod(0o644)
    proc = driver_process(tmp_path, f"auth_key_file:={key_file}", f"port:={NO_DEVICE}")
    out, _ = proc.communicate(timeout=START_S)
    assert proc.returncode == 1, out
    fatal = [line for line in out.splitlines() if "FATAL" in line]
    assert len(fatal) == 1 and "Traceback" not in out, out
    assert fatal[0].endswith(
        f"cannot start: key file {key_file} is open to other users (mode 0644): "
        f"chmod 600 {key_file}"
    ), fatal


def test_plain_mode_over_udp_warns_once(tmp_path: Path) -> None:
    proc = driver_process(tmp_path, "transport:=udp", "host:=127.0.0.1", "port:='9'")
    try:
        lines: list[str] = []
        assert proc.stdout is not None
        for line in proc.stdout:  # until the node is up (the warning comes before)
            lines.append(line)
            if READY_TEXT in line or len(lines) > 200:
                break
    finally:
        out = "".join(lines) + stop(proc)
    warned = [line for line in out.splitlines() if "plain mode over udp to 127.0.0.1:9" in line]
    assert len(warned) == 1, out
    assert "[ERROR]" in warned[0] and "auth_key_file" in warned[0]


def test_the_driver_refuses_an_open_domain_unless_allowed(tmp_path: Path) -> None:
    """On ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET the driver stops in one line, exit 1; with
    allow_open_domain it starts (its domain is this module's own, so nothing else is there)."""
    subnet = {"ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"}
    proc = driver_process(tmp_path, f"port:={NO_DEVICE}", env=subnet)
    out, _ = proc.communicate(timeout=START_S)
    assert proc.returncode == 1, out
    fatal = [line for line in out.splitlines() if "FATAL" in line]
    assert len(fatal) == 1 and "Traceback" not in out, out
    assert (
        "cannot start: refusing to start driver_node on a ROS domain open to other hosts "
        "(ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET)" in fatal[0]
    )
    assert "allow_open_domain:=true" in fatal[0]
