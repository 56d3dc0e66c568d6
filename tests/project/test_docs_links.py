"""Every relative link and image in README.md and docs/*.md resolves: the file exists
(relative to the page that links it), and a `#fragment` on a link to a markdown file names
one of its headings (GitHub's anchors). Web links (http, https, mailto) and links to an
anchor of the same page (`#...`) are not checked. Standard library only: no bpy, no numpy."""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))

FENCE = re.compile(r"^\s*(```|~~~)")
# `[text](target)` or `![alt](target)`, text possibly over several lines or with one level
# of nested brackets; target optionally in <...> and followed by a "title".
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
WEB = ("http://", "https://", "mailto:")


def prose(text: str) -> str:
    """The page without fenced code blocks and inline code (no links are in there)."""
    out, fenced = [], None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if m and (fenced is None or m.group(1) == fenced):
            fenced = m.group(1) if fenced is None else None
            out.append("")
            continue
        out.append("" if fenced else line)
    return CODE_SPAN.sub(lambda m: "code", "\n".join(out))


def links(text: str) -> list[str]:
    return [m.group(1) for m in LINK.finditer(prose(text))]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its text (link targets and code ticks dropped),
    lowercase, punctuation removed except hyphens and underscores, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    return "".join(c for c in text if c.isalnum() or c in " -_").replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Anchors of a page's headings; a repeated heading gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    out = set()
    fenced = None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if m and (fenced is None or m.group(1) == fenced):
            fenced = m.group(1) if fenced is None else None
            continue
        h = None if fenced else HEADING.match(line)
        if h:
            s = slug(h.group(2))
            n = seen.get(s, 0)
            out.add(s if n == 0 else f"{s}-{n}")
            seen[s] = n + 1
    return out


def broken_links(page: Path) -> list[str]:
    """The links of `page` that do not resolve, each with the reason."""
    bad = []
    for target in links(page.read_text(encoding="utf-8")):
        if not target or target.startswith(WEB) or target.startswith("#"):
            continue
        path, _, fragment = target.partition("#")
        dest = (page.parent / unquote(path)).resolve()
        if not dest.exists():
            bad.append(f"{target}: no file {dest}")
        elif fragment and dest.suffix == ".md" and \
                unquote(fragment) not in anchors(dest.read_text(encoding="utf-8")):
            bad.append(f"{target}: no heading with anchor #{unquote(fragment)} in {dest.name}")
    return bad


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_relative_links_resolve(page):
    bad = broken_links(page)
    assert not bad, f"{page.relative_to(ROOT)}: broken links:\n" + "\n".join(bad)


def test_the_pages_have_links_to_check():
    """The checker finds the README's picture and its links to the docs (it is not vacuous)."""
    found = links((ROOT / "README.md").read_text(encoding="utf-8"))
    assert "docs/viewport_makehuman_f25.png" in found
    assert any(t.startswith("docs/") and t.endswith(".md") for t in found)


def test_a_broken_link_or_anchor_is_reported(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A page\n\n## Two words: here & there\n")
    page = tmp_path / "README.md"
    page.write_text(
        "[ok](docs/a.md) [ok](docs/a.md#two-words-here--there) [web](https://example.org/x)\n"
        "[same page](#anything) `[code](missing.md)`\n\n```\n[fenced](missing.md)\n```\n"
        "[gone](docs/b.md) ![picture\nover two lines](docs/missing.png)\n"
        "[bad anchor](docs/a.md#two-words)\n")
    assert [b.split(":")[0] for b in broken_links(page)] == [
        "docs/b.md", "docs/missing.png", "docs/a.md#two-words"]


def test_slugs_follow_github():
    assert slug("Two characters: Table 3 of Kavan & Žára 2005") == \
        "two-characters-table-3-of-kavan--žára-2005"
    assert slug("scan --jobs") == "scan---jobs"
    assert slug("Storage: what built data adds to the .blend") == \
        "storage-what-built-data-adds-to-the-blend"
    assert anchors("# X\n## Setup\n```\n# not a heading\n```\n## Setup\n") == \
        {"x", "setup", "setup-1"}
