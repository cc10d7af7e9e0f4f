"""Constants the nodes and the ``snake`` command share, importable without ROS or the bag
library (``rosbags`` comes from pip, not from rosdep), so the launch files' graph and the
command line read them cheaply.
"""

from __future__ import annotations

#: Playback speed factors a replay accepts (``replay_node``'s ``rate``, ``snake replay
#: --rate``, ``replay.launch.py rate:=``), lowest and highest.
REPLAY_RATES = (0.01, 100.0)
#: The web view's port on 127.0.0.1 (``snake view --port``, web_viewer_node's ``port``).
DEFAULT_PORT = 8765
