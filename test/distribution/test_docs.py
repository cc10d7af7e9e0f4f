"""The repository documents itself: docs/ holds every equation the code cites, every
relative link resolves, and no file points outside the repository for its documentation.

References: the numbered equations of docs/mfm.md (a line in a code block ending with its
number in brackets, the convention stated at the top of that page), the equation
citations in the packages' docstrings and comments ("eq. (48)", "eqs. 17, 46-48"), and
git's own list of the repository's files.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MFM = ROOT / "docs" / "mfm.md"
#: The sibling folder a clone does not have (spelled in two parts so this file passes).
OUTSIDE = "../" + "shared"
#: The one allowed mention: the developers' fresh-machine CI tool, not documentation.
ALLOWED = OUTSIDE + "/tools/fresh-ci"

#: "eq. (48)", "eq. 62", "eqs. (18), (33)", "eqs. 17, 46-48", "Eqn. 84"; stops at
#: anything but a number list ("eq. 75, signs corrected" cites 75 only, "(eq. 66), (6n, 6n)"
#: 66 only).
_NUMBER = r"\(?\d+\)?(?!\w)"
_ITEM = rf"{_NUMBER}(?:\s*[-\u2013]\s*{_NUMBER})?"
CITATION = re.compile(rf"\beq(?:n|s|ns)?\.\s*({_ITEM}(?:\s*(?:,|and)\s*{_ITEM})*)", re.I)
#: The label of a numbered equation: "(48)" or "(8), (43)" at the end of a code-block line.
LABEL = re.compile(r"((?:\(\d+\)(?:,\s*)?)+)\s*$")
#: Inline links [text](target "title") and reference definitions [name]: target.
INLINE_LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


# ------------------------------------------------------------------------------ parsers
def cited_numbers(text: str) -> set[int]:
    """Equation numbers cited in ``text``; a range "46-48" cites 46, 47 and 48."""
    numbers: set[int] = set()
    for match in CITATION.finditer(text):
        for item in re.split(r"\s*(?:,|and)\s*", match.group(1).replace("(", "").replace(")", "")):
            ends = [int(x) for x in re.split(r"\s*[-\u2013]\s*", item.strip())]
            low, high = ends[0], ends[-1]
            assert low <= high <= low + 50, f"odd equation range {item!r} in {match.group(0)!r}"
            numbers.update(range(low, high + 1))
    return numbers


def code_block_lines(text: str) -> list[str]:
    """The lines inside fenced code blocks (``` or ~~~)."""
    lines, fence = [], ""
    for line in text.splitlines():
        marker = line.lstrip()[:3]
        if marker in ("```", "~~~") and (not fence or marker == fence):
            fence = "" if fence else marker
        elif fence:
            lines.append(line)
    return lines


def equation_labels(text: str) -> list[tuple[int, str]]:
    """(number, line) of every numbered equation of a docs page, in page order."""
    labels = []
    for line in code_block_lines(text):
        match = LABEL.search(line)
        if match:
            labels += [(int(n), line) for n in re.findall(r"\((\d+)\)", match.group(1))]
    return labels


def prose(text: str) -> str:
    """Markdown without fenced code blocks and inline code spans (links there are text)."""
    kept, fence = [], ""
    for line in text.splitlines():
        marker = line.lstrip()[:3]
        if marker in ("```", "~~~") and (not fence or marker == fence):
            fence = "" if fence else marker
        elif not fence:
            kept.append(re.sub(r"(`+)(?:(?!\1).)+\1", "", line))
    return "\n".join(kept)


def link_targets(text: str) -> list[str]:
    """Targets of the inline and reference links of a markdown text."""
    body = prose(text)
    return INLINE_LINK.findall(body) + REFERENCE_LINK.findall(body)


def anchors(text: str) -> set[str]:
    """GitHub's heading anchors of a markdown text (lower case, punctuation dropped,
    spaces to hyphens, "-1", "-2" for repeats)."""
    seen: Counter[str] = Counter()
    out = set()
    for line in prose(text).splitlines():
        match = re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(1).lower()).replace(" ", "-")
        out.add(slug if not seen[slug] else f"{slug}-{seen[slug]}")
        seen[slug] += 1
    return out


def broken_links(page: Path, text: str | None = None) -> list[str]:
    """The relative links of ``page`` (or of ``text`` placed at ``page``) that do not
    resolve to a file in the repository, or to a heading of a markdown file."""
    root = ROOT.resolve()
    problems = []
    body = page.read_text(encoding="utf-8") if text is None else text
    for target in link_targets(body):
        if SCHEME.match(target):
            continue  # http:, https:, mailto: ...
        path_part, _, anchor = target.partition("#")
        if path_part.startswith("/"):
            dest = (root / path_part.lstrip("/")).resolve()
        else:
            dest = (page.parent / path_part).resolve() if path_part else page.resolve()
        if not dest.is_relative_to(root):
            problems.append(f"{target}: outside the repository")
        elif not dest.is_file():
            problems.append(f"{target}: no such file")
        elif (
            anchor
            and dest.suffix == ".md"
            and anchor not in anchors(dest.read_text(encoding="utf-8"))
        ):
            problems.append(f"{target}: no heading with anchor #{anchor}")
    return problems


def repository_files() -> list[Path]:
    """git's files of the repository: tracked ones and new ones not ignored."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        timeout=60,
    )
    if out.returncode != 0:
        pytest.skip(f"not a git checkout: {out.stderr.decode(errors='replace').strip()}")
    names = [n for n in out.stdout.decode().split("\0") if n]
    return [ROOT / n for n in names if (ROOT / n).is_file()]


# -------------------------------------------------------------------- the parsers work
@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("Reduced mass matrix M* = Bᵀ M B (eq. 82).", {82}),
        ("R_b, r_b (eqs. 17, 46-48), joint twists", {17, 46, 47, 48}),
        ("as in eqs. (18), (33).", {18, 33}),
        ("Force list Q (eq. 75, signs corrected): per body", {75}),
        ("the offset vectors of eq. (48) are", {48}),
        ("torques -> RK4 (eqs. 81, 84).", {81, 84}),
        ("of the moving bodies (eq. 66), (6n, 6n).", {66}),
        ("from Eqn. (84). Then (65) alone is no citation", {84}),
        ("frequency (Hz), no equation here (3)", set()),
    ],
)
def test_citations_are_read_as_written(text: str, numbers: set[int]) -> None:
    assert cited_numbers(text) == numbers


def test_equation_labels_are_read_from_code_blocks_only() -> None:
    page = "\n".join(
        [
            "Prose that ends in a number (12)",
            "```",
            "M* = Bᵀ M B                  (82)",
            "R_k = R_{k-1} R^(k/k-1)       (8), (43)",
            "q̈ = M*⁻¹ (F* - N* q̇)",
            "```",
        ]
    )
    assert [n for n, _ in equation_labels(page)] == [82, 8, 43]


def test_link_check_finds_missing_files_anchors_and_escapes() -> None:
    text = (
        "[ok](mfm.md#errata-of-the-paper-corrected-here) [gone](nope.md) [up](../../x.md)\n"
        "[web](https://example.org) [bad anchor](design.md#no-such-heading) `[code](x.md)`\n"
        "```\n[block](y.md)\n```\n[ref]: ../LICENSE\n"
    )
    assert link_targets(text) == [
        "mfm.md#errata-of-the-paper-corrected-here",
        "nope.md",
        "../../x.md",
        "https://example.org",
        "design.md#no-such-heading",
        "../LICENSE",
    ]
    assert broken_links(ROOT / "docs" / "README.md", text) == [
        "nope.md: no such file",
        "../../x.md: outside the repository",
        "design.md#no-such-heading: no heading with anchor #no-such-heading",
    ]


# ------------------------------------------------------------------------- the checks
def test_no_file_points_outside_the_repository() -> None:
    offenders = []
    for path in repository_files():
        data = path.read_bytes()
        if b"\0" in data:
            continue  # binary
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if OUTSIDE in line and ALLOWED not in line:
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "point these at docs/ instead:\n" + "\n".join(offenders)


def numbered_lines() -> list[tuple[int, str, str]]:
    """(number, page, line) of every numbered equation of docs/ (docs/mfm.md holds the MFM's,
    a model's own page the numbers that continue them, e.g. the MuJoCo plant's in
    docs/hardware.md)."""
    return [
        (n, page.name, line)
        for page in sorted((ROOT / "docs").glob("*.md"))
        for n, line in equation_labels(page.read_text(encoding="utf-8"))
    ]


def test_every_cited_equation_is_numbered_in_docs() -> None:
    sources = sorted(p for p in ROOT.glob("snake_*/**/*.py") if "__pycache__" not in p.parts)
    cited: dict[int, list[str]] = {}
    for path in sources:
        for number in cited_numbers(path.read_text(encoding="utf-8")):
            cited.setdefault(number, []).append(str(path.relative_to(ROOT)))
    # the core cites its main equations: an empty or tiny set means the parser broke
    assert {17, 48, 56, 82, 83, 84} <= set(cited), sorted(cited)
    numbered = {n for n, _, _ in numbered_lines()}
    missing = {n: files for n, files in sorted(cited.items()) if n not in numbered}
    assert not missing, f"cited in the code but not numbered in docs/: {missing}"


def test_each_equation_number_labels_one_line_of_docs() -> None:
    lines = numbered_lines()
    assert {n for n, page, _ in lines if page == "mfm.md"} >= {17, 48, 82}  # the parser works
    counts = Counter(n for n, _, _ in lines)
    twice = {n: [p for m, p, _ in lines if m == n] for n, c in counts.items() if c > 1}
    assert not twice, f"equation numbers labelling more than one line: {twice}"


@pytest.mark.parametrize(
    ("number", "expression"),
    [
        (12, "hat(w)"),
        (17, "SE(3)"),
        (48, "R^(k/k-1) l_k + l_{k-1}"),
        (56, "Ẋ = B q̇"),
        (65, "½ q̇ᵀ M* q̇"),
        (66, "blockdiag(m_1 I3, J_1"),
        (73, "hat(ω^(1))"),
        (79, "F* = Bᵀ Q"),
        (81, "M* q̈ + N* q̇ = F*"),
        (82, "M* = Bᵀ M B"),
        (83, "N* = Bᵀ (M Ḃ + D M B)"),
        (84, "q̈ = M*⁻¹ (F* - N* q̇)"),
    ],
)
def test_numbered_equations_say_what_the_code_says(number: int, expression: str) -> None:
    # the expressions the docstrings give beside these numbers (kinetics.py, model.py, lie.py)
    lines = [line for n, line in equation_labels(MFM.read_text(encoding="utf-8")) if n == number]
    assert lines and expression in lines[0], (number, lines)


@pytest.mark.parametrize(
    "page",
    [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        ROOT / "bench" / "README.md",
        *sorted((ROOT / "bench" / "notes").glob("*.md")),
    ],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_relative_links_resolve_to_files_in_the_repository(page: Path) -> None:
    assert broken_links(page) == []
