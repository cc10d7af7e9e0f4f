"""How far discovery reaches (snake_ros.domain), judged from the environment variables ROS 2
Kilted reads (ROS_AUTOMATIC_DISCOVERY_RANGE, ROS_STATIC_PEERS, the deprecated
ROS_LOCALHOST_ONLY; docs/two-hosts.md measured which ones let discovery leave the host), and
the robot role's one-line refusal. No rclpy: the snake command checks before it starts."""

from __future__ import annotations

import pytest

from snake_ros.domain import (
    OpenDomainError,
    keep_discovery_local,
    open_discovery,
    refuse_open_domain,
)


@pytest.mark.parametrize(
    ("env", "reach"),
    [
        ({}, "ROS_AUTOMATIC_DISCOVERY_RANGE unset (SUBNET)"),
        ({"ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"}, "ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET"),
        (
            {"ROS_AUTOMATIC_DISCOVERY_RANGE": "SYSTEM_DEFAULT"},
            "ROS_AUTOMATIC_DISCOVERY_RANGE=SYSTEM_DEFAULT",
        ),
        ({"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}, None),
        ({"ROS_AUTOMATIC_DISCOVERY_RANGE": "localhost"}, None),
        (
            {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "ROS_STATIC_PEERS": "10.77.0.2"},
            "ROS_STATIC_PEERS=10.77.0.2",
        ),
        ({"ROS_AUTOMATIC_DISCOVERY_RANGE": "OFF", "ROS_STATIC_PEERS": "10.77.0.2"}, None),
        ({"ROS_LOCALHOST_ONLY": "1"}, None),
        (
            {"ROS_LOCALHOST_ONLY": "1", "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"},
            "ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET",
        ),
    ],
)
def test_open_discovery(env: dict[str, str], reach: str | None) -> None:
    assert open_discovery(env) == reach


def test_the_robot_role_refuses_an_open_domain_in_one_line() -> None:
    refuse_open_domain(
        "driver_node", "--allow-open-domain", {"ROS_AUTOMATIC_DISCOVERY_RANGE": "OFF"}
    )
    with pytest.raises(OpenDomainError) as caught:
        refuse_open_domain("driver_node", "--allow-open-domain", {})
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(
        "refusing to start driver_node on a ROS domain open to other hosts "
        "(ROS_AUTOMATIC_DISCOVERY_RANGE unset (SUBNET))"
    )
    assert "ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST" in message
    assert "--allow-open-domain" in message


def test_discovery_is_kept_local_only_when_nothing_sets_it() -> None:
    env: dict[str, str] = {}
    assert keep_discovery_local(env) and env == {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    for name in ("ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_STATIC_PEERS", "ROS_LOCALHOST_ONLY"):
        chosen = {name: "SUBNET"}
        assert not keep_discovery_local(chosen) and chosen == {name: "SUBNET"}
