"""A host-side slew limit on servo targets, so a new session never makes the servos jump (no ROS).

After a reconnect or an MCU restart the commanded pose (a gait) may be far from where the
servos are. :class:`Ramp` moves the targets from where the robot is towards the commanded
pose by at most ``speed * period`` per target frame, until it has caught up; from then on
targets pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping


class Ramp:
    """Slew-limited targets from an origin pose to the commanded one.

    Args:
        speed: largest joint speed [rad/s] (the servo speed).
        period: time between two target frames [s]: each frame moves a joint by at most
            ``speed * period`` [rad].
    """

    def __init__(self, speed: float, period: float) -> None:
        if not (speed > 0.0 and period > 0.0):
            raise ValueError(f"need speed > 0 and period > 0, got {speed!r}, {period!r}")
        self.max_step = speed * period
        self._pose: dict[str, float] | None = None

    @property
    def active(self) -> bool:
        """True while the targets are being slewed (not yet caught up)."""
        return self._pose is not None

    def start(self, origin: Mapping[str, float]) -> None:
        """Ramp from ``origin`` [rad] (by joint name) from the next target on."""
        self._pose = dict(origin)

    def stop(self) -> None:
        """Pass targets through unchanged."""
        self._pose = None

    def step(self, target: Mapping[str, float]) -> dict[str, float]:
        """The next targets [rad]: ``target`` moved towards from the current pose by at most
        ``max_step`` per joint (joints missing from the origin pass through)."""
        if self._pose is None:
            return dict(target)
        out = {}
        for joint, goal in target.items():
            here = self._pose.get(joint, goal)
            out[joint] = here + min(max(goal - here, -self.max_step), self.max_step)
        if all(out[j] == g for j, g in target.items()):
            self._pose = None  # caught up
        else:
            self._pose = out
        return out
