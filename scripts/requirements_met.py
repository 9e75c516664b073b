"""Exit 0 when this Python holds gpufleet and every package pyproject.toml asks for with the given extras, and theirs,
at versions that satisfy them; else name the first one missing and exit 1. scripts/setup asks this before it runs
pip, so a package removed from the virtualenv is installed again while a complete one costs a fraction of a second.

    .venv/bin/python scripts/requirements_met.py train,dev,kernels
"""

from __future__ import annotations

import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def wanted(extras: list[str]) -> list[Requirement]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    optional = project.get("optional-dependencies", {})
    return [Requirement(text) for text in [*project["dependencies"], *(r for e in extras for r in optional[e])]]


def first_missing(requirements: list[Requirement]) -> str | None:
    """Walks the requirements and theirs (markers evaluated, extras followed); None when all are installed."""
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [(r, "") for r in requirements]
    while todo:
        requirement, extra = todo.pop()
        if requirement.marker and not requirement.marker.evaluate({"extra": extra}):
            continue
        key = (requirement.name.lower(), frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            return str(requirement)
        if not requirement.specifier.contains(dist.version, prereleases=True):
            return f"{requirement} (installed: {dist.version})"
        for text in dist.requires or []:
            todo += [(Requirement(text), e) for e in ("", *requirement.extras)]
    return None


def main() -> int:
    extras = [e for e in (sys.argv[1] if len(sys.argv) > 1 else "").split(",") if e]
    try:
        metadata.distribution("gpufleet")
    except metadata.PackageNotFoundError:
        print("requirements: gpufleet itself is not installed", file=sys.stderr)
        return 1
    missing = first_missing(wanted(extras))
    if missing:
        print(f"requirements: {missing} is missing", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
