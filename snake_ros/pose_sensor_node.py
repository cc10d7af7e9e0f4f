"""pose_sensor_node: the emulated pose sensor's readings on ``measured/pose``
(geometry_msgs/PoseStamped, ``header.frame_id`` ``world``), as a motion-capture driver
(mocap4ros2, vrpn_client_ros) publishes a tracked body's pose.

It receives the plant process's datagrams (:mod:`snake_dynamics.sim.pose_sensor`) on UDP
``host``:``port`` and publishes each one as it arrives, stamped with its sample time placed
on the node's clock by the least arrival delay seen so far (slewed to a lower one, so that
stamps never go back): the time it arrives without the link's and the host's jitter (stamps
on arrival would bunch whenever the emulator or the host stalls, and on the robot's clock,
which holds while the robot is late, repeat). A real mocap system's own timestamps play that
part (mocap4ros2; vrpn_client_ros with use_server_time). On the emulated robot's graph the
node follows the robot's clock (``use_sim_time``). A datagram that is not a reading is
counted and rejected on ``/diagnostics`` (:class:`snake_ros.common.InputMonitor`). Against a
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

from snake_dynamics.sim.pose_sensor import PoseDatagramError, PoseReading, decode

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
        self._least_ns = 0  # the least arrival - sample time seen [ns]
        self._offset_ns: int | None = None  # the offset the stamps use, slewed to it [ns]
        self._last_sample_ns: int | None = None
        self._pub = self.create_publisher(PoseStamped, TOPIC, 10)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind((host, port))
        self._sock.settimeout(WAKE_S)
        self._received: deque[bytes] = deque()
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
            self._received.append(data)
            self._wake.trigger()

    def _publish_received(self) -> None:
        while self._received:
            try:
                self._publish(decode(self._received.popleft()))
            except PoseDatagramError as exc:
                self._monitor.reject("pose datagrams", str(exc))

    def _stamp_ns(self, reading: PoseReading) -> int | None:
        """The reading's sample time plus the least (arrival on the node's clock - sample
        time) seen [ns], that offset slewed (as NTP slews a clock): a lower least delay is
        taken at most half a sample spacing per reading, so the stamps never go back. None
        before the node's clock runs."""
        now = self.get_clock().now().nanoseconds
        if now == 0:
            return None
        sample = round(reading.time * 1e9)
        delay = now - sample
        if self._offset_ns is None or self._last_sample_ns is None:
            self._least_ns = self._offset_ns = delay
        else:
            self._least_ns = min(self._least_ns, delay)
            step = (sample - self._last_sample_ns) // 2
            self._offset_ns = max(self._least_ns, self._offset_ns - max(step, 0))
        self._last_sample_ns = sample
        return sample + self._offset_ns

    def _publish(self, reading: PoseReading) -> None:
        stamp = self._stamp_ns(reading)
        if stamp is None:
            self._monitor.reject("pose datagrams", "received before the clock")
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
