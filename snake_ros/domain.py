"""How far this process's ROS 2 discovery reaches, and the robot role's refusal of a domain
open beyond this host (docs/safety.md, "The threat model").

Any participant that discovers the driver can publish ``/joint_commands`` and call
``~/enable``: the runtime from PyPI has no DDS security, so who can discover it is the only
fence. Discovery stays on this host with ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` (and no
``ROS_STATIC_PEERS``) or ``OFF``; unset, ``SYSTEM_DEFAULT`` and ``SUBNET`` reach every host of
the network. No rclpy here: the ``snake`` command checks before it starts anything.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping

from snake_dynamics.errors import SnakeError

#: The environment variables that decide how far discovery reaches.
RANGE_ENV = "ROS_AUTOMATIC_DISCOVERY_RANGE"
PEERS_ENV = "ROS_STATIC_PEERS"
LEGACY_ENV = "ROS_LOCALHOST_ONLY"


class OpenDomainError(SnakeError):
    """The robot role asked to start on a ROS domain that other hosts can join."""


def open_discovery(environ: Mapping[str, str] | None = None) -> str | None:
    """Why discovery reaches beyond this host (e.g. ``ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET``),
    or None when it stays on it."""
    env = os.environ if environ is None else environ
    reach = env.get(RANGE_ENV, "").strip().upper()
    peers = env.get(PEERS_ENV, "").strip()
    if reach == "OFF":  # static peers are off too
        return None
    if not reach and env.get(LEGACY_ENV, "").strip() == "1":
        reach = "LOCALHOST"  # the deprecated switch, honoured while the range is unset
    if reach == "LOCALHOST":
        return f"{PEERS_ENV}={peers}" if peers else None
    return f"{RANGE_ENV}={reach}" if reach else f"{RANGE_ENV} unset (SUBNET)"


def refuse_open_domain(what: str, flag: str, environ: Mapping[str, str] | None = None) -> None:
    """Refuse to start ``what`` (the robot role) on a domain open beyond this host.

    Args:
        what: what would start, for the message.
        flag: how the user allows it (``--allow-open-domain`` or the parameter).
        environ: the environment to judge (default: this process's).

    Raises:
        OpenDomainError: discovery reaches beyond this host (the message says how far and
            both ways out).
    """
    reach = open_discovery(environ)
    if reach is not None:
        raise OpenDomainError(
            f"refusing to start {what} on a ROS domain open to other hosts ({reach}): anyone "
            "there can publish /joint_commands and call ~/enable; set "
            f"{RANGE_ENV}=LOCALHOST, or pass {flag} on an isolated network (docs/safety.md)"
        )


def keep_discovery_local(environ: MutableMapping[str, str] | None = None) -> bool:
    """Set ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` when nothing sets how far discovery
    reaches (a graph run wholly on this host needs no other); True when it did."""
    env = os.environ if environ is None else environ
    if any(env.get(name, "").strip() for name in (RANGE_ENV, PEERS_ENV, LEGACY_ENV)):
        return False
    env[RANGE_ENV] = "LOCALHOST"
    return True
