"""The ROS 2 layer: the one shared helper module (:mod:`.common`: parameters, spinning, clean
shutdown), where the package's data files are (:mod:`.paths`) and the dynamics nodes
``gait_node`` and ``dynamics_node``, thin adapters over :mod:`snake_dynamics`.

Imports point one way: ``snake_dynamics`` (and the other cores) never import this package;
the driver and viz nodes import :mod:`.common` and :mod:`.paths`; ``snake_bringup`` (graphs,
runner, CLI) sits on top. Importing this package or :mod:`.paths` imports no rclpy.
"""

#: What every node logs once it is built and spinning (``common.run``); ``snake``'s runner
#: waits for it (and imports it from here, without rclpy).
READY_TEXT = "node ready"
