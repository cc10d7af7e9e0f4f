"""dynamics_node: the MFM prediction of the snake, published on ``joint_states``.

``prescribed`` mode: the commands on ``joint_commands`` (q, q_dot) are the targets of the
robot's servos, modelled by the robot config's ``servo:`` section (dead time, deadband,
position loop, torque-speed line: docs/mfm.md, eqs. 201-206; no feed-forward: a hobby
servo gets its target and nothing else), and the forward dynamics (eq. 84) under the servo
torques is integrated with RK4 at ``sim_rate``. The prediction therefore lags and rounds off
the gait as loaded servos do. The simulation runs ``delay`` behind the clock so the
reference is interpolated between commands, not extrapolated. ``torque`` mode integrates the
efforts received on ``joint_efforts``. States (position, velocity, effort = applied torque,
the servo torque in prescribed mode) are published at ``publish_rate``, stamped with the
simulated time. The servo model's digest is logged at start (a comparison report names the
same digest, from the same robot config).
Service ``~/reset`` (std_srvs/Trigger) restarts from the commanded state. In prescribed mode
the prediction also begins at the first command it receives, not at rest: commands sent
before the node heard their publisher (a gait already running, discovery still going on)
never reach it, and the robot is where they told it to be. A crawling body restarts laid on
its ground in that pose (its tail raised until nothing sinks into the floor: a bent body
restarted at the old height was thrown off it).

No input stops the node (see :class:`~snake_ros.common.InputMonitor` for where the counts
show). A command with a wrong size, unknown or missing joints, NaN or inf, rates beyond
``MAX_RATE`` or a stamp further than ``command_timeout`` ahead of the clock (from the
future) or behind the simulation's time (stale; the clock's before the first command) is
rejected: a command that reaches a node busy integrating late is still one it needs. The
simulation waits at the newest command (rather than extrapolate) until the clock is
``max_lag`` past it; then, as on falling ``max_lag`` behind the clock for want of CPU, it
goes on without (held, then skipped); positions beyond the robot's joint limits
(``config/robot.yaml``) are clamped to them, as the driver clamps the same command, and
efforts (torque mode) to the servo's ``JOINT_EFFORT_LIMIT``. A simulation that leaves the
finite numbers, or (prescribed mode, where the servos hold commanded angles) passes a joint
limit by more than ``LIMIT_SLACK``, restarts at rest at the newest command (torque mode: at
rest). Torque mode integrates the model, which has no joint stops, as it is: its joints may
turn past the limits.

A robot config with ``base: floating`` (docs/mfm.md, "The floating base") puts the snake on
its ground. By default (``ground_model: servos``) the servo model's torques drive the free
body on the ground, joints and base from one simulation
(:class:`~snake_dynamics.sim.crawler.CrawlingSimulator`, eqs. 240-242): gravity, contact and
friction load the servos, and the efforts published are their torques. With
``ground_model: prescribed`` the joints come from the fixed-tail servo simulation without the
body's load, and a :class:`~snake_dynamics.floating.tracker.FastBaseTracker` moves the free
tail under them (eqs. 228, 239), starting straight on the ground at the origin. Either way
the node publishes ``odom`` (nav_msgs/Odometry: the tail's pose in ``world``, its velocity
in the tail's frame ``<namespace>/base_link``) with every state and, where tf2_ros is
installed, the transform world -> <namespace>/base_link. A restart keeps the pose.

A robot config with ``ground: wheels`` (docs/mfm.md, "A robot on wheels") rolls on a
passive wheel per body: the joints and the tail come together from Kane's model of the
wheeled snake under the servos' torques
(:class:`~snake_dynamics.sim.wheeled.WheeledSimulator`, eqs. 415-417), and ``odom``
carries the tail's pose as above.

A robot config with ``elastic:`` links (docs/flexible.md, "Elastic snake links") also gets
their deflections on ``link_deflections`` (sensor_msgs/JointState, beside joint_states,
stamped as it): ``name`` the elastic coordinates (``link_5/torsion_1``, ``link_5/xy_1``, ...),
``position`` their values [rad or m], quasi-static under the simulated joints' motion
(:class:`~snake_dynamics.flexible.snake.LinkDeflections`). Elastic links on a floating
robot stop the node at start with one line (not supported yet).
"""

from __future__ import annotations

import array
import importlib
import math
import sys
import time
from dataclasses import replace
from typing import Any

import numpy as np
from geometry_msgs.msg import TransformStamped
from nav_msgs.msg import Odometry
from numpy.typing import ArrayLike, NDArray
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from snake_dynamics.errors import SimulationError, StateError
from snake_dynamics.flexible.snake import LinkDeflections, elastic_arm
from snake_dynamics.floating import FastBaseTracker, FloatingState, on_the_ground
from snake_dynamics.sim import CrawlingSimulator, WheeledSimulator
from snake_dynamics.sim.simulator import (
    CommandReference,
    InputSource,
    PrescribedInput,
    Simulator,
    TorqueInput,
    joint_command,
)
from snake_dynamics.urdf import JOINT_EFFORT_LIMIT, JOINT_VELOCITY_LIMIT
from snake_ros.paths import load_robot

from .common import (
    THROTTLE_S,
    InputMonitor,
    ParameterValueError,
    clock_ns,
    declare_float,
    declare_robot_config,
    declare_string,
    run,
    stamp_problem,
)

MODES = ("prescribed", "torque")
#: What moves a floating robot: its servos on the free body, or the prescribed base.
GROUND_MODELS = ("servos", "prescribed")
#: Unread commands kept: 1 s at 100 Hz. Each is a sample of the reference; one dropped
#: (a burst, or a node busy for a moment) would leave a gap in the interpolation.
COMMAND_QUEUE_DEPTH = 100
#: Largest commanded joint rate accepted [rad/s]: ten times the servo's no-load speed.
MAX_RATE = 10.0 * JOINT_VELOCITY_LIMIT
#: How far a simulated joint may pass its limit (servo overshoot) before the state counts as
#: one the robot cannot reach, and the simulation restarts [rad].
LIMIT_SLACK = 0.2


class DynamicsNode(Node):
    """Runs a :class:`Simulator` in step with the node's clock and publishes its state."""

    def __init__(self) -> None:
        super().__init__("dynamics_node")
        config = declare_robot_config(self)
        self._mode = declare_string(
            self, "mode", "prescribed", "input of the simulation", choices=MODES, read_only=True
        )

        ground_model = declare_string(
            self,
            "ground_model",
            "servos",
            "on a floating robot: servos = the servo model's torques drive the free body on its "
            "ground, joints and base one simulation (eqs. 240-242); prescribed = the joints "
            "from the servos without the body's load, the base moved by them (eqs. 228, 239)",
            choices=GROUND_MODELS,
            read_only=True,
        )

        def static(name: str, default: float, low: float, high: float, text: str) -> float:
            return declare_float(self, name, default, low, high, text, read_only=True)

        sim_rate = static("sim_rate", 1000.0, 10.0, 10000.0, "RK4 integration rate [Hz]")
        rate = static("publish_rate", 100.0, 1.0, 1000.0, "joint_states rate [Hz]")
        self._delay = static(
            "delay", 0.02, 0.0, 1.0, "simulate this far behind the clock to interpolate [s]"
        )
        timeout = static(
            "command_timeout",
            0.5,
            0.01,
            10.0,
            "commands older than this: hold; stamped further ahead of the clock or behind "
            "the simulation: reject [s]",
        )
        self._command_timeout = timeout
        max_lag = static(
            "max_lag",
            0.1,
            0.01,
            10.0,
            "wait for late commands, and fall behind the clock, at most this long; then "
            "hold the newest command, and skip simulated time [s]",
        )
        self._status_period = static("status_period", 10.0, 0.0, 3600.0, "status log [s], 0: off")
        if rate > sim_rate:
            raise ParameterValueError(f"publish_rate {rate:g} Hz exceeds sim_rate {sim_rate:g} Hz")

        robot = load_robot(config)  # once; the parts below are handed down
        self._model = robot.model
        n = self._model.n_joints
        prescribed = self._mode == "prescribed"
        servo = robot.servo if prescribed else None
        floating = self._model.base == "floating"
        crawling = floating and not self._model.wheels and ground_model == "servos"
        tracked = floating and not self._model.wheels and not crawling
        self._sim: Simulator
        if self._model.wheels:
            self._sim = WheeledSimulator(self._model, 1.0 / sim_rate, servo=servo)
        elif crawling:
            self._sim = CrawlingSimulator(on_the_ground(self._model), 1.0 / sim_rate, servo=servo)
        else:  # on the ground the links rest on it: the joints' simulation leaves gravity to it
            joints = replace(self._model, gravity=np.zeros(3)) if tracked else self._model
            self._sim = Simulator(joints, 1.0 / sim_rate, servo=servo)
        # the commands as far back as the simulation may lag the newest (max_lag), and then
        # some: a starved node that catches up interpolates the commands it is at
        self._reference = CommandReference(np.zeros(n), timeout, history=timeout + max_lag)
        self._torques = TorqueInput(n, timeout)
        self._source: InputSource = (
            PrescribedInput(
                self._sim.fast_model, self._reference, self._sim.servo.dead_times, False
            )
            if prescribed
            else self._torques
        )
        self._max_lag = max_lag
        self._max_steps = max(1, round(max_lag * sim_rate))
        self._sim.warm_up()
        self._base = FastBaseTracker(self._model, 1.0 / sim_rate) if tracked else None
        if self._base is not None:  # compile its kernels now, then start from the same pose
            lying = self._base.state
            self._base.advance(0.0, np.zeros((1, n)), np.zeros((1, n)))
            self._base.state = lying
        self._frame = f"{self.get_namespace().strip('/')}/base_link".lstrip("/")
        self._odom = self.create_publisher(Odometry, "odom", 10) if floating else None
        self._tf = _transform_broadcaster(self) if floating else None

        self._epoch_ns: int | None = None
        self._published_ns = -1
        self._commanded = False  # a command has arrived (prescribed mode)
        self._waiting = False  # the last tick stopped at the newest command, short of its target
        self._stats = {"steps": 0, "skipped_s": 0.0, "busy_s": 0.0}
        self._lower, self._upper = self._model.joint_limits.T
        self._monitor = InputMonitor(self)
        self._last_status = time.monotonic()
        self._pub = self.create_publisher(JointState, "joint_states", 10)
        # the messages of a tick, built once and filled in place (a publish serialises them)
        self._state = JointState()
        self._state.name = list(self._model.joint_names)
        self._odom_msg = Odometry()
        self._odom_msg.header.frame_id = "world"
        self._odom_msg.child_frame_id = self._frame
        self._transform = TransformStamped()
        self._transform.child_frame_id = self._frame
        arm = elastic_arm(robot)  # None: every link rigid
        self._bends = None if arm is None else LinkDeflections(self._model, arm)
        self._bends_pub = (
            None if arm is None else self.create_publisher(JointState, "link_deflections", 10)
        )
        self._rates = (-math.inf, np.zeros(n))  # (t [s], q_dot) of the last deflections
        topic = "joint_commands" if prescribed else "joint_efforts"
        self._sub = self.create_subscription(
            JointState, topic, self._on_command, COMMAND_QUEUE_DEPTH
        )
        self.create_service(Trigger, "~/reset", self._on_reset)
        self.create_timer(1.0 / rate, self._tick)
        self.get_logger().info(
            f"{self._model.name} ({n} joints), {self._mode} mode from {self._sub.topic_name}, "
            f"RK4 at {sim_rate:g} Hz, {self._pub.topic_name} at {rate:g} Hz"
            + (f"; {servo.describe()}" if servo is not None else "")
        )

    # ---------------------------------------------------------------- conversions
    def _now(self) -> float | None:
        """Seconds since the node's first clock reading, or None before /clock."""
        now = clock_ns(self)
        if now is None:
            return None
        if self._epoch_ns is None:
            self._epoch_ns = now
        return (now - self._epoch_ns) * 1e-9

    def _restart(self, t: float) -> None:
        """Restart the simulation at time t [s] from the commanded state (rest in torque mode).

        A reference that cannot be evaluated there (not finite) is replaced by the newest
        command held at rest.
        """
        q, qd, _ = self._reference.evaluate(np.array([t]))
        if self._mode == "torque":
            q, qd = np.zeros_like(q), np.zeros_like(qd)
        try:
            self._reset_sim(t, q[0], qd[0])
        except StateError:
            self._reference.hold(self._reference.latest)
            self._reset_sim(t, self._reference.latest, np.zeros(self._model.n_joints))
        if self._base is not None:
            self._base.reset(self._sim.q, self._sim.qd)

    def _reset_sim(self, t: float, q: ArrayLike, qd: ArrayLike) -> None:
        """The simulation restarted at t [s] with joints q [rad], q_dot [rad/s]; a crawling
        body laid on its ground in that pose (:meth:`CrawlingSimulator.resting_base`).

        Raises:
            StateError: q or q_dot not finite.
        """
        if isinstance(self._sim, CrawlingSimulator):
            self._sim.reset(t, q, qd, self._sim.resting_base(q))
        else:
            self._sim.reset(t, q, qd)

    def _recover(self, problem: str) -> None:
        """Restart a simulation that left the physical states, at rest at the newest command
        (the interpolation that led there is forgotten); counted as ``simulation restarts``."""
        self._monitor.event(
            "simulation restarts", f"{problem}; restarting at rest at the newest command"
        )
        if self._mode == "prescribed":
            self._reference.hold(self._reference.latest)
        self._restart(self._sim.time)

    # ------------------------------------------------------------------ callbacks
    def _on_command(self, msg: JointState) -> None:
        now = self._now()
        if now is None or self._epoch_ns is None:
            return
        topic = self._sub.topic_name
        prescribed = self._mode == "prescribed"
        try:
            values, rates = joint_command(
                self._model.joint_names,
                msg.name,
                msg.position if prescribed else msg.effort,
                msg.velocity if prescribed else (),
            )
        except (StateError, ValueError) as exc:  # ValueError: a value numpy cannot take
            self._monitor.reject(topic, str(exc))
            return
        if np.max(np.abs(rates), initial=0.0) > MAX_RATE:
            self._monitor.reject(topic, f"joint rates beyond {MAX_RATE:g} rad/s")
            return
        stamp_ns = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        if stamp_ns != 0:
            # ahead of the clock: from the future; behind where the simulation is (the clock
            # before the first command): stale. A command that reaches a busy node late is
            # still one its simulation needs.
            clock = clock_ns(self)
            behind = clock
            if self._commanded and clock is not None:
                behind = min(clock, self._epoch_ns + round(self._sim.time * 1e9))
            late = stamp_problem(stamp_ns, clock, self._command_timeout, math.inf) or (
                stamp_problem(stamp_ns, behind, math.inf, self._command_timeout)
            )
            if late is not None:  # accepted from the future, it would shadow the real ones
                self._monitor.reject(topic, f"{late} (command_timeout)")
                return
        t = (stamp_ns - self._epoch_ns) * 1e-9 if stamp_ns > 0 else now
        if prescribed:
            clamped, limits = np.clip(values, self._lower, self._upper), "the joint limits"
        else:
            clamped = np.clip(values, -JOINT_EFFORT_LIMIT, JOINT_EFFORT_LIMIT)
            limits = f"+-{JOINT_EFFORT_LIMIT:g} N m"
        if not np.array_equal(clamped, values):
            self._monitor.clamp(topic, f"to {limits}")
        else:
            self._monitor.accept(topic)
        if not prescribed:
            self._torques.push(t, clamped)
        elif not self._reference.push(t, clamped, rates):
            self.get_logger().warning(
                f"ignored a command not newer than the previous one on {topic}",
                throttle_duration_sec=THROTTLE_S,
            )
        elif not self._commanded:
            self._commanded = True
            self._restart(t)  # begin at the first command (see the module docstring)
        elif self._waiting:  # the simulation waits for this command: go on at once
            self._tick()

    def _tick(self) -> None:
        now = self._now()
        if now is None or self._epoch_ns is None:
            return
        target = now - (self._delay if self._mode == "prescribed" else 0.0)
        newest = self._reference.newest
        self._waiting = False
        if newest is not None and newest < target <= newest + self._max_lag:
            # never extrapolate the gait while it may be live: its next commands are late (in
            # a busy node's queue); the next one ticks
            self._waiting, target = True, newest
        if target < self._sim.time - 1.0:
            self.get_logger().warning("the clock jumped back: restarting the simulation")
            self._reference.hold(self._sim.q)
            self._restart(target)
            self._published_ns = -1
        elif self._published_ns < 0 and target - self._sim.time > self._max_lag:
            # a late first tick (a busy machine starting up): begin where the clock is
            self._restart(target)
        start = time.perf_counter()
        t_before = self._sim.time
        try:
            report = self._sim.run_until(target, self._source, self._max_steps)
            if self._base is not None:
                if report.skipped > 0.0:  # the joints jumped: the base restarts from them
                    self._base.reset(report.q[0], report.qd[0])
                    self._base.advance(
                        self._sim.time - (report.steps - 1) * self._sim.dt,
                        report.q[1:],
                        report.qd[1:],
                    )
                else:
                    self._base.advance(t_before, report.q, report.qd)
        except SimulationError as exc:  # DivergenceError too
            self._recover(str(exc))
            return
        beyond = np.maximum(self._lower - self._sim.q, self._sim.q - self._upper)
        if self._mode == "prescribed" and np.max(beyond) > LIMIT_SLACK:
            joint = self._model.joint_names[int(np.argmax(beyond))]
            self._recover(f"{joint} passed its limit by {np.max(beyond):.3g} rad")
            return
        tau = self._sim.tau
        if not np.all(np.isfinite(tau)):
            self._recover("the applied torques left the finite numbers")
            return
        self._stats["busy_s"] += time.perf_counter() - start
        self._stats["steps"] += report.steps
        if report.skipped > 0.0:
            self._stats["skipped_s"] += report.skipped
            self.get_logger().warning(
                f"falling behind the clock: skipped {report.skipped * 1e3:.0f} ms of simulation "
                "(lower sim_rate, or use a smaller model)",
                throttle_duration_sec=THROTTLE_S,
            )
        stamp_ns = self._epoch_ns + round(self._sim.time * 1e9)
        if stamp_ns <= self._published_ns:
            return  # nothing new (the first ticks, or a paused /clock): keep stamps increasing
        self._published_ns = stamp_ns
        msg = self._state
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 10**9)
        msg.position = _doubles(self._sim.q)
        msg.velocity = _doubles(self._sim.qd)
        msg.effort = _doubles(tau)
        self._pub.publish(msg)
        self._publish_deflections(msg.header.stamp)
        if self._base is not None:
            self._publish_base(msg.header.stamp, self._base.state)
        elif isinstance(self._sim, (WheeledSimulator, CrawlingSimulator)):
            self._publish_base(msg.header.stamp, self._sim.base_state)
        self._log_status()

    def _publish_deflections(self, stamp: object) -> None:
        """``link_deflections`` at the simulated state, the joints' accelerations from the
        rates of the last published state (none after a restart)."""
        if self._bends is None or self._bends_pub is None:
            return
        t, qd = self._sim.time, self._sim.qd
        t0, qd0 = self._rates
        qdd = (qd - qd0) / (t - t0) if t > t0 else np.zeros_like(qd)
        self._rates = (t, qd.copy())
        modal = self._bends.quasi_static(self._sim.q, qd, qdd)
        if not np.all(np.isfinite(modal)):
            return
        msg = JointState()
        msg.header.stamp = stamp
        msg.name = list(self._bends.names)
        msg.position = modal.tolist()
        self._bends_pub.publish(msg)

    def _publish_base(self, stamp: object, state: FloatingState) -> None:
        """``odom`` and the world -> base_link transform of the tail's state."""
        assert self._odom is not None
        odom = self._odom_msg
        odom.header.stamp = stamp
        pose = odom.pose.pose
        pose.position.x, pose.position.y, pose.position.z = state.position.tolist()
        o = pose.orientation
        o.x, o.y, o.z, o.w = state.quaternion.tolist()
        twist = odom.twist.twist
        twist.linear.x, twist.linear.y, twist.linear.z = state.nu[:3].tolist()
        twist.angular.x, twist.angular.y, twist.angular.z = state.nu[3:6].tolist()
        self._odom.publish(odom)
        if self._tf is not None:
            transform = self._transform
            transform.header = odom.header
            t = transform.transform
            t.translation.x, t.translation.y, t.translation.z = state.position.tolist()
            t.rotation = o
            self._tf.sendTransform(transform)

    def _log_status(self, final: bool = False) -> None:
        wall = time.monotonic()
        due = self._status_period > 0.0 and wall - self._last_status >= self._status_period
        if not (due or final):
            return
        self._last_status = wall
        s = self._stats
        speed = s["steps"] * self._sim.dt / s["busy_s"] if s["busy_s"] > 0 else float("inf")
        self.get_logger().info(
            f"t = {self._sim.time:.1f} s: {s['steps']:.0f} RK4 steps at {speed:.0f}x real time, "
            f"{self._monitor.rejected} messages rejected, {s['skipped_s']:.3f} s skipped, "
            f"{self._monitor.counts.get('simulation restarts', 0)} simulation restarts"
        )

    def destroy_node(self) -> None:
        """Log the final status (if the node got as far as running), then destroy the node."""
        if hasattr(self, "_last_status"):  # not when stopped during start-up (compiling)
            self._log_status(final=True)
        super().destroy_node()

    def _on_reset(self, _: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        now = self._now()
        response.success = now is not None
        if now is None:
            response.message = "no clock yet (use_sim_time is set and /clock is silent)"
            return response
        self._restart(self._sim.time)
        response.message = f"restarted at t = {self._sim.time:.3f} s from the commanded state"
        return response


def _doubles(values: NDArray[np.float64]) -> array.array[float]:
    """A float64 vector as a message's ``float64[]`` field takes it without a check per
    element: the same numbers as ``values.tolist()``."""
    return array.array("d", np.ascontiguousarray(values, dtype=np.float64).tobytes())


def _transform_broadcaster(node: Node) -> Any:
    """tf2_ros's TransformBroadcaster where tf2_ros is installed (a ROS 2 install), else None
    (the pip-installed runtime has no tf2: odom alone carries the pose)."""
    try:
        tf2_ros = importlib.import_module("tf2_ros")
    except ImportError:
        node.get_logger().info("tf2_ros not installed: the base pose goes out on odom only")
        return None
    return tf2_ros.TransformBroadcaster(node)


def main() -> None:
    """Entry point of the ``dynamics_node`` console script."""
    sys.exit(run(DynamicsNode, "dynamics_node"))


if __name__ == "__main__":
    main()
