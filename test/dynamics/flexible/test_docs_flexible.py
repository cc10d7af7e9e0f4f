"""docs/flexible.md numbers every equation the flexible model's code cites, as "(F60)".

Reference: the labels at the ends of the code-block lines of docs/flexible.md (the
convention of docs/mfm.md, with the paper's numbers prefixed F) and the citations in the
sources; a range "(F57)-(F75)" cites its two ends.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "flexible.md"
SOURCES = [*sorted((ROOT / "snake_dynamics" / "flexible").glob("*.py")),
           ROOT / "snake_bringup" / "cli" / "flexible.py"]  # fmt: skip


def labels() -> list[int]:
    out, fence = [], False
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
        elif fence:
            match = re.search(r"\(F(\d+)\)\s*$", line)
            if match:
                out.append(int(match.group(1)))
    return out


def test_every_cited_number_is_labelled_once() -> None:
    cited: dict[int, list[str]] = {}
    for path in SOURCES:
        for number in re.findall(r"\(F(\d+)\)", path.read_text(encoding="utf-8")):
            cited.setdefault(int(number), []).append(path.name)
    assert len(cited) > 20, cited  # the parser broke if it found few
    numbered = Counter(labels())
    missing = {n: files for n, files in sorted(cited.items()) if n not in numbered}
    assert not missing, f"cited but not numbered in docs/flexible.md: {missing}"
    assert not [n for n, c in numbered.items() if c > 1], numbered
