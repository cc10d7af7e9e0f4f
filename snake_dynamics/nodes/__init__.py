"""ROS 2 nodes over the dynamics core: ``gait_node`` and ``dynamics_node`` (thin adapters).

The core modules one level up import no ROS; everything rclpy lives here.
"""
