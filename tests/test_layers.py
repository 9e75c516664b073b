"""The layers as folders (docs/design.md#layers), held by the import graph of the product's Python, read with ast:
no import cycle, no arrow from a lower top folder to a higher one, at most 3 back arrows inside a folder (a module in a
subfolder importing one in a folder above it), and no top folder with more than 40% of the lines."""

from __future__ import annotations

import ast
import graphlib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Lower to higher: an arrow between two of them points down this list, never up.
LAYERS = ("training", "spec", "plan", "clouds", "components", "here", "policy", "fleet", "__main__.py")
# The node side, beside the layers: cloud-init/ (on the node's path, so imported as `health`, `health_allreduce`) may
# import only these, and no layer imports it.
NODE_SIDE = {"cloud-init": ("training",)}
MAX_BACK_ARROWS = 3
MAX_SHARE = 0.40

Graph = dict[str, set[str]]


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every product module by its import name."""
    found = {}
    for top in (*LAYERS, *NODE_SIDE):
        for path in [root / top] if top.endswith(".py") else sorted((root / top).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            parts = parts[1:] if parts[0] in NODE_SIDE else parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            found[".".join(parts)] = path
    return found


def _resolve(name: str, mods: dict[str, Path]) -> str | None:
    """The module an imported name lives in: the longest dotted prefix that is one of ours, else None."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _imported(name: str, path: Path) -> set[str]:
    """Every dotted name a module imports (`from a import b`: a.b), at any depth: function-level and TYPE_CHECKING
    imports count too."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[:len(package.split(".")) - node.level + 1], *filter(None, [base])])
            names |= {f"{base}.{alias.name}" for alias in node.names}
    return names


def import_graph(root: Path = ROOT) -> tuple[dict[str, Path], Graph]:
    """The modules and, for each, the modules of ours it imports (`from a import b`: a.b where b is a module, else a;
    a package's own __init__ is not counted when a module inside it is imported)."""
    mods = modules(root)
    graph = {name: {_resolve(n, mods) for n in _imported(name, path)} - {None, name} for name, path in mods.items()}
    return mods, graph


def top(path: Path, root: Path = ROOT) -> str:
    return path.relative_to(root).parts[0]


def cycle(graph: Graph) -> list[str]:
    """One import cycle, or [] when there is none."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        return error.args[1]
    return []


def upward_arrows(mods: dict[str, Path], graph: Graph) -> list[str]:
    """Arrows from a top folder to one it may not import: a higher layer, the node side, or from the node side any
    but its own."""
    bad = []
    for importer, imported in ((a, b) for a, bs in graph.items() for b in bs):
        source, target = top(mods[importer]), top(mods[imported])
        if source == target:
            continue
        allowed = (target in NODE_SIDE[source] if source in NODE_SIDE
                   else target not in NODE_SIDE and LAYERS.index(target) < LAYERS.index(source))
        if not allowed:
            bad.append(f"{importer} ({source}) -> {imported} ({target})")
    return sorted(bad)


def back_arrows(mods: dict[str, Path], graph: Graph) -> Counter[Path]:
    """Per folder, the arrows from a module in one of its subfolders to a module in it."""
    counts: Counter[Path] = Counter()
    for importer, imported in ((a, b) for a, bs in graph.items() for b in bs):
        inner, outer = mods[importer].parent, mods[imported].parent
        if outer in inner.parents:
            counts[outer.relative_to(ROOT)] += 1
    return counts


def line_shares(mods: dict[str, Path]) -> dict[str, float]:
    lines = Counter({top(path): 0 for path in mods.values()})
    for path in mods.values():
        lines[top(path)] += len(path.read_text().splitlines())
    return {name: count / lines.total() for name, count in lines.items()}


def test_no_import_cycle():
    assert cycle(import_graph()[1]) == []


def test_every_arrow_points_down_the_layers():
    assert upward_arrows(*import_graph()) == []


def test_an_upward_arrow_is_caught():
    """The spec layer importing the clouds layer (the circle this layout broke) is refused, as is the plan importing
    the node side."""
    mods, graph = import_graph()
    graph["spec.cluster"] = graph["spec.cluster"] | {"clouds"}
    graph["plan.node"] = graph["plan.node"] | {"health.config"}
    assert upward_arrows(mods, graph) == ["plan.node (plan) -> health.config (cloud-init)",
                                          "spec.cluster (spec) -> clouds (clouds)"]


def test_few_back_arrows_in_any_folder():
    assert {folder: n for folder, n in back_arrows(*import_graph()).items() if n > MAX_BACK_ARROWS} == {}


def test_no_top_folder_holds_most_of_the_lines():
    mods = import_graph()[0]
    assert {name for name in (*LAYERS, *NODE_SIDE) if not any(top(p) == name for p in mods.values())} == set()
    assert {name: round(share, 2) for name, share in line_shares(mods).items() if share > MAX_SHARE} == {}
