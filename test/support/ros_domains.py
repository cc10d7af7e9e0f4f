"""ROS domain ids held machine-wide, so that concurrent test processes never share one."""

from __future__ import annotations

import fcntl
import os
import random
import tempfile
from pathlib import Path

#: ROS domain ids handed out to test modules: 1..101 (0 is everyone's default; above 101 the
#: DDS ports of a domain can meet Linux's ephemeral port range).
ROS_DOMAINS = range(1, 102)
#: Where the domain locks live: one file per id, shared by every test process on the machine.
DOMAIN_LOCKS = Path(tempfile.gettempdir()) / "mfm_snake-ros-domains"


def claim_ros_domain() -> tuple[int, int]:
    """A ROS domain id no other test module on this machine holds now, and the descriptor of
    its lock (held until closed: the kernel frees it if the process dies).

    Raises:
        RuntimeError: every id is taken (more than 101 test modules at once).
    """
    DOMAIN_LOCKS.mkdir(exist_ok=True)
    for domain in random.sample(ROS_DOMAINS, len(ROS_DOMAINS)):
        fd = os.open(DOMAIN_LOCKS / f"{domain}.lock", os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return domain, fd
    raise RuntimeError(f"all ROS domains {ROS_DOMAINS} are held by other test processes")
