"""docs/cloud-facts.md is what code cites for a cloud fact: every anchor cited anywhere in the project exists."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
FACTS = ROOT / "docs" / "cloud-facts.md"
CITATION = re.compile(r"cloud-facts\.md#([a-z0-9-]+)")


def anchors() -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes."""
    headings = re.findall(r"^#{1,6} (.+)$", FACTS.read_text(encoding="utf-8"), flags=re.M)
    return {re.sub(r"[^a-z0-9 -]", "", heading.lower()).replace(" ", "-") for heading in headings}


# Not the project's files: environments, caches, build output (a walk, not `git ls-files`, so that a copy of the tree
# without git, as a mutation run makes, reads the same files).
SKIPPED = {".git", ".venv", "build", "mutants", "node_modules", "__pycache__", ".pytest_cache", ".ruff_cache",
           "gpufleet.egg-info", "runs", ".gpufleet"}


def project_files() -> list[str]:
    files = []
    for folder, subfolders, names in os.walk(ROOT):
        subfolders[:] = [name for name in subfolders if name not in SKIPPED]
        files += [str((Path(folder) / name).relative_to(ROOT)) for name in names]
    return files


def cited() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for name in project_files():
        path = ROOT / name
        if path.suffix in {".py", ".yaml", ".md", ".sh", ".j2", ""} and path.is_file():
            for anchor in CITATION.findall(path.read_text(encoding="utf-8", errors="replace")):
                found.setdefault(anchor, set()).add(name)
    return found


def test_the_catalog_cites_its_sections():
    assert {"aws-catalog", "alibaba-catalog", "tencent-catalog"} <= cited().keys()


def test_every_cited_anchor_is_a_heading():
    missing = {anchor: sorted(names) for anchor, names in cited().items() if anchor not in anchors()}
    assert missing == {}
