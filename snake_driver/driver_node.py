"""driver_node: /joint_commands -> servo targets on the wire; telemetry -> /measured/joint_states.

Topic names are relative (``joint_commands``, ``measured/joint_states``), so a namespace or a
remapping moves them; ``/diagnostics`` stays absolute, as diagnostics tools expect.

A thin adapter over :class:`snake_driver.link.DriverLink`: it declares the parameters,
converts messages, runs timers (poll, commands, pings, diagnostics) and offers the
``~/estop`` and ``~/enable`` services. Nothing from a topic or the wire can stop it, and no
callback waits: the link connects on a worker thread, and the services answer from state.

The link never sends more than the MCU's line (``baudrate``; over Wi-Fi the bridge's UART
speed) carries: targets, pings and configuration refresh frames that do not fit are skipped
(the next command period sends fresh targets), counted in the diagnostics key
``frames_skipped_line_busy`` and warned about with a hint (lower ``command_rate`` or raise
``baudrate``).

``~/estop`` latches the e-stop in the link (no targets, and no ENABLE on a reconnect, until
``~/enable`` true), sends ESTOP and answers at once: success means "sent and latched" (false:
latched only, not connected or not encodable; it is sent at the next session's start); the
message says whether the firmware has confirmed it yet. The link repeats ESTOP until the
firmware's telemetry shows its e-stop flag; a caller learns the confirmation from the
diagnostics key ``estop_confirmed`` (or the flag ``estop``).

The operator's stop state comes beside the service, on ``/estop`` (std_msgs/Bool, true: stop;
reliable, transient local, keep last 1: :data:`snake_ros.common.STOP_QOS`), which
operator_node publishes as a heartbeat: a late joiner or a repaired link gets the latest state
first. True latches the e-stop; false releases one it latched (never one of ``~/estop``).
Once targets have flowed, a lost link to the MCU, an MCU restart or the firmware's watchdog
tripping (the commands stopped: the station's link down) *trips* the link: the servos stay
disarmed until an act of the operator, ``~/enable`` true (``snake estop --release`` calls
it) or a release of the stop state (false after true) heard after the trip. Neither targets
flowing again nor the heartbeat's false heard again re-arm them (docs/safety.md, "The e-stop
and arming"). Before each period's targets the node takes the stop states waiting in the
middleware, so a stop is acted on before any command queued behind it. Diagnostics:
``estop_latched``, ``estop_source`` (service, topic or none), ``stop_state`` and
``stop_state_age_s`` (the latest heard, none before the first), ``tripped`` (why, or no),
``trips``.

Commands (``joint_commands``) are refused, counted and warned about (throttled) when they are
not finite, name unknown joints, differ in name and position counts, or are stamped outside
``command_max_age`` of now (older, or in the future by more than that; a zero stamp means
"now"). A command beyond a joint's limits by more than ``command_limit_margin`` (1e9 rad,
DBL_MAX: no gait asks that) is refused whole and counted (``commands_out_of_range``), never
clamped and executed; within the margin it is clamped to the limit (``commands_clamped``).
Diagnostics are OK only while valid telemetry arrives at about its configured rate
(:mod:`snake_driver.health`); otherwise WARN or ERROR with a one-line hint.

``measured/joint_states`` carries each joint's measured angle where its servo has
potentiometer feedback (``feedback:`` in the robot config's ``servos:``) and the firmware
reports it, else the firmware's slew-model estimate; diagnostics say which
(``measured_joints``, ``estimated_joints``) and WARN while a joint calibrated for feedback
still reports an estimate (``feedback_missing``).

With ``publish_clock`` the robot's own clock drives the graph (docs/hardware.md, "Emulated
time"): the driver publishes ``/clock`` from the MCU's timestamps
(:class:`snake_driver.clock.RobotClock`), stamps ``measured/joint_states`` and its
diagnostics on it and judges the commands' age by it, and every other node runs on
``use_sim_time``. An emulated robot that falls behind real time then slows the whole run
instead of skewing prediction against measurement. The driver itself stays on the host's
clock (its link's timeouts are real time).

The link key is no parameter: ``auth_key_file`` names a 0600 file holding it (else
``$SNAKE_AUTH_KEY_FILE``, else ``$SNAKE_AUTH_KEY``: :mod:`snake_driver.keyfile`); plain mode
over udp or tcp logs one ERROR at start. Every parameter is read once and declared
read-only, so a ``set`` is refused. The node refuses to start when ROS discovery reaches
other hosts, unless ``allow_open_domain`` (docs/safety.md).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node
from rclpy.subscription import MessageInfo, Subscription
from rclpy.time import Time
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool
from std_srvs.srv import SetBool, Trigger

from snake_ros.common import (
    PUBLISHER_QOS,
    STOP_QOS,
    STOP_TOPIC,
    declare_bool,
    declare_float,
    declare_int,
    declare_robot_config,
    declare_string,
    run,
    stream_qos,
)
from snake_ros.domain import refuse_open_domain
from snake_ros.paths import load_robot

from .calibration import servos_of
from .clock import RobotClock
from .health import Counts, Level, LinkMonitor, judge
from .keyfile import KEY_ENV, KEY_FILE_ENV, load_key, plain_mode_risk
from .link import DriverLink, LinkEvent, Measurement
from .protocol import Flag
from .transport import TRANSPORTS, make_transport


class DriverNode(Node):
    """The servo driver (see module docstring)."""

    def __init__(self) -> None:
        super().__init__("driver_node")
        self._logged_level: Level | None = None  # the diagnostics level last logged
        config = declare_robot_config(self)
        kind = declare_string(self, "transport", "serial", "link to the robot", choices=TRANSPORTS)
        port = declare_string(self, "port", "/dev/ttyACM0", "serial device, or the bridge's port")
        host = declare_string(self, "host", "127.0.0.1", "Wi-Fi bridge address (udp, tcp)")
        baud = declare_int(
            self,
            "baudrate",
            115200,
            1200,
            4000000,
            "speed of the MCU's UART [baud]: the serial port's, and for udp/tcp the Wi-Fi "
            "bridge's UART speed; the driver never sends more than this line carries",
        )
        self.command_rate = command_rate = declare_float(
            self, "command_rate", 50.0, 1.0, 500.0, "target frames per second [Hz]"
        )
        ping_rate = declare_float(self, "ping_rate", 5.0, 0.2, 50.0, "clock-sync pings [Hz]")
        diag_rate = declare_float(self, "diagnostics_rate", 1.0, 0.1, 10.0, "/diagnostics [Hz]")
        # the key itself is never a parameter: any host of the domain could read it
        key_file = declare_string(
            self,
            "auth_key_file",
            "",
            "file holding the link key (32 hex digits, mode 0600): authenticated mode; empty: "
            f"${KEY_FILE_ENV}, else ${KEY_ENV}, else plain mode",
        )
        allow_open_domain = declare_bool(
            self,
            "allow_open_domain",
            False,
            "start even though ROS discovery reaches other hosts (an isolated network, or "
            "two hosts: docs/safety.md); false: refuse to start",
        )
        if not allow_open_domain:
            refuse_open_domain("driver_node", "allow_open_domain:=true")
        enable = declare_bool(
            self,
            "enable_on_connect",
            True,
            "enable the servos on connecting (after a trip only ~/enable true or `snake estop "
            "--release` re-arms them)",
        )
        link_timeout = declare_float(
            self,
            "link_timeout",
            1.0,
            0.1,
            60.0,
            "no valid telemetry or pong for this long: the link is lost, reconnect [s]",
        )
        self.interpolate = declare_bool(
            self, "interpolate", True, "let the firmware interpolate over one command period"
        )
        self.command_max_age = declare_float(
            self,
            "command_max_age",
            0.5,
            0.001,
            3600.0,
            "refuse commands stamped more than this before now, or after now [s] (a zero "
            "stamp counts as now)",
        )
        self.command_limit_margin = declare_float(
            self,
            "command_limit_margin",
            0.5,
            0.0,
            2.0 * math.pi,
            "refuse a command beyond a joint's limits by more than this (counted in "
            "commands_out_of_range); one within it is clamped to the limit [rad]",
        )
        self.command_timeout = declare_float(
            self,
            "command_timeout",
            0.0,
            0.0,
            3600.0,
            "no valid command for this long (host time): send no targets, so the firmware's "
            "watchdog trips (hold or limp) instead of the robot holding stale commands; 0: "
            "send the newest targets however old (the hardware graph sets it) [s]",
        )
        publish_clock = declare_bool(
            self,
            "publish_clock",
            False,
            "publish /clock from the robot's clock and stamp on it (the emulated robot: the "
            "other nodes on use_sim_time follow the robot)",
        )
        clock_rate = declare_float(
            self,
            "clock_rate",
            100.0,
            10.0,
            250.0,
            "with publish_clock: /clock messages per second of the robot's clock, each a "
            "callback in every node on use_sim_time; the graph's fastest timer (gait_node, "
            "100 Hz) needs no more [Hz]",
        )
        self._clock_step_ns = int(1e9 / clock_rate)

        robot = load_robot(config)  # once
        model, self.servos = robot.model, servos_of(robot)
        key = load_key(key_file)
        risk = None if key else plain_mode_risk(kind, host, port)
        if risk:
            self.get_logger().error(risk)  # once, at start
        transport = make_transport(kind, port, host, baud)
        self.link = DriverLink(
            transport,
            self.servos,
            now=self._now,
            key=key,
            enable_on_connect=bool(enable),
            link_timeout=link_timeout,
            command_period=1.0 / command_rate,
            line_baud=baud,
        )
        self.command_period_ms = int(1000.0 / command_rate)
        period_ms = self.servos.system.telemetry_period_ms
        self.expected_telemetry_hz = 1000.0 / period_ms if period_ms else None
        self.robot_clock = RobotClock(period_ms * 1e-3) if publish_clock else None
        self._clock_ns = 0  # the last /clock published [ns]
        self.targets: dict[str, float] | None = None
        self._commanded_at = -math.inf  # time.monotonic() of the newest valid command
        self.rejected = 0
        self.stale = 0
        self.clamped = 0
        self.out_of_range = 0
        self.monitor = LinkMonitor()
        self.last_measurement: Measurement | None = None
        self._session = -1  # link.stats.connects + mcu_resets when the monitor restarted

        # relative names (the graphs run the node in the root namespace); /diagnostics is
        # the one topic every diagnostics tool reads
        # (docs/ros.md, "QoS"): commands best effort, the newest supersedes a lost one
        self.pub_state = self.create_publisher(JointState, "measured/joint_states", PUBLISHER_QOS)
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", PUBLISHER_QOS)
        self.pub_clock = (
            self.create_publisher(Clock, "/clock", PUBLISHER_QOS) if publish_clock else None
        )
        # the stop state first: a stop and a command ready together, the stop is taken first
        self._stop_sub = self.create_subscription(Bool, STOP_TOPIC, self.on_stop_state, STOP_QOS)
        self._command_sub = self.create_subscription(
            JointState, "joint_commands", self.on_command, stream_qos()
        )
        self.create_service(Trigger, "~/estop", self.on_estop)
        self.create_service(SetBool, "~/enable", self.on_enable)
        self.create_timer(0.004, self.on_poll)
        self.create_timer(1.0 / command_rate, self.on_send)
        self.create_timer(1.0 / ping_rate, lambda: self.log_events(self.link.ping()))
        self.create_timer(1.0 / diag_rate, self.on_diagnostics)
        self.get_logger().info(
            f"driving {model.n_joints} joints of {model.name} over {transport.description}"
            + (" (authenticated)" if key else "")
        )

    def destroy_node(self) -> None:
        """Close the link (the firmware's watchdog then holds or goes limp), then destroy."""
        if hasattr(self, "link"):
            self.link.close()
        super().destroy_node()

    def _now(self) -> float:
        return float(self.get_clock().now().nanoseconds) * 1e-9

    def _graph_now(self) -> float | None:
        """The graph's time [s]: the robot's clock with ``publish_clock`` (None before its
        first report), else the node's."""
        if self.robot_clock is None:
            return self._now()
        return self.robot_clock.now(self._now())

    def log_events(self, events: list[LinkEvent]) -> None:
        for event in events:
            if event.kind == "connected":
                self.get_logger().info(event.message)
            elif event.kind in ("mcu_reset", "rearmed", "tripped", "stop_state"):
                self.get_logger().warning(event.message)
            elif event.kind == "send_failed":
                self.get_logger().error(event.message, throttle_duration_sec=2.0)
            elif event.kind == "line_busy":  # the link says it at most every LINE_WARN_S
                self.get_logger().warning(
                    f"{event.message}: command_rate x frame size exceeds the line: lower "
                    f"command_rate (now {self.command_rate:g} Hz) or raise baudrate"
                )
            else:
                self.get_logger().warning(event.message, throttle_duration_sec=2.0)

    # ------------------------------------------------------------------ topics
    def on_command(self, msg: JointState) -> None:
        """Accept a command only if it names known joints with finite positions and is
        stamped within ``command_max_age`` of now (a zero stamp: now)."""
        known = self.servos.by_joint()
        problem = None
        # by hand: Time.from_msg raises on a negative stamp, which a message may carry
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        now = self._graph_now()
        age = now - stamp if stamp and now is not None else 0.0
        if not -self.command_max_age <= age <= self.command_max_age:
            self.stale += 1
            when = f"{age:.3g} s old" if age > 0 else f"{-age:.3g} s in the future"
            self.get_logger().warning(
                f"refused /joint_commands stamped {when} (command_max_age "
                f"{self.command_max_age:g} s): a stale or wrongly stamped command",
                throttle_duration_sec=2.0,
            )
            return
        if len(msg.name) != len(msg.position):
            problem = f"{len(msg.name)} names but {len(msg.position)} positions"
        elif not all(math.isfinite(x) for x in msg.position):
            problem = "non-finite positions"
        elif any(name not in known for name in msg.name):
            problem = f"unknown joints {[n for n in msg.name if n not in known]}"
        elif set(known) - set(msg.name) and self.targets is None:
            problem = f"first command misses joints {sorted(set(known) - set(msg.name))}"
        else:
            beyond = self._out_of_range(msg)
            if beyond is not None:
                self.out_of_range += 1
                self.get_logger().warning(
                    f"refused /joint_commands: {beyond}", throttle_duration_sec=2.0
                )
                return
        if problem is not None:
            self.rejected += 1
            self.get_logger().warning(
                f"rejected /joint_commands: {problem}", throttle_duration_sec=2.0
            )
            return
        self.targets = {**(self.targets or {}), **dict(zip(msg.name, msg.position, strict=True))}
        self._commanded_at = time.monotonic()

    def _out_of_range(self, msg: JointState) -> str | None:
        """The first joint of a command beyond its limits by more than
        ``command_limit_margin``, in one line (None: every joint within)."""
        known, margin = self.servos.by_joint(), self.command_limit_margin
        for name, angle in zip(msg.name, msg.position, strict=True):
            c = known[name]
            if not c.lower - margin <= angle <= c.upper + margin:
                return (
                    f"{name} at {angle:.6g} rad, beyond its limits [{c.lower:.4g}, "
                    f"{c.upper:.4g}] rad by more than command_limit_margin {margin:g} rad"
                )
        return None

    def on_stop_state(self, msg: Bool, info: MessageInfo) -> None:
        """The operator's stop state (``/estop``, a heartbeat): true latches the e-stop, false
        releases one it latched, and a release (false after true) ends a trip it arrived after
        (:meth:`DriverLink.operator_stop`, aged by its arrival in the middleware)."""
        received_ns = int(info.get("received_timestamp", 0))
        age = (time.time_ns() - received_ns) * 1e-9 if received_ns > 0 else 0.0
        events = self.link.operator_stop(bool(msg.data), min(max(age, 0.0), 1.0))
        self.log_events(events)
        if events:  # the stop state changed the latch: say so now, not at the next period
            self.on_diagnostics()

    def _take_waiting(
        self, subscription: Subscription[Any], callback: Callable[[Any, Any], None]
    ) -> None:
        """Run ``callback`` (message, info) on every message waiting in the middleware for
        ``subscription``, before this period's targets go: in a wait the executor runs its
        ready timers before its subscriptions."""
        while True:
            with subscription.handle:
                taken = subscription.handle.take_message(subscription.msg_type, subscription.raw)
            if taken is None:
                return
            callback(*taken)

    def on_send(self) -> None:
        """Send the newest targets, unless the commands stopped (``command_timeout``: e.g. the
        station's link is down): then nothing, and the firmware's watchdog trips."""
        self._take_waiting(self._stop_sub, self.on_stop_state)  # a stop wins over a command
        # the newest command: the executor ran a ready send timer before the command that
        # arrived with it, which then waited a whole command period (20 ms at 50 Hz) in
        # nearly half the sends of a loaded demo (eq. 218's T_c counts from the newest)
        self._take_waiting(self._command_sub, lambda msg, _info: self.on_command(msg))
        if self.targets is None or not self.link.connected:
            return
        if self.command_timeout and time.monotonic() - self._commanded_at > self.command_timeout:
            return
        duration = self.command_period_ms if self.interpolate else 0
        clamped, events = self.link.send_targets(self.targets, duration)
        self.log_events(events)
        if clamped:
            self.clamped += 1
            self.get_logger().warning(
                f"clamped to joint limits: {clamped}", throttle_duration_sec=2.0
            )

    def on_poll(self) -> None:
        """Read what the link has (never waiting) and publish what it measured."""
        measurements, events = self.link.poll(0.0)
        self.log_events(events)
        received = self._now()  # the clock of the link's stamps
        states = []
        newest_ns = 0  # the newest stamp among them [ns]
        for m in measurements:
            self.last_measurement = m
            stamp = m.stamp
            if self.robot_clock is not None:
                stamp = self.robot_clock.report(m.mcu_time_us, m.stamp, received)
            if stamp is None:
                continue  # no clock mapping yet: never stamp with arrival time
            msg = JointState()
            stamp_ns = int(stamp * 1e9)
            newest_ns = max(newest_ns, stamp_ns)
            msg.header.stamp = Time(nanoseconds=stamp_ns).to_msg()
            msg.name = list(m.positions)
            msg.position = list(m.positions.values())
            states.append(msg)
        if self.pub_clock is not None:  # first: a node on /clock never sees its future
            now = self._graph_now()  # never before a report's stamp (RobotClock.now)
            due = self._clock_ns + self._clock_step_ns
            if now is not None and (int(now * 1e9) >= due or newest_ns > self._clock_ns):
                self._clock_ns = int(now * 1e9)
                self.pub_clock.publish(Clock(clock=Time(nanoseconds=self._clock_ns).to_msg()))
        for msg in states:
            self.pub_state.publish(msg)

    # ------------------------------------------------------------------ services
    def on_estop(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """Latch the e-stop and send ESTOP; answer at once (see the module docstring)."""
        events = self.link.estop()
        self.log_events(events)
        failed = [e.message for e in events if e.kind == "send_failed"]
        response.success = self.link.connected and not failed
        latched = "latched in the driver: no targets, no enable until ~/enable true"
        if failed:
            response.message = f"e-stop not sent: {failed[0]}; {latched}"
        elif not self.link.connected:
            response.message = f"not connected: e-stop sent when the link is back; {latched}"
        elif self.link.estop_confirmed:
            response.message = f"e-stop sent; the firmware already reports it; {latched}"
        else:
            response.message = (
                "e-stop sent, repeated until the firmware confirms it (diagnostics "
                f"estop_confirmed); {latched}"
            )
        self.get_logger().warning(f"~/estop: {response.message}")
        return response

    def on_enable(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        events = self.link.enable(bool(request.data))
        self.log_events(events)
        response.success = self.link.connected and not events
        word = "enable" if request.data else "disable"
        response.message = (
            f"{word} sent" if response.success else f"not connected: {word} applies on reconnect"
        )
        return response

    # ------------------------------------------------------------------ diagnostics
    def on_diagnostics(self) -> None:
        link = self.link
        status = DiagnosticStatus(
            name="mfm_snake driver: link", hardware_id=link.transport.description
        )
        m = self.last_measurement
        stats, dec = link.stats, link.decoder.stats
        counts = link.counts()
        session = stats.connects + stats.mcu_resets
        if session != self._session:  # a new session: judge it on its own frames
            self._session = session
            self.monitor.restart(counts)
        delta = self.monitor.delta(counts)
        rate = delta.telemetry / delta.t if delta.t > 0 else 0.0
        values = {
            "connected": link.connected,
            "state": link.state,
            "boot_id": link.boot_id,
            "round_trip_ms": None if link.clock.last_rtt_s is None else 1e3 * link.clock.last_rtt_s,
            "telemetry_rate_hz": rate,
            "expected_telemetry_hz": self.expected_telemetry_hz,
            "frames_ok": dec.frames_ok,
            "bad_crc": dec.bad_crc,
            "bad_length": dec.bad_length,
            "bad_auth": dec.bad_auth,
            "replayed": dec.replayed,
            "bad_payload": dec.bad_payload,
            "echoed": dec.echoed,
            "sequence_gaps": dec.seq_gaps,
            "discarded_bytes": dec.discarded_bytes,
            "bytes_received": stats.bytes_received,
            "bytes_sent": stats.bytes_sent,
            "frames_skipped_line_busy": stats.frames_skipped_line_busy,
            "last_frame_age_s": link.silence_s if link.connected else None,
            "reconnects": max(0, stats.connects - 1),
            "no_answers": stats.no_answers,
            "link_timeouts": stats.timeouts,
            "mcu_resets": stats.mcu_resets,
            "rearms": stats.rearms,
            "ramping": link.ramp.active,
            "unstamped_reports": (  # on the robot's clock, its own rule (RobotClock)
                stats.unstamped if self.robot_clock is None else self.robot_clock.dropped
            ),
            "estop_latched": link.estopped,
            "estop_confirmed": link.estop_confirmed,
            "estop_source": link.estop_source or "none",
            "stop_state": "none" if link.stop_state is None else link.stop_state,
            "stop_state_age_s": link.stop_state_age_s,
            "tripped": link.tripped or "no",
            "trips": stats.trips,
            "commands_rejected": self.rejected,
            "commands_stale": self.stale,
            "commands_clamped": self.clamped,
            "commands_out_of_range": self.out_of_range,
            "error_reports": stats.error_reports,
        }
        if m is not None:
            values |= {
                "enabled": bool(m.flags & Flag.ENABLED),
                "estop": bool(m.flags & Flag.ESTOP),
                "watchdog_tripped": bool(m.flags & Flag.WATCHDOG_TRIPPED),
                "limit_hit": bool(m.flags & Flag.LIMIT_HIT),
                "measured_joints": len(m.measured),
                "estimated_joints": ", ".join(m.estimated) or "none",
                "feedback_missing": ", ".join(self._feedback_missing(m)) or "none",
                **{f"firmware_{k}": v for k, v in vars(m.counters).items()},
            }
        status.values = [
            KeyValue(key=k, value=f"{v:.3f}" if isinstance(v, float) else str(v))
            for k, v in values.items()
        ]
        level, status.message = self._judge(delta, m)
        status.level = bytes([level])
        self._log_level(level, status.message)
        array = DiagnosticArray()
        now = self._graph_now()
        array.header.stamp = Time(nanoseconds=int((now or 0.0) * 1e9)).to_msg()
        array.status = [status]
        self.pub_diag.publish(array)

    def _log_level(self, level: Level, message: str) -> None:
        """Log the diagnostics' level once it has been OK and whenever it changes after
        (a warning when it leaves OK or moves between WARN and ERROR, a line when it is OK
        again), so the log tells what /diagnostics told: heavy corruption, silence, an
        e-stop. Before the first OK the connection's own events are logged."""
        if level == self._logged_level or (self._logged_level is None and level != Level.OK):
            return
        if level == Level.OK:
            self.get_logger().info(f"link OK: {message}")
        else:
            self.get_logger().warning(f"link {level.name}: {message}")
        self._logged_level = level

    def _feedback_missing(self, m: Measurement) -> list[str]:
        """Joints calibrated for feedback whose latest position is still the estimate."""
        return [c.joint for c in self.servos.channels if c.feedback and c.joint not in m.measured]

    def _judge(self, delta: Counts, m: Measurement | None) -> tuple[Level, str]:
        """The link's level and one-line message: not connected (with the reason and its
        hint), an e-stop or watchdog trip, else what the session's window shows."""
        link = self.link
        if not link.connected:
            what = {"opening": "connecting", "handshake": "waiting for a PONG"}.get(link.state)
            if not link.lost_reason:
                return Level.ERROR, f"not connected: {what or 'connecting'}"
            again = f"; {what} again" if what else ""
            return Level.ERROR, f"not connected: {link.lost_reason}{again}"
        if delta.t <= 0.0:
            return Level.WARN, "session starting"
        level, message = judge(delta, self.expected_telemetry_hz)
        if level != Level.OK:
            return level, message
        if link.estopped and link.estop_source == "topic":
            return Level.WARN, "e-stop latched by the operator's stop state: it releases it"
        if link.estopped:
            return Level.WARN, "e-stop latched by ~/estop: ~/enable true to re-arm"
        if link.tripped:
            return Level.WARN, (
                f"disarmed after a trip ({link.tripped}): ~/enable true or `snake estop "
                "--release` re-arms"
            )
        if m is not None and m.flags & (Flag.ESTOP | Flag.WATCHDOG_TRIPPED):
            return Level.WARN, "e-stop or watchdog tripped"
        if m is not None and (missing := self._feedback_missing(m)):
            return Level.WARN, (
                f"no feedback from {', '.join(missing)}: publishing the firmware's estimate "
                "(check the potentiometer wiring, ADC input = channel)"
            )
        return level, message


def main() -> None:
    """Entry point of the ``driver_node`` executable."""
    sys.exit(run(DriverNode, "driver_node"))
