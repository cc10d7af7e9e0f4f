"""compare_node: the MFM prediction against the robot, live; a report on demand and at exit.

Subscribes ``sim/joint_states`` (the prediction) and ``measured/joint_states`` (the robot)
and keeps both series by header stamp. Topic names are relative (in the root namespace, as
the graphs run it: ``/sim/joint_states`` etc.), so a namespace or remappings move them. The
maths is :mod:`snake_viz.compare`: the measurement is interpolated onto the simulated stamps,
error = measured - simulated [rad].

Publishes:
    ``compare/error`` (sensor_msgs/JointState) at ``error_rate``, stamped with the latest
        aligned stamp, one entry per joint: ``position`` = the error now [rad],
        ``velocity`` = its RMS over the last ``window`` seconds [rad], ``effort`` = its
        maximum |error| over the window [rad]. (The fields are reused for three error
        statistics; none is a velocity or an effort.)
    ``compare/markers`` (visualization_msgs/MarkerArray) at ``marker_rate``: LINE_STRIP
        traces of the head and of the centre of mass of both robots (from ``link_poses``) over
        the last ``trace_length`` seconds, in ``sim/base_link`` and ``measured/base_link``,
        each point coloured by the RMS joint error at that time (green 0 -> red at
        ``error_scale``); namespaces ``sim/head``, ``sim/com``, ``measured/head``,
        ``measured/com``; the measured traces are drawn wider and translucent.

On the floor (a floating robot, when both topics carry poses): subscribes ``sim/odom``
(nav_msgs/Odometry, the predicted tail) and ``measured/pose`` (geometry_msgs/PoseStamped, an
external pose sensor's, e.g. motion capture) and publishes ``compare/path_error``
(std_msgs/Float64) at ``error_rate``: the planar distance between the measured tail and the
prediction interpolated at the newest measured stamp [m] (:mod:`snake_viz.path_compare`).
Poses that are not finite, whose orientation is not a unit quaternion, in another frame than
``pose_frame``, stamped more than ``pose_max_ahead`` ahead of the node's clock (a sensor
period or two: one pose from the future would otherwise make every genuine pose after it
"not newer") or not newer than the last accepted one are rejected and counted by reason
(``<topic> (<reason>) rejected`` on ``/diagnostics``, e.g. ``/measured/pose (ahead of the
clock) rejected``). The report then has the path section
(numbers; ``snake compare`` of a bag of the run draws ``path.png`` too). A robot with a fixed
base publishes neither and nothing changes.

The stamps of ``joint_commands`` (gait_node's) and of ``measured/joint_states`` (the robot's
clock) tell whether the run's timing held: a report whose command stamps jumped more than
``max_command_jump`` beyond their period, or the robot's more than ``max_clock_jump``, is
``trusted: false`` in ``summary.json``, with the reasons (:mod:`snake_viz.timing`).

Service ``~/report`` (std_srvs/Trigger) writes the report folder now
(``<report_dir>/<report_name>/``, by default ``$ROS_HOME/mfm_snake/compare-<start time>``,
``ROS_HOME`` being ``~/.ros`` unless set, as for ROS 2's logs; rewritten by each
request, from the whole history); the node writes it on shutdown too
(``report_on_shutdown``) and logs the per-joint RMS. The node writes the numbers (CSV,
tables, summary) itself and hands the plots to :mod:`snake_viz.report_plots`, a process of
its own that outlives the node (``plots.log`` appears in the folder when they are done), so
a Ctrl-C stops the node at once. All parameters are read at start-up.

A message that cannot be compared is rejected and counted (``<node>: input`` on
``/diagnostics``, :class:`~snake_ros.common.InputMonitor`; ``rejected_messages`` in the
report's ``config.yaml``): names and positions of different lengths, no known joint, NaN or
inf, an angle beyond its joint's limits by more than ``LIMIT_SLACK``, no stamp, or a stamp
more than ``STAMP_AHEAD_S`` ahead of or ``STAMP_BEHIND_S`` behind the node's clock.
"""

from __future__ import annotations

import datetime as dt_module
import math
import subprocess
import sys
from collections import deque
from pathlib import Path

import numpy as np
from builtin_interfaces.msg import Time as TimeMsg
from geometry_msgs.msg import Point, Pose, PoseStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import ColorRGBA, Float64, Header
from std_srvs.srv import Trigger
from visualization_msgs.msg import Marker, MarkerArray

from snake_ros.common import (
    InputMonitor,
    ParameterValueError,
    clock_ns,
    declare_bool,
    declare_float,
    declare_int,
    declare_robot_config,
    declare_string,
    run,
    stamp_problem,
    stream_qos,
)
from snake_ros.paths import load_robot, state_dir

from .compare import (
    DEFAULT_MAX_GAP_S,
    DEFAULT_MAX_LAG_S,
    DEFAULT_WINDOW_S,
    MEASURED_TOPIC,
    ODOM_TOPIC,
    SIM_TOPIC,
    Aligned,
    CompareError,
    SampleBuffer,
    align,
    compare,
    error_stats,
    trace_points,
)
from .compare_report import PathSection, Report, ReportSummary, path_section, report_config
from .path_compare import (
    DEFAULT_FRAME,
    DEFAULT_MAX_AHEAD_S,
    POSE_FIELDS,
    POSE_TOPIC,
    SIM_CLOCK_MAX_AHEAD_S,
    PoseValidator,
    latest_path_error,
)
from .report_plots import start_plotter
from .timing import (
    COMMAND_TOPIC,
    DEFAULT_MAX_CLOCK_JUMP_S,
    DEFAULT_MAX_COMMAND_JUMP_S,
    JUMP_BOUND_RANGE_S,
    judge_timing,
)

#: Subscription depth: 5 s of 100 Hz joint states.
QUEUE_DEPTH = 500
#: (namespace prefix, frame, line width [m], alpha) of the two robots' traces.
ROBOTS = (("sim", "sim/base_link", 0.004, 1.0), ("measured", "measured/base_link", 0.008, 0.5))
#: Samples stamped further ahead of the node's clock are rejected (from the future) [s].
STAMP_AHEAD_S = 5.0
#: Samples stamped further behind the node's clock are rejected (stale) [s].
STAMP_BEHIND_S = 60.0
#: Angles beyond a joint's limits by more than this are rejected: no robot gets there [rad].
LIMIT_SLACK = 0.5


def default_report_dir() -> Path:
    """Where reports go when no ``report_dir`` is given: ``$ROS_HOME/mfm_snake``
    (:func:`snake_ros.paths.state_dir`), never the folder ``ros2 launch`` was started in."""
    return state_dir()


class CompareNode(Node):
    """Live comparison of prediction and measurement (see module docstring)."""

    def __init__(self) -> None:
        super().__init__("compare_node")
        config = declare_robot_config(self)

        def static(name: str, default: float, low: float, high: float, text: str) -> float:
            return declare_float(self, name, default, low, high, text, read_only=True)

        self.window = static(
            "window", DEFAULT_WINDOW_S, 0.1, 600.0, "sliding window of /compare/error [s]"
        )
        error_rate = static("error_rate", 20.0, 0.5, 200.0, "/compare/error rate [Hz]")
        marker_rate = static("marker_rate", 5.0, 0.1, 50.0, "/compare/markers rate [Hz]")
        trace_length = static("trace_length", 20.0, 1.0, 600.0, "traces cover this long [s]")
        self.error_scale = static(
            "error_scale", 0.1, 1e-4, math.pi, "RMS joint error drawn fully red [rad]"
        )
        self.max_lag = static(
            "max_lag", DEFAULT_MAX_LAG_S, 0.01, 5.0, "largest lag searched (report) [s]"
        )
        self.max_gap = static(
            "max_gap", DEFAULT_MAX_GAP_S, 0.001, 10.0, "longest measured gap interpolated over [s]"
        )
        max_samples = declare_int(
            self, "max_samples", 360_000, 1000, 100_000_000, "history kept per series [samples]"
        )
        report_dir = declare_string(
            self,
            "report_dir",
            "",
            "parent folder of the report folder (empty: $ROS_HOME/mfm_snake, ~/.ros/mfm_snake)",
            read_only=True,
        )
        report_name = declare_string(
            self,
            "report_name",
            "",
            "report folder name (empty: compare-<start time>)",
            read_only=True,
        )
        pose_frame = declare_string(
            self,
            "pose_frame",
            DEFAULT_FRAME,
            "frame of the poses on sim/odom and measured/pose; others are rejected",
            read_only=True,
        )
        pose_max_ahead = static(
            "pose_max_ahead",
            DEFAULT_MAX_AHEAD_S,
            0.001,
            STAMP_AHEAD_S,
            "poses stamped further ahead of the node's clock are rejected (a sensor period or "
            f"two; on a simulated /clock at least {SIM_CLOCK_MAX_AHEAD_S:g} s, as it comes "
            "late under load) [s]",
        )
        self.max_command_jump = static(
            "max_command_jump",
            DEFAULT_MAX_COMMAND_JUMP_S,
            *JUMP_BOUND_RANGE_S,
            "the report is untrusted when the stamps on joint_commands jump further beyond "
            "their period (a graph starved of the CPU) [s]",
        )
        self.max_clock_jump = static(
            "max_clock_jump",
            DEFAULT_MAX_CLOCK_JUMP_S,
            *JUMP_BOUND_RANGE_S,
            "the report is untrusted when the robot's clock (the stamps on "
            "measured/joint_states) jumps further beyond its period [s]",
        )
        self.report_on_shutdown = declare_bool(
            self, "report_on_shutdown", True, "write the report when the node stops"
        )
        name = report_name or f"compare-{dt_module.datetime.now():%Y%m%d-%H%M%S}"
        if Path(name).name != name or name in (".", ".."):
            raise ParameterValueError(f"report_name must be a plain folder name, got {name!r}")
        self.folder = Path(report_dir or default_report_dir()).expanduser() / name

        self.robot = load_robot(config)  # once
        self.config_path = self.robot.path
        self.model = self.robot.model
        names = self.model.joint_names
        self.sim = SampleBuffer(names, max_samples)
        self.command_stamps: deque[float] = deque(maxlen=max_samples)  # [s]
        self.measured = SampleBuffer(names, max_samples)
        self.monitor = InputMonitor(self)
        # the tail's poses on the floor (columns POSE_FIELDS), each topic checked on its own
        # on the robot's /clock (use_sim_time) the node's clock lags the poses under load
        sim_clock = bool(self.get_parameter("use_sim_time").value)
        max_ahead = max(pose_max_ahead, SIM_CLOCK_MAX_AHEAD_S) if sim_clock else pose_max_ahead
        self.poses = {
            topic: (
                SampleBuffer(POSE_FIELDS, max_samples),
                PoseValidator(pose_frame, max_ahead),
            )
            for topic in (ODOM_TOPIC, POSE_TOPIC)
        }
        self.limits = dict(zip(names, self.model.joint_limits.tolist(), strict=True))
        self.last: tuple[float, np.ndarray, np.ndarray, float] | None = None
        self.traced_stamp = -math.inf
        points = max(2, int(trace_length * marker_rate))
        # per marker tick: (sim head, sim CM, measured head, measured CM) [m], shape (4, 3)
        self.trace: deque[np.ndarray] = deque(maxlen=points)
        self.trace_rms: deque[float] = deque(maxlen=points)
        self.plotter: subprocess.Popen[bytes] | None = None

        self.pub_error = self.create_publisher(JointState, "compare/error", 10)
        self.pub_markers = self.create_publisher(MarkerArray, "compare/markers", 10)
        self.pub_path_error = self.create_publisher(Float64, "compare/path_error", 10)
        # deep queues: writing a report blocks the executor for a second or two; the robot's
        # streams best effort: they may come over a lossy link (docs/ros.md, "QoS")
        sim, measured = SIM_TOPIC.lstrip("/"), MEASURED_TOPIC.lstrip("/")
        self.sub_sim = self.create_subscription(JointState, sim, self.on_sim, QUEUE_DEPTH)
        self.sub_measured = self.create_subscription(
            JointState, measured, self.on_measured, stream_qos(QUEUE_DEPTH)
        )
        self.sub_commands = self.create_subscription(
            JointState, COMMAND_TOPIC.lstrip("/"), self.on_command, stream_qos(QUEUE_DEPTH)
        )
        self.sub_odom = self.create_subscription(
            Odometry, ODOM_TOPIC.lstrip("/"), self.on_odom, QUEUE_DEPTH
        )
        self.sub_pose = self.create_subscription(
            PoseStamped, POSE_TOPIC.lstrip("/"), self.on_pose, stream_qos(QUEUE_DEPTH)
        )
        self.create_service(Trigger, "~/report", self.on_report)
        self.create_timer(1.0 / error_rate, self.on_error_timer)
        self.create_timer(1.0 / marker_rate, self.on_marker_timer)
        self.get_logger().info(
            f"comparing {self.sub_sim.topic_name} and {self.sub_measured.topic_name} for "
            f"{len(names)} joints of "
            f"{self.model.name}; report: {self.folder}/"
        )

    def destroy_node(self) -> None:
        """Write the report (``report_on_shutdown``), then destroy."""
        if hasattr(self, "sim") and self.report_on_shutdown:
            ok, message = self.write_report()
            log = self.get_logger()
            (log.info if ok else log.warning)(f"report on shutdown: {message}")
        super().destroy_node()

    # ------------------------------------------------------------------ topics
    def _store(self, buffer: SampleBuffer, msg: JointState, topic: str) -> None:
        problem = self._problem(msg)
        if problem is None and buffer.append(self._stamp(msg), msg.name, list(msg.position)) == 0:
            problem = f"no known joint in {list(msg.name)[:4]}"
        if problem is None:
            self.monitor.accept(topic)
        else:
            self.monitor.reject(topic, problem)

    @staticmethod
    def _stamp(msg: JointState) -> float:
        return float(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)

    def _problem(self, msg: JointState) -> str | None:
        """Why a joint-state message cannot be compared (None: it can)."""
        stamp_ns = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        late = stamp_problem(stamp_ns, clock_ns(self), STAMP_AHEAD_S, STAMP_BEHIND_S)
        if late is not None:
            return late
        if len(msg.name) != len(msg.position):
            return f"{len(msg.name)} names but {len(msg.position)} positions"
        q = np.asarray(msg.position, dtype=np.float64)
        if not np.all(np.isfinite(q)):
            return "positions must be finite (got NaN or inf)"
        for name, value in zip(msg.name, q, strict=True):
            lower, upper = self.limits.get(name, (-math.inf, math.inf))
            if not lower - LIMIT_SLACK <= value <= upper + LIMIT_SLACK:
                return f"{name} at {value:.6g} rad, beyond its limits by over {LIMIT_SLACK:g} rad"
        return None

    def on_sim(self, msg: JointState) -> None:
        self._store(self.sim, msg, self.sub_sim.topic_name)

    def on_measured(self, msg: JointState) -> None:
        self._store(self.measured, msg, self.sub_measured.topic_name)

    def on_command(self, msg: JointState) -> None:
        """Keep a command's stamp: the report judges their jumps (:mod:`snake_viz.timing`)."""
        self.command_stamps.append(self._stamp(msg))

    def on_odom(self, msg: Odometry) -> None:
        self._store_pose(ODOM_TOPIC, self.sub_odom.topic_name, msg.header, msg.pose.pose)

    def on_pose(self, msg: PoseStamped) -> None:
        self._store_pose(POSE_TOPIC, self.sub_pose.topic_name, msg.header, msg.pose)

    def _store_pose(self, role: str, topic: str, header: Header, pose: Pose) -> None:
        """Check a pose (its stamp against the clock, then :class:`PoseValidator`) and keep it;
        a rejected one is counted by reason on ``/diagnostics``."""
        buffer, validator = self.poses[role]
        stamp_ns = header.stamp.sec * 10**9 + header.stamp.nanosec
        now_ns = clock_ns(self)
        late = stamp_problem(stamp_ns, now_ns, STAMP_AHEAD_S, STAMP_BEHIND_S)
        if late is not None:
            self.monitor.reject(f"{topic} (stamp)", late)
            return
        p, o = pose.position, pose.orientation
        position, orientation = (p.x, p.y, p.z), (o.x, o.y, o.z, o.w)
        received = None if now_ns is None else now_ns * 1e-9
        problem = validator.check(stamp_ns * 1e-9, header.frame_id, position, orientation, received)
        if problem is not None:
            self.monitor.reject(f"{topic} ({problem.reason})", problem.detail)
            return
        buffer.append(stamp_ns * 1e-9, POSE_FIELDS, [*position, *orientation])
        self.monitor.accept(topic)

    # ------------------------------------------------------------------ timers
    def recent(self) -> Aligned:
        """The last ``window`` seconds (and a margin), aligned."""
        start = min(self.sim.latest_stamp(), self.measured.latest_stamp()) - self.window
        sim = self.sim.series(since=start - self.max_gap)
        measured = self.measured.series(since=start - 2.0 * self.max_gap)
        return align(sim, measured, self.max_gap)

    def on_error_timer(self) -> None:
        self.publish_path_error()
        if not len(self.sim) or not len(self.measured):
            return
        aligned = self.recent()
        valid = np.flatnonzero(np.all(np.isfinite(aligned.error), axis=1))
        if not valid.size:
            return
        stats = error_stats(aligned, self.window)
        i = int(valid[-1])
        stamp = float(aligned.t[i])
        err = aligned.error[i]
        self.last = (stamp, aligned.sim[i], aligned.measured[i], float(np.sqrt(np.mean(err**2))))
        msg = JointState()
        msg.header.stamp = Time(nanoseconds=round(stamp * 1e9)).to_msg()
        msg.name = list(aligned.names)
        msg.position = [float(x) for x in stats.now]
        msg.velocity = [float(x) for x in stats.window_rms]
        msg.effort = [float(x) for x in stats.window_max]
        self.pub_error.publish(msg)

    def publish_path_error(self) -> None:
        """``compare/path_error``: the path error at the newest compared measured pose [m]."""
        (predicted, _), (measured, _) = self.poses[ODOM_TOPIC], self.poses[POSE_TOPIC]
        if not len(predicted) or not len(measured):
            return
        start = measured.latest_stamp() - self.window
        latest = latest_path_error(
            predicted.series(since=start - self.max_gap), measured.series(since=start), self.max_gap
        )
        if latest is not None:
            self.pub_path_error.publish(Float64(data=latest[1]))

    def on_marker_timer(self) -> None:
        if self.last is None:
            return
        stamp, q_sim, q_measured, rms = self.last
        if stamp > self.traced_stamp:
            self.traced_stamp = stamp
            head_s, com_s = trace_points(self.model, q_sim)
            head_m, com_m = trace_points(self.model, q_measured)
            self.trace.append(np.array([head_s, com_s, head_m, com_m]))
            self.trace_rms.append(rms)
        if len(self.trace) < 2:
            return
        colours = [self._colour(x) for x in self.trace_rms]
        trace = np.array(self.trace)
        array = MarkerArray()
        for r, (robot, frame, width, alpha) in enumerate(ROBOTS):
            for w, what in enumerate(("head", "com")):
                marker = Marker()
                marker.header.frame_id = frame
                marker.header.stamp = TimeMsg()  # zero: the latest transform
                marker.ns = f"{robot}/{what}"
                marker.id = 0
                marker.type = Marker.LINE_STRIP
                marker.action = Marker.ADD
                marker.pose.orientation.w = 1.0
                marker.scale.x = width
                column = 2 * r + w
                marker.points = [
                    Point(x=float(x), y=float(y), z=float(z)) for x, y, z in trace[:, column]
                ]
                marker.colors = [ColorRGBA(r=c.r, g=c.g, b=c.b, a=alpha) for c in colours]
                array.markers.append(marker)
        self.pub_markers.publish(array)

    def _colour(self, rms: float) -> ColorRGBA:
        x = min(1.0, max(0.0, rms / self.error_scale)) if math.isfinite(rms) else 1.0
        return ColorRGBA(r=float(x), g=float(1.0 - x), b=0.0, a=1.0)

    # ------------------------------------------------------------------ report
    def write_report(self) -> tuple[bool, str]:
        """Write the report folder from the whole history; (success, one-line message)."""
        if not len(self.sim) or not len(self.measured):
            return False, (
                f"nothing to compare yet ({len(self.sim)} simulated, {len(self.measured)} "
                f"measured samples): no report written"
            )
        try:
            comparison = compare(
                self.sim.series(), self.measured.series(), self.window, self.max_lag, self.max_gap
            )
            config = report_config(
                "compare_node",
                (SIM_TOPIC, MEASURED_TOPIC),
                self.config_path,
                self.model.name,
                self.max_lag,
                self.max_gap,
                dropped_samples={"sim": self.sim.dropped, "measured": self.measured.dropped},
                rejected_messages=self.monitor.rejected,
            )
            timing = judge_timing(
                list(self.command_stamps) or None,
                self.measured.series().t,
                self.max_command_jump,
                self.max_clock_jump,
            )
            summary = Report(self.folder, self.model, plots=False, robot=self.robot).write(
                comparison, config, path=self._path_section(), timing=timing
            )
            if self.plotter is not None and self.plotter.poll() is None:
                self.plotter.terminate()  # drawing an older history: the new one replaces it
            self.plotter = start_plotter(self.folder, self.config_path)
        except (CompareError, OSError) as exc:
            return False, f"no report: {exc}"
        return True, f"{_describe(summary)}; plots: pid {self.plotter.pid}"

    def _path_section(self) -> PathSection | None:
        """The comparison on the floor of the whole history (None: no poses received)."""
        (predicted, _), (measured, validator) = self.poses[ODOM_TOPIC], self.poses[POSE_TOPIC]
        return path_section(
            predicted.series() if len(predicted) else None,
            measured.series() if len(measured) else None,
            validator.rejected,
            self.max_gap,
        )

    def on_report(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success, response.message = self.write_report()
        return response


def _describe(summary: ReportSummary) -> str:
    rms = ", ".join(
        f"{name} {math.degrees(x):.2f}" if math.isfinite(x) else f"{name} n/a"
        for name, x in zip(summary.names, summary.rms, strict=True)
    )
    timing = "" if summary.timing is None else f"; {summary.timing.line()}"
    return f"wrote {len(summary.files)} files to {summary.folder}/; RMS error [deg]: {rms}{timing}"


def main() -> None:
    """Entry point of the ``compare_node`` executable."""
    sys.exit(run(CompareNode, "compare_node"))
