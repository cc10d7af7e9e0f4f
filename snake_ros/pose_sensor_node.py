"""pose_sensor_node: the emulated pose sensor's readings on ``measured/pose``
(geometry_msgs/PoseStamped, ``header.frame_id`` ``world``), as a motion-capture driver
(mocap4ros2, vrpn_client_ros) publishes a tracked body's pose.

It receives the plant process's datagrams (:mod:`snake_dynamics.sim.pose_sensor`) on UDP
``host``:``port`` and publishes each one as it arrives, stamped with its sample time placed
on the node's clock by the least arrival delay of the last few seconds
(:class:`snake_ros.arrival_stamps.ArrivalStamper`; slewed to a lower one, so that stamps
never go back): the time it arrives without the link's and the host's jitter (stamps
on arrival would bunch whenever the emulator or the host stalls, and on the robot's clock,
which holds while the robot is late, repeat). A real mocap system's own timestamps play that
part (mocap4ros2; vrpn_client_ros with use_server_time). On the emulated robot's graph the
node follows the robot's clock (``use_sim_time``). A datagram that is not a reading, one
whose sample time is ahead of the others' by more than 50 ms (from the
future: a wrong clock, a spoofed datagram) and one not newer than the last published are
rejected and counted on ``/diagnostics`` (:class:`snake_ros.common.InputMonitor`: ``pose
datagrams (<reason>) rejected``; the status WARNs while they grow); such an outlier never
enters the estimate, and a sensor that restarts or steps its clock is followed after
``DEFAULT_REBASE`` readings (``stamp offset restarts``). Against a
real robot, a mocap driver's topic remapped to ``/measured/pose`` takes its place.

Parameters (read-only): ``port`` (the UDP port; ``snake hardware --emulate`` sets the one its
emulator chose), ``host`` (127.0.0.1), ``frame_id`` (world).
"""

from __future__ import annotations

import socket
import sys
import threading
from collections import deque

from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from rclpy.time import Time

from snake_dynamics.sim import PoseDatagramError, PoseReading, decode

from .arrival_stamps import DEFAULT_REBASE, ArrivalStamper
from .common import InputMonitor, declare_int, declare_string, run

#: The receiving thread's longest wait before it looks at the stop flag [s].
WAKE_S = 0.1
#: The topic (relative: ``/measured/pose`` in the root namespace).
TOPIC = "measured/pose"


class PoseSensorNode(Node):
    """Publishes every received pose reading. A thread of its own waits for the datagrams
    and wakes the executor through a guard condition (a timer on the robot's clock would
    batch them at the clock's rate); the executor decodes and publishes them."""

    def __init__(self) -> None:
        super().__init__("pose_sensor_node")
        port = declare_int(self, "port", 0, 0, 65535, "UDP port of the pose datagrams")
        host = declare_string(self, "host", "127.0.0.1", "address to receive on", read_only=True)
        self._frame_id = declare_string(
            self, "frame_id", "world", "header.frame_id of the poses", read_only=True
        )
        self._monitor = InputMonitor(self)
        self._stamper = ArrivalStamper()
        self._pub = self.create_publisher(PoseStamped, TOPIC, 10)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind((host, port))
        self._sock.settimeout(WAKE_S)
        self._received: deque[tuple[bytes, int]] = deque()  # datagram, arrival [ns]
        self._wake = self.create_guard_condition(self._publish_received)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._receive, daemon=True)
        self._thread.start()
        self.get_logger().info(f"pose readings on udp {host}:{self._sock.getsockname()[1]}")

    def _receive(self) -> None:
        while not self._stop.is_set():
            try:
                data = self._sock.recv(1024)
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            # its arrival now, not when the executor gets to it (a busy executor is no delay)
            self._received.append((data, self.get_clock().now().nanoseconds))
            self._wake.trigger()

    def _publish_received(self) -> None:
        while self._received:
            data, arrival_ns = self._received.popleft()
            try:
                self._publish(decode(data), arrival_ns)
            except PoseDatagramError as exc:
                self._monitor.reject("pose datagrams", str(exc))

    def _publish(self, reading: PoseReading, arrival_ns: int) -> None:
        if arrival_ns == 0:
            self._monitor.reject("pose datagrams", "received before the clock")
            return
        restarts = self._stamper.rebased
        stamp, reason, detail = self._stamper.stamp(round(reading.time * 1e9), arrival_ns)
        if self._stamper.rebased != restarts:
            self._monitor.event(
                "stamp offset restarts",
                f"{DEFAULT_REBASE} pose readings in a row did not fit the stamp offset: "
                "the sensor restarted or its clock stepped; estimating it again",
            )
        if stamp is None:
            self._monitor.reject(f"pose datagrams ({reason})", detail)
            return
        msg = PoseStamped()
        msg.header.stamp = Time(nanoseconds=stamp).to_msg()
        msg.header.frame_id = self._frame_id
        p, q = msg.pose.position, msg.pose.orientation
        p.x, p.y, p.z = (float(v) for v in reading.position)
        q.x, q.y, q.z, q.w = (float(v) for v in reading.quaternion)
        self._pub.publish(msg)
        self._monitor.accept(TOPIC)

    def destroy_node(self) -> None:
        """Stop receiving, then destroy the node."""
        self._stop.set()
        self._thread.join(timeout=2 * WAKE_S + 1.0)
        self._sock.close()
        super().destroy_node()


def main() -> None:
    """Entry point of the ``pose_sensor_node`` executable."""
    sys.exit(run(PoseSensorNode, "pose_sensor_node"))


if __name__ == "__main__":
    main()
