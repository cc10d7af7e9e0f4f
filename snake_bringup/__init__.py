"""Bringup of mfm_snake, the top floor: the node graphs described once (:mod:`.graph`, read by
the launch files and the runner), the runner that starts, watches and stops them
(:mod:`.runner`), the emulated robot (:mod:`.emulator`, :mod:`.plant_bridge`), the offline
work behind the ``snake`` command (:mod:`.locomotion`, :mod:`.comparison`,
:mod:`.identification`) and the command itself (:mod:`.cli`, one module per subcommand).
Every error it raises on purpose derives from :class:`.errors.BringupError`, a
:class:`snake_dynamics.errors.SnakeError`."""
