"""gait_node: publishes the commanded gait on ``joint_commands`` (sensor_msgs/JointState).

Parameters (``config/gaits.yaml``): ``gait``, ``<gait>.<parameter>`` for every gait of
:data:`snake_dynamics.GAITS` (with its range), ``transition_time``, ``ramp_time`` (changeable
at run time, blended smoothly), and the read-only ``robot_config``, ``publish_rate``,
``autostart``, ``wait_for_subscribers``, ``compensate``, ``command_delay``. Services
``~/start`` and ``~/stop`` (std_srvs/Trigger) ramp in and out.

The gait itself, the motion the joints should make, goes on ``joint_desired``. With
``compensate`` the commands on ``joint_commands`` are pre-shaped for the robot config's servos
and body (:func:`snake_dynamics.sim.compensation.compensated_command`, docs/mfm.md eq. 213),
so that the servos move the joints along the gait; without it they are the gait. With it, a
gait that asks more of a servo than it gives (eq. 215) is logged as a warning at the start
and at every gait change (``snake demo`` and ``snake hardware`` refuse it before starting).

With ``autostart`` the gait ramps in once ``joint_commands`` has ``wait_for_subscribers``
subscriptions (at most ``SUBSCRIBER_TIMEOUT_S`` after the first clock reading; rest until
then), so the robot, the prediction and a recorder all see it from rest: a subscriber that
is still being discovered would otherwise miss the start and begin somewhere mid-gait.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from snake_dynamics.errors import GaitError
from snake_dynamics.gaits import GAITS, Gait, GaitPlayer, PeriodicGait, make_gait
from snake_dynamics.sim.compensation import (
    Load,
    SaturationError,
    body_load,
    check_crawl,
    check_feasible,
    compensated_command,
)
from snake_ros.paths import load_robot

from .common import (
    THROTTLE_S,
    clock_ns,
    declare_bool,
    declare_float,
    declare_int,
    declare_robot_config,
    declare_string,
    run,
)

FloatArray = NDArray[np.float64]

#: Parameters that change the gait (the rest are read-only or timing).
GAIT_PARAMETERS = tuple(f"{gait}.{key}" for gait, spec in GAITS.items() for key in spec.params)


#: Longest wait of ``autostart`` for ``wait_for_subscribers`` [s] (then it starts anyway).
SUBSCRIBER_TIMEOUT_S = 10.0


class GaitNode(Node):
    """Plays a :class:`GaitPlayer` and publishes its q, q_dot at ``publish_rate``."""

    def __init__(self) -> None:
        super().__init__("gait_node")
        config = declare_robot_config(self)
        rate = declare_float(
            self, "publish_rate", 100.0, 1.0, 1000.0, "command rate [Hz]", read_only=True
        )
        autostart = declare_bool(self, "autostart", True, "start the gait when the node starts")
        self._wait_for = declare_int(
            self,
            "wait_for_subscribers",
            0,
            0,
            100,
            "with autostart: subscriptions of joint_commands to wait for before starting",
        )
        # the gait, its parameters and the blend times change live (_apply_parameters)
        declare_string(
            self, "gait", "serpenoid", "the gait to play", choices=tuple(GAITS), read_only=False
        )
        for name, spec in GAITS.items():
            for key, (default, low, high, unit) in spec.params.items():
                text = f"{name} {key} [{unit}]"
                declare_float(self, f"{name}.{key}", default, low, high, text, read_only=False)
        transition = declare_float(
            self,
            "transition_time",
            2.0,
            0.1,
            60.0,
            "blend time of a gait change [s]",
            read_only=False,
        )
        ramp = declare_float(
            self, "ramp_time", 2.0, 0.1, 60.0, "blend time of start/stop [s]", read_only=False
        )
        compensate = declare_bool(
            self,
            "compensate",
            False,
            "pre-shape joint_commands with the robot config's servo model and body so that the "
            "joints follow the gait (docs/mfm.md eq. 213); the gait itself is on joint_desired",
        )
        self._command_delay = declare_float(
            self,
            "command_delay",
            0.0,
            0.0,
            1.0,
            "with compensate: T_c, how late the firmware's servo targets follow "
            "joint_commands (the driver's path, eq. 218; the hardware graph sets 28 ms, 36.9 "
            "ms on the robot's clock); the servo model's dead time counts from those targets "
            "[s]",
            read_only=True,
        )

        robot = load_robot(config)  # once; the parts below are handed down
        self._model = robot.model
        self._servo = robot.servo
        self._compensate = compensate
        self._player = GaitPlayer(self._gait(), transition_time=transition, ramp_time=ramp)
        self._load = self._body_load()
        self._epoch_ns: int | None = None
        self._last_ns = 0
        self._autostart = autostart
        self._pending_start = False  # autostart waits for wait_for_subscribers
        self._pub = self.create_publisher(JointState, "joint_commands", 10)
        self._desired_pub = self.create_publisher(JointState, "joint_desired", 10)
        self.create_service(Trigger, "~/start", self._on_start)
        self.create_service(Trigger, "~/stop", self._on_stop)
        self.add_on_set_parameters_callback(self._check_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)
        self._timer = self.create_timer(1.0 / rate, self._tick)
        self._next_tick_ns: int | None = None  # the timer's next scheduled call [ns]
        self._published = 0
        self._stamps = (0, 0)  # of the first and the last message published [ns]
        self._skipped_ticks = 0
        shaped = f"compensated for the {self._servo.describe()}" if compensate else "as is"
        self.get_logger().info(
            f"{self._model.name}: {self._describe()} at {rate:g} Hz on {self._pub.topic_name} "
            f"({shaped}; the gait on {self._desired_pub.topic_name})"
        )
        self._warn_if_saturating()

    # ---------------------------------------------------------------- conversions
    def _gait(self, changes: dict[str, object] | None = None) -> Gait:
        """The gait from the current parameters, with ``changes`` applied."""
        values = {p: self.get_parameter(p).value for p in ("gait", *GAIT_PARAMETERS)}
        values.update(changes or {})
        name = str(values["gait"])
        params = {key: values[f"{name}.{key}"] for key in GAITS[name].params}
        return make_gait(name, self._model, **params)

    def _describe(self) -> str:
        name = self.get_parameter("gait").value
        params = ", ".join(
            f"{key}={self.get_parameter(f'{name}.{key}').value:g}" for key in GAITS[name].params
        )
        return f"gait {name}({params})"

    def _body_load(self) -> Load | None:
        """With ``compensate``, the body's load along the player's gait (eqs. 214, 216)."""
        gait = self._player.gait
        if not self._compensate or not isinstance(gait, PeriodicGait):
            return None
        return body_load(self._model, gait)

    def _warn_if_saturating(self) -> None:
        """Log a warning if the gait asks more of a servo than it gives (eqs. 215, 217)."""
        gait = self._player.gait
        if self._load is None or not isinstance(gait, PeriodicGait):
            return
        try:
            if self._model.base == "floating":
                check_crawl(self._model, gait, self._servo)
            else:
                check_feasible(gait, self._load, self._servo, self._model.joint_names)
        except SaturationError as exc:
            self.get_logger().warning(f"the servos cannot follow this gait: {exc}")

    def _message(self, stamp: int, q: FloatArray, qd: FloatArray) -> JointState:
        """A JointState of the model's joints: q [rad], q_dot [rad/s], stamped ``stamp`` [ns]."""
        msg = JointState()
        msg.header.stamp = Time(nanoseconds=stamp).to_msg()
        msg.name = self._model.joint_names
        msg.position = q.tolist()
        msg.velocity = qd.tolist()
        return msg

    def _time(self) -> tuple[int, float] | None:
        """(now [ns], seconds since the node's first clock reading), or None before /clock."""
        now = clock_ns(self)
        if now is None:
            return None
        if self._epoch_ns is None or now < self._last_ns:
            if self._epoch_ns is not None:
                self.get_logger().warning("the clock jumped back: restarting the gait from rest")
            self._epoch_ns = now
            self._player = GaitPlayer(
                self._player.gait,
                transition_time=self._player.transition_time,
                ramp_time=self._player.ramp_time,
            )
            self._pending_start = self._autostart
        self._last_ns = now
        return now, (now - self._epoch_ns) * 1e-9

    # ------------------------------------------------------------------ callbacks
    def _tick(self) -> None:
        self._count_skipped_ticks()
        now = self._time()
        if now is None:
            return
        stamp, t = now
        if self._pending_start:
            heard = self._pub.get_subscription_count()
            if heard >= self._wait_for or t >= SUBSCRIBER_TIMEOUT_S:
                self._pending_start = False
                self._player.start(t)
                log = (
                    self.get_logger().info if heard >= self._wait_for else self.get_logger().warning
                )
                log(f"starting the gait at t = {t:.2f} s, {heard} subscriptions")
        q, qd, _ = self._player.evaluate(t)
        self._desired_pub.publish(self._message(stamp, q, qd))
        if self._load is not None:
            q, qd = compensated_command(
                self._player.current, self._load, self._servo, t, self._command_delay
            )
        self._pub.publish(self._message(stamp, q, qd))
        self._published += 1
        self._stamps = (self._stamps[0] or stamp, stamp)

    def _count_skipped_ticks(self) -> None:
        """Count the ticks the timer skipped: a callback more than a period late makes rcl
        move the timer's schedule on by whole periods (no message for those ticks). On the
        robot's clock (use_sim_time) a /clock step longer than a period skips ticks too:
        counted, not warned about, since it says nothing about this machine's load."""
        until_ns = self._timer.time_until_next_call()
        if until_ns is None:  # cancelled
            return
        next_ns = self.get_clock().now().nanoseconds + until_ns
        period_ns = self._timer.timer_period_ns
        if self._next_tick_ns is not None:
            skipped = round((next_ns - self._next_tick_ns) / period_ns) - 1
            if skipped > 0:  # (< 0: the clock went back, e.g. a replayed /clock)
                self._skipped_ticks += skipped
                if not self.get_parameter("use_sim_time").value:
                    self.get_logger().warning(
                        f"fell behind: {self._skipped_ticks} timer ticks skipped so far (the "
                        "machine is overloaded; the commands keep their stamps)",
                        throttle_duration_sec=THROTTLE_S,
                    )
        self._next_tick_ns = next_ns

    def destroy_node(self) -> None:
        """Log what was published (and any skipped ticks), then destroy the node."""
        if hasattr(self, "_pub"):
            first, last = (ns * 1e-9 for ns in self._stamps)
            self.get_logger().info(
                f"published {self._published} messages on {self._pub.topic_name} "
                f"(stamps {first:.6f} to {last:.6f} s), {self._skipped_ticks} timer ticks skipped"
            )
        super().destroy_node()

    def _check_parameters(self, params: list[Parameter[Any]]) -> SetParametersResult:
        changes = {p.name: p.value for p in params if p.name in ("gait", *GAIT_PARAMETERS)}
        gait = changes.get("gait")
        if gait is not None and gait not in GAITS:
            reason = f"gait must be one of {', '.join(GAITS)}, got {gait!r}"
            return SetParametersResult(successful=False, reason=reason)
        # Every gait whose parameters change must still be buildable (ranges, |o| + |A| <= pi).
        affected = {k.split(".")[0] for k in changes if k != "gait"} | ({gait} if gait else set())
        try:
            for name in sorted(affected):
                self._gait({**changes, "gait": name})
        except GaitError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def _apply_parameters(self, params: list[Parameter[Any]]) -> None:
        names = {p.name for p in params}
        self._player.transition_time = float(self.get_parameter("transition_time").value)
        self._player.ramp_time = float(self.get_parameter("ramp_time").value)
        if names & {"gait", *GAIT_PARAMETERS}:
            now = self._time()  # None before /clock: then the player is not running yet
            self._player.set_gait(now[1] if now else 0.0, self._gait())
            self._load = self._body_load()
            when = (
                f"blending over {self._player.transition_time:g} s"
                if self._player.running
                else "from the next start"
            )
            self.get_logger().info(f"{self._describe()}, {when}")
            self._warn_if_saturating()

    def _on_start(self, _: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        return self._ramp(response, self._player.start, "into the gait", "already running")

    def _on_stop(self, _: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        return self._ramp(response, self._player.stop, "to rest", "already stopped")

    def _ramp(
        self,
        response: Trigger.Response,
        ramp: Callable[[float], bool],
        where: str,
        already: str,
    ) -> Trigger.Response:
        """Answer ~/start or ~/stop: ``ramp(t)`` (False: nothing to do) at the clock's time."""
        now = self._time()
        response.success = now is not None
        if now is None:
            response.message = "no clock yet (use_sim_time is set and /clock is silent)"
        elif ramp(now[1]):
            response.message = f"ramping {where} over {self._player.ramp_time:g} s"
        else:
            response.message = already
        return response


def main() -> None:
    """Entry point of the ``gait_node`` console script."""
    sys.exit(run(GaitNode, "gait_node"))


if __name__ == "__main__":
    main()
