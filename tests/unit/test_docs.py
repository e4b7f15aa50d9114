"""The documentation stays inside the repository.

README.md and docs/*.md link only to files that exist in the repository (or to web pages), point to no design
document or folder outside it, and the README links the architecture page. (That every module has a docstring
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
