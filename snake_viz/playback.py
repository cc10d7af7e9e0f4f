"""Playback limits shared by ``replay_node``, ``snake replay`` and ``replay.launch.py``.

Constants only, so that the launch files' graph reads them without the bag library
(``rosbags`` comes from pip, not from rosdep).
"""

from __future__ import annotations

#: Playback speed factors a replay accepts (``replay_node``'s ``rate``, ``snake replay
#: --rate``, ``replay.launch.py rate:=``), lowest and highest.
REPLAY_RATES = (0.01, 100.0)
