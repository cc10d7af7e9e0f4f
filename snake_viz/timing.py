"""Whether a run's timing can be trusted: the jumps of its command stamps and of the robot's
clock (no ROS).

gait_node stamps each command with its clock at a fixed period; the robot stamps each
telemetry sample with its own clock. A graph starved of the CPU (or a clock that stalls)
shows as a step between consecutive stamps far longer than the usual one: the commands
then jumped in time, the servos followed a gait with a gap, and the comparison of such a
run says more about the machine than about the model. :func:`judge_timing` measures both
jumps and gives the reasons a run is untrusted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

#: Default largest jump of the command stamps beyond their period for a trusted run [s].
DEFAULT_MAX_COMMAND_JUMP_S = 0.05
#: Default largest jump of the robot's clock (its telemetry stamps) beyond their period [s].
DEFAULT_MAX_CLOCK_JUMP_S = 0.05
#: Range of both bounds [s].
JUMP_BOUND_RANGE_S = (0.001, 10.0)
#: The commands' topic (gait_node's).
COMMAND_TOPIC = "/joint_commands"


def stamp_jump(stamps: ArrayLike) -> float:
    """The largest step between consecutive stamps beyond their median step [s].

    Args:
        stamps: sample stamps [s], in any order (sorted here; repeats count as one).

    Returns:
        max(diff) - median(diff) of the sorted unique stamps [s]; 0.0 for fewer than three.
    """
    t = np.unique(np.asarray(stamps, dtype=np.float64).reshape(-1))
    if t.size < 3:
        return 0.0
    steps = np.diff(t)
    return float(np.max(steps) - np.median(steps))


@dataclass(frozen=True)
class Timing:
    """How the run's clocks held, and why it is untrusted.

    Attributes:
        command_jump: :func:`stamp_jump` of the command stamps [s] (None: no commands).
        clock_jump: :func:`stamp_jump` of the robot's telemetry stamps [s].
        max_command_jump: the bound on ``command_jump`` [s].
        max_clock_jump: the bound on ``clock_jump`` [s].
        reasons: one line per bound exceeded (empty: trusted).
    """

    command_jump: float | None
    clock_jump: float
    max_command_jump: float
    max_clock_jump: float
    reasons: tuple[str, ...]

    @property
    def trusted(self) -> bool:
        """No bound exceeded."""
        return not self.reasons

    def line(self) -> str:
        """One line for a terminal and summary.md."""
        if self.trusted:
            commands = "n/a" if self.command_jump is None else f"{self.command_jump:.3f}"
            return (
                f"timing trusted: command stamps jumped {commands} s, robot clock "
                f"{self.clock_jump:.3f} s beyond their periods"
            )
        return f"timing UNTRUSTED: {'; '.join(self.reasons)}"

    def as_dict(self) -> dict[str, Any]:
        """The fields of summary.json (seconds)."""
        return {
            "trusted": self.trusted,
            "untrusted_because": list(self.reasons),
            "command_jump_s": self.command_jump,
            "clock_jump_s": self.clock_jump,
            "max_command_jump_s": self.max_command_jump,
            "max_clock_jump_s": self.max_clock_jump,
        }


def judge_timing(
    commands: ArrayLike | None,
    measured: ArrayLike,
    max_command_jump: float = DEFAULT_MAX_COMMAND_JUMP_S,
    max_clock_jump: float = DEFAULT_MAX_CLOCK_JUMP_S,
) -> Timing:
    """Measure the jumps of a run's command and telemetry stamps against their bounds.

    Args:
        commands: the command stamps [s] (None: the run's commands are unknown, not judged).
        measured: the robot's telemetry stamps [s], on its clock.
        max_command_jump: largest command-stamp jump of a trusted run [s].
        max_clock_jump: largest telemetry-stamp jump of a trusted run [s].
    """
    command_jump = None if commands is None else stamp_jump(commands)
    clock_jump = stamp_jump(measured)
    reasons = []
    if command_jump is not None and command_jump > max_command_jump:
        reasons.append(f"command stamps jumped {command_jump:.3f} s (bound {max_command_jump:g} s)")
    if clock_jump > max_clock_jump:
        reasons.append(
            f"robot clock jumped {clock_jump:.3f} s (telemetry stamps; bound {max_clock_jump:g} s)"
        )
    return Timing(command_jump, clock_jump, max_command_jump, max_clock_jump, tuple(reasons))
