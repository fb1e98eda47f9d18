"""Every link between our docs (``docs/*.md``, ``README.md``) reaches a file, and its
``#anchor`` a heading (or an ``<a id>``) of that file, as GitHub renders them.

GitHub's anchors: a heading's text as it reads (inline code without its backticks, a link's
text, no emphasis marks), lowercased, each space a ``-``, every punctuation mark other than
``-`` and ``_`` dropped; a second heading of the same anchor gets ``-1``, a third ``-2``.
Headings and links inside fenced code blocks are not headings or links.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_EXPLICIT_ANCHOR = re.compile(r"""<a\s+(?:id|name)=["']([^"']+)["']""")
# [text](target) and [text](target "title"), images too; the target up to a space or ")"
_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_INLINE_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_PUNCTUATION = re.compile(r"[^\w\- ]")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading of this text (before duplicates are numbered)."""
    text = _INLINE_LINK.sub(r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    return _PUNCTUATION.sub("", text.lower()).replace(" ", "-")


def _prose_lines(path: Path) -> Iterator[tuple[int, str]]:
    """The file's lines outside fenced code blocks, numbered from 1."""
    fenced = False
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def anchors_of(path: Path) -> set[str]:
    """Every anchor a link into ``path`` may name."""
    seen: dict[str, int] = {}
    anchors: set[str] = set()
    for _, line in _prose_lines(path):
        anchors.update(_EXPLICIT_ANCHOR.findall(line))
        heading = _HEADING.match(line)
        if heading is None:
            continue
        anchor = github_anchor(heading.group(2))
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        anchors.add(anchor if count == 0 else f"{anchor}-{count}")
    return anchors


def broken_links(path: Path) -> list[str]:
    """``FILE:LINE: TARGET (why)`` for each link of ``path`` to a doc or anchor not there."""
    broken = []
    for number, line in _prose_lines(path):
        # inline code is not a link: `[x](y)` in backticks is an example
        for target in _LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
                continue
            file_part, _, anchor = target.partition("#")
            if file_part and not file_part.endswith(".md"):
                continue  # a link to code or a folder: not between docs
            linked = (path.parent / file_part).resolve() if file_part else path
            where = f"{path.relative_to(REPO)}:{number}: {target}"
            if not linked.is_file():
                broken.append(f"{where} (no such file)")
            elif anchor and anchor not in anchors_of(linked):
                broken.append(f"{where} (no such heading in {linked.relative_to(REPO)})")
    return broken


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("The lifecycle (`components/core/_jobs.py`)", "the-lifecycle-componentscore_jobspy"),
        ("What differs from the dynamic resources", "what-differs-from-the-dynamic-resources"),
        ("After a killed `pulumi up`", "after-a-killed-pulumi-up"),
        ("Placement: candidate regions", "placement-candidate-regions"),
        (
            "Catalog overlay (`training:catalogOverlay`, `x`)",
            "catalog-overlay-trainingcatalogoverlay-x",
        ),
        ("[Held jobs](dynamic.md#held-jobs) and *more*", "held-jobs-and-more"),
        ("Two  spaces", "two--spaces"),
    ],
)
def test_an_anchor_is_the_one_github_gives(heading: str, anchor: str) -> None:
    assert github_anchor(heading) == anchor


def test_a_second_heading_of_the_same_text_is_numbered(tmp_path: Path) -> None:
    doc = tmp_path / "a.md"
    doc.write_text('# Tests\n\n## Tests\n\n```\n# Tests\n```\n<a id="old-name"></a>\n')
    assert anchors_of(doc) == {"tests", "tests-1", "old-name"}


def test_a_broken_link_is_named_with_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    (tmp_path / "b.md").write_text("## The lifecycle (`x.py`)\n")
    doc = tmp_path / "a.md"
    doc.write_text(
        "[ok](b.md#the-lifecycle-xpy) [code](`c.md#no`) [web](https://x.md#y)\n"
        "[gone](b.md#the-lifecycle-ypy)\n[none](c.md)\n[here](#nowhere)\n"
    )
    assert broken_links(doc) == [
        "a.md:2: b.md#the-lifecycle-ypy (no such heading in b.md)",
        "a.md:3: c.md (no such file)",
        "a.md:4: #nowhere (no such heading in a.md)",
    ]


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: path.name)
def test_every_link_between_the_docs_reaches_its_heading(doc: Path) -> None:
    assert broken_links(doc) == []
