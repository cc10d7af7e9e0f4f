"""What the tests share besides fixtures (those are in test/conftest.py), one concern a module:

- ``waits``: waiting for a condition with a deadline; a child a test interrupts as Ctrl-C does;
  a command in the background of a test, killed and reaped at the end.
- ``load``: busy cores beside a test, paused once its child only computes.
- ``models``: random snakes and states that do not hide index mix-ups, the model cases, the
  relative error.
- ``ros_domains``: a ROS domain id held machine-wide while a test module or test uses it.
- ``namespaces``: network namespaces (two hosts on one machine) and tools/wifi_link.py.
- ``markers``: what a run that leaves a marker's tests out takes away.
- ``fault_proxy``: a fake device and fault-injecting proxies for the link tests.
- ``nodes``: a node of this checkout in a process of its own; the fixture ``domain`` (rclpy on
  the module's domain), which a module imports and names in ``__all__``.
- ``firmware``: the firmware's host build on a pty.
- ``driver``: driver_node in a process of its own, and a test's node on its topics.
- ``dask_cluster``: a Dask scheduler and workers on 127.0.0.1, the sweep's and study's tests'.
- ``cli``: the snake command of this checkout in a process of its own.
- ``sweep``: the small sweep the cluster tests run, its command and the points it wrote.
- ``plant``: servo pulses and the runner's records for the plant, the bridge's check, a plant
  file's refusal.
- ``planar_snake``: the independent planar reference snake.

test/ is on ``sys.path`` (pytest puts the top conftest's folder there), so a test imports
``from support.waits import wait_for``.
"""
