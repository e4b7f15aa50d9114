"""The documentation stays inside the repository.

README.md and docs/*.md link only to files that exist in the repository (or to web pages), point to no design
document or folder outside it, and the README links the architecture page. The README stays short (about 200 lines
at most: the rest is in docs/), docs/index.md links every page of docs/, and no page refers to the project's issue
numbers or its internal process (they mean nothing to a user). (That every module has a docstring
stating its contract is ruff's D100/D104.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
OUTSIDE = ("../shared", "DESIGN.md", "shared design folder")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_links_resolve_inside_the_repository(doc: Path) -> None:
    text = doc.read_text()
    for target in LINK.findall(text):
        if re.match(r"[a-z]+://", target) or target.startswith("#"):
            continue
        path = (doc.parent / target.split("#", 1)[0]).resolve()
        assert path.is_relative_to(ROOT), f"{doc.name} links outside the repository: {target}"
        assert path.exists(), f"{doc.name} links to a missing file: {target}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_no_reference_to_documents_outside_the_repository(doc: Path) -> None:
    text = doc.read_text()
    found = [needle for needle in OUTSIDE if needle in text]
    assert not found, f"{doc.name} refers to {found}: summarise what is needed into docs/ instead"


def test_architecture_is_linked_from_the_readme() -> None:
    assert "(docs/architecture.md)" in (ROOT / "README.md").read_text()


README_MAX_LINES = 200


def test_the_readme_is_short() -> None:
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move details to docs/ (linked from docs/index.md)"


def test_the_index_links_every_page() -> None:
    index = ROOT / "docs" / "index.md"
    linked = {(index.parent / t.split("#", 1)[0]).resolve() for t in LINK.findall(index.read_text())}
    pages = [p.resolve() for p in (ROOT / "docs").glob("*.md") if p.name != "index.md"]
    missing = sorted(p.name for p in pages if p not in linked)
    assert not missing, f"docs/index.md does not link {missing}"


ISSUE_REFERENCE = re.compile(r"\bissues? #?\d+|\bthis (?:session|slice)\b", re.IGNORECASE)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_no_page_refers_to_issue_numbers(doc: Path) -> None:
    found = [m.group(0) for m in ISSUE_REFERENCE.finditer(doc.read_text())]
    assert not found, f"{doc.name} refers to the project's issues or process: {found}"
