"""ROS 2 nodes over the dynamics core: ``gait_node`` and ``dynamics_node`` (thin adapters).

The core modules one level up import no ROS; everything rclpy lives here.
"""

#: What every node of this package logs once it is built and spinning (``common.run``);
#: ``snake``'s runner waits for it (and imports it from here, without rclpy).
READY_TEXT = "node ready"
