"""``python -m snake_bringup.cli``: the ``snake`` command."""

import sys

from . import main

sys.exit(main())
