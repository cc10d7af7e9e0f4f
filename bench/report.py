"""What every benchmark does with its result: JSON on stdout and, when asked, in a file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def emit(result: Any, output: Path | None) -> None:
    """Print ``result`` as indented JSON; also write it to ``output`` (folders made) if given."""
    text = json.dumps(result, indent=2)
    print(text)
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text + "\n")
