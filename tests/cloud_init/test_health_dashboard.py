"""The Grafana dashboard's panels select what the nodes really write: every metric a query names, and every label it
matches on, is one the code writes (the health package's textfile from a real gate run and the acceptance's rows,
gpufleet-report's metric, the DCGM fields dcgm-exporter is told to export), and every check a panel selects is one the
package reports; renaming either side breaks this test. Both sides are parsed, neither is listed here."""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "cloud-init"))

from health import acceptance, config, gate, pcie, tools  # noqa: E402
from health.result import prometheus  # noqa: E402
from health_configs import tiny  # noqa: E402

torch = pytest.importorskip("torch")
DASHBOARD = json.loads((ROOT / "monitoring/gpufleet-dashboard.json").read_text())
EXPRS = [t["expr"] for p in DASHBOARD["panels"] for t in p.get("targets", [])]
TEMPLATE_QUERIES = [v["query"] for v in DASHBOARD.get("templating", {}).get("list", []) if v.get("type") == "query"]
TARGET_LABELS = {"instance", "job"}
"""What Prometheus adds to every series it scrapes (its scrape config's target labels)."""
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\{[^}]*\}|\d[\w.]*|[A-Za-z_:][\w:]*|\S')
_CLAUSES = {"by", "without", "on", "ignoring", "group_left", "group_right"}
_OPERATORS = {"and", "or", "unless", "bool", "offset", "sum", "min", "max", "avg", "count", "group", "stddev",
              "stdvar", "topk", "bottomk", "quantile", "count_values"}  # aggregations may take `by (...)` first


def selectors(expr: str) -> list[tuple[str, set[str]]]:
    """(metric, the labels it is matched on) for every series selector of a PromQL expression: identifiers that are
    neither functions, operators nor the labels of a by/on clause."""
    tokens, found, i = _TOKEN.findall(expr), [], 0
    while i < len(tokens):
        token = tokens[i]
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token in _CLAUSES and following == "(":
            i = tokens.index(")", i)
        elif re.fullmatch(r"[A-Za-z_:][\w:]*", token) and token not in _OPERATORS and following != "(":
            block = following if following.startswith("{") else ""
            found.append((token, set(re.findall(r"(\w+)\s*(?:=~|!~|!=|=)\s*\"", block))))
        i += 1
    return found


def _label_values(query: str) -> list[tuple[str, set[str]]]:
    """label_values(METRIC, LABEL) of a template variable."""
    match = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", query.strip())
    assert match, f"a template query this test cannot read: {query}"
    return [(match[1], {match[2]})]


def _textfile_labels(text: str) -> dict[str, set[str]]:
    labels: dict[str, set[str]] = {}
    for name, block in re.findall(r"^(\w+)\{(.*)\} \S+$", text, re.M):
        labels.setdefault(name, set()).update(re.findall(r'(\w+)="', block))
    return labels


@pytest.fixture(scope="module")
def report():
    """A gate run on one CPU stand-in with a PCIe sample, and the acceptance's mesh rows (its pure part)."""
    node = config.parse(Path("node.json"), tiny(gpus=1))
    run = gate.run(gate.GateConfig(node=node, devices=(torch.device("cpu"),)))
    run.checks += pcie.checks(tools.rows("0, 5, 5, 16, 16", pcie.FIELDS))
    return run, acceptance.mesh_report([], 0, 2, 0.0)


@pytest.fixture(scope="module")
def written(report) -> dict[str, set[str]]:
    """Every metric the nodes write, with the labels it carries once scraped."""
    metrics = _textfile_labels(prometheus(report[0]) + prometheus(report[1]))
    printed = (ROOT / "cloud-init/bin/gpufleet-report").read_text()
    for name, labels in _textfile_labels("\n".join(re.findall(r"printf '([^']*)\\n'", printed))).items():
        metrics.setdefault(name, set()).update(labels)
    counters = (ROOT / "monitoring/dcgm-counters.csv").read_text().splitlines()
    metrics |= {line.split(",")[0].strip(): set() for line in counters if line.strip() and not line.startswith("#")}
    return {name: labels | TARGET_LABELS for name, labels in metrics.items()}


def _check_names(report) -> set[str]:
    """Check names from the real runs, and every constant name the acceptance gives its rows (its pairs and nodes
    need a world of three nodes: test_health_acceptance runs those)."""
    source = ast.parse((ROOT / "cloud-init/health/acceptance.py").read_text())
    named = {node.args[0].value for node in ast.walk(source) if isinstance(node, ast.Call) and node.args
             and getattr(node.func, "id", None) in {"judge", "Check"} and isinstance(node.args[0], ast.Constant)}
    return named | {c.check for c in report[0].checks + report[1].checks}


def selects(expr: str, check: str) -> bool:
    """Whether a PromQL selector's check="..." or check=~"..." matches this check name."""
    return any(re.fullmatch(value, check) if op == "=~" else value == check
               for op, value in re.findall(r'check(=~?)"([^"]+)"', expr))


def test_the_selector_parser_reads_names_labels_and_skips_functions_and_clauses():
    expr = 'sum by (instance) (rate(gpufleet_x{kind="gate",check=~"a.*"}[5m])) / 100 * other_metric == 0'
    assert selectors(expr) == [("gpufleet_x", {"kind", "check"}), ("other_metric", set())]


def test_every_metric_and_label_the_dashboard_queries_is_written(written):
    queried = [s for expr in EXPRS for s in selectors(expr)] + [s for q in TEMPLATE_QUERIES for s in _label_values(q)]
    assert {"gpufleet_health_figure", "gpufleet_health_threshold", "gpufleet_health_check_ok", "gpufleet_health_ok",
            "gpufleet_health_duration_seconds"} <= {name for name, _ in queried}, "the gate's figures are shown"
    for name, labels in queried:
        assert name in written, f"the dashboard queries {name}, which nothing writes"
        assert labels <= written[name], f"{name} has no label {labels - written[name]}"


def test_every_check_a_panel_selects_exists(report):
    checks = _check_names(report)
    for expr in (e for e in EXPRS if "check=" in e):
        assert any(selects(expr, c) for c in checks), f"{expr} selects no check the package writes"


@pytest.mark.parametrize("check", ["matmul", "hbm", "p2p", "allreduce", "pcie-gen", "pcie-width", "acceptance-world"])
def test_each_figure_has_a_panel(check):
    assert any(selects(expr, check) for expr in EXPRS), check


def test_every_check_has_its_figure_threshold_and_verdict_in_one_table():
    tables = [p for p in DASHBOARD["panels"] if p["type"] == "table"]
    unfiltered = [{s[0] for t in p["targets"] for s in selectors(t["expr"]) if not s[1]} for p in tables]
    assert {"gpufleet_health_figure", "gpufleet_health_threshold", "gpufleet_health_check_ok"} in unfiltered


def test_panels_have_unique_ids_and_do_not_overlap():
    panels = DASHBOARD["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    cells = [(x, y) for p in panels for x in range(p["gridPos"]["x"], p["gridPos"]["x"] + p["gridPos"]["w"])
             for y in range(p["gridPos"]["y"], p["gridPos"]["y"] + p["gridPos"]["h"])]
    assert len(cells) == len(set(cells))
