"""``python -m snake_bringup.cli``: the ``snake`` command."""

from . import console

console()
