"""The front door stays a front door: README.md is short and quotes output, with no dates
or commit hashes (those live in bench/README.md, bench/notes/ and the git log), and
bench/README.md has a section per benchmark script, with its command, a table and a date.

References: the files themselves, the benchmark scripts found in bench/ (a script is a
``bench/*.py`` with a ``__main__`` block; ``report.py`` and ``__init__.py`` are helpers),
and sample strings on which the detectors must fire (so an empty match is not vacuous).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BENCH = ROOT / "bench"
BENCH_README = BENCH / "README.md"
NOTES = BENCH / "notes"
#: The README's length limit (issue 36: a front door, not a lab notebook).
MAX_README_LINES = 300

#: A commit hash as git prints it: 7-40 lower-case hex digits standing alone, with at least
#: one digit and one letter a-f (so plain numbers and words such as "defaced" are not
#: hashes), and not the tail of a decimal number ("1.797e308").
HASH_LIKE = re.compile(r"(?<![\w.])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?!\w)")
#: An ISO date, YYYY-MM-DD.
DATE = re.compile(r"(?<!\d)\d{4}-[01]\d-[0-3]\d(?!\d)")
#: A markdown table's separator row.
TABLE_RULE = re.compile(r"^\|\s*:?-{3,}", re.M)


def hash_like(text: str) -> list[str]:
    return HASH_LIKE.findall(text)


def dates(text: str) -> list[str]:
    return DATE.findall(text)


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) of each markdown heading outside fenced code, the body running to
    the next heading of any level."""
    out: list[tuple[str, list[str]]] = []
    fence = ""
    for line in text.splitlines():
        marker = line.lstrip()[:3]
        if marker in ("```", "~~~") and (not fence or marker == fence):
            fence = "" if fence else marker
        elif not fence and re.match(r"^#{1,6}\s", line):
            out.append((line.lstrip("#").strip(), []))
            continue
        if out:
            out[-1][1].append(line)
    return [(heading, "\n".join(body)) for heading, body in out]


def benchmark_scripts() -> list[str]:
    return sorted(
        p.name
        for p in BENCH.glob("*.py")
        if re.search(r"^if __name__ == [\"']__main__[\"']:", p.read_text(encoding="utf-8"), re.M)
    )


# -------------------------------------------------------------- the detectors work
@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("before a95f2a3 it took 17 min", ["a95f2a3"]),
        ("(tour9, commit 6b78815)", ["6b78815"]),
        ("at 44d0b61c0ffee and e37da21.", ["44d0b61c0ffee", "e37da21"]),
        ("git show " + "0123456789abcdef" * 2 + "01234567", ["0123456789abcdef" * 2 + "01234567"]),
        ("servo model 07936910, 804 passed", []),  # numbers, not hashes
        ("commands of 1.797e308 rad", []),  # a float's exponent
        ("a defaced or effaced facade", []),  # words of the letters a-f
        ("abc1234x and xabc1234", []),  # part of a longer word
    ],
)
def test_hash_detector_finds_commit_hashes(text: str, found: list[str]) -> None:
    assert hash_like(text) == found


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("measured 2026-11-29, idle", ["2026-11-29"]),
        ("(2026-11-26/27, cylinders)", ["2026-11-26"]),
        ("runs/demo-20261126-135216/bag", []),  # a run folder's time, caught by review
        ("0.6-2.8 s, 2026-11 and 12-34-56", []),
    ],
)
def test_date_detector_finds_iso_dates(text: str, found: list[str]) -> None:
    assert dates(text) == found


def test_section_splitter_skips_code_blocks() -> None:
    text = "# A\none\n```bash\n# not a heading\n```\n## B: bench/x.py\ntwo\n"
    assert sections(text) == [("A", "one\n```bash\n# not a heading\n```"), ("B: bench/x.py", "two")]


# ---------------------------------------------------------------------- the checks
def test_readme_is_at_most_300_lines_and_shows_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= MAX_README_LINES, (
        f"README.md has {len(lines)} lines (at most {MAX_README_LINES}): move detail to docs/, "
        "figures to bench/README.md, investigations to bench/notes/"
    )
    assert "make demo" in text and "make test" in text


def test_readme_has_no_commit_hashes_or_dates() -> None:
    text = README.read_text(encoding="utf-8")
    offenders = [
        f"README.md:{number}: {found}"
        for number, line in enumerate(text.splitlines(), 1)
        for found in hash_like(line) + dates(line)
    ]
    assert not offenders, (
        "README quotes output and states what the software does; dated figures go to "
        "bench/README.md, their history to bench/notes/ and the git log:\n" + "\n".join(offenders)
    )


def test_bench_readme_has_a_section_per_benchmark_script() -> None:
    scripts = benchmark_scripts()
    assert len(scripts) >= 10 and "dynamics.py" in scripts, scripts  # the scan sees bench/
    found = sections(BENCH_README.read_text(encoding="utf-8"))
    problems = []
    for script in scripts:
        bodies = [body for heading, body in found if f"bench/{script}" in heading]
        if not bodies:
            problems.append(f"bench/{script}: no heading names it")
            continue
        body = bodies[0]
        if f"python bench/{script}" not in body:
            problems.append(f"bench/{script}: its section has no command `python bench/{script}`")
        if not TABLE_RULE.search(body):
            problems.append(f"bench/{script}: its section has no table of figures")
        if not dates(body):
            problems.append(f"bench/{script}: its section says not when it was measured")
    assert not problems, "\n".join(problems)


def test_bench_notes_are_dated_and_listed() -> None:
    notes = sorted(NOTES.glob("*.md"))
    assert notes, "bench/notes/ holds the investigations"
    listed = BENCH_README.read_text(encoding="utf-8")
    for note in notes:
        assert re.fullmatch(r"\d{4}-[01]\d-[0-3]\d-[a-z0-9-]+\.md", note.name), note.name
        assert f"notes/{note.name}" in listed, f"bench/README.md does not list {note.name}"
