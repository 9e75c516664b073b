"""The job stands alone: no module under training/ imports anything else of this repository (the node's health gate,
the planner, the CLI), at its top or inside a function; the node's side wraps the job (cloud-init/health/run_job.py),
never the other way round. Checked by parsing every import statement."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TRAINING = ROOT / "training"
# Where this repository's own importable names live: its root, and cloud-init/ (on PYTHONPATH on the nodes).
SEARCH_PATHS = (ROOT, ROOT / "cloud-init")


def _ours() -> set[str]:
    """Top-level names that import a module or package of this repository."""
    names = set()
    for directory in SEARCH_PATHS:
        for entry in directory.iterdir():
            if entry.suffix == ".py":
                names.add(entry.stem)
            elif entry.is_dir() and any(entry.glob("*.py")):
                names.add(entry.name)
    return names


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, top-level name) of every absolute import in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def test_the_repository_names_include_the_nodes_and_the_planners():
    """The check below is only as good as this list: the packages the job once imported, and their neighbours."""
    assert {"health", "health_allreduce", "components", "fleet", "policy", "training"} <= _ours()


def test_nothing_under_training_imports_outside_training():
    outside = _ours() - {"training"}
    files = sorted(TRAINING.rglob("*.py"))
    assert len(files) > 10
    found = [f"{path.relative_to(ROOT)}:{line} imports {name}" for path in files for line, name in _imports(path)
             if name in outside]
    assert found == []
