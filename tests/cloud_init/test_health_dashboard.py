"""The Grafana dashboard's health panels select what the health package really writes: metric names from its
textfile, check names from a real gate run (and the acceptance's rows), so renaming either breaks this test."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "cloud-init"))

from health import acceptance, gate, pcie, tools  # noqa: E402
from health.result import prometheus  # noqa: E402

torch = pytest.importorskip("torch")
DASHBOARD = json.loads((ROOT / "monitoring/gpufleet-dashboard.json").read_text())
EXPRS = [t["expr"] for p in DASHBOARD["panels"] for t in p.get("targets", [])]


def selects(expr: str, check: str) -> bool:
    """Whether a PromQL selector's check="..." or check=~"..." matches this check name."""
    return any(re.fullmatch(value, check) if op == "=~" else value == check
               for op, value in re.findall(r'check(=~?)"([^"]+)"', expr))


@pytest.fixture(scope="module")
def written() -> tuple[set[str], set[str]]:
    """(metric names, check names) the package writes: a gate run on one CPU stand-in, a PCIe sample, and the
    acceptance's rows (its pure parts)."""
    report = gate.run(gate.GateConfig(row={"gpus": 1, "nvswitch": True, "peakTflopsBf16": 1e-9},
                                      devices=(torch.device("cpu"),)))
    sample = tools.rows("0, 5, 5, 16, 16", pcie.FIELDS)
    report.checks += pcie.checks(sample)
    accepted = acceptance.mesh_report([], 0, 2, 0.0)
    text = prometheus(report) + prometheus(accepted)
    names = set(re.findall(r"^# TYPE (\w+) gauge$", text, re.M))
    checks = {c.check for c in report.checks + accepted.checks} | {"acceptance-world", "acceptance-node",
                                                                    "acceptance-pair"}
    return names, checks


def test_every_health_metric_on_the_dashboard_is_written(written):
    names, _ = written
    used = {name for expr in EXPRS for name in re.findall(r"gpufleet_health_\w+", expr)}
    assert used and used <= names


def test_every_check_a_panel_selects_exists(written):
    _, checks = written
    for expr in (e for e in EXPRS if "check=" in e):
        assert any(selects(expr, c) for c in checks), f"{expr} selects no check the package writes"


@pytest.mark.parametrize("check", ["matmul", "hbm", "p2p", "allreduce", "pcie-gen", "pcie-width", "acceptance-world"])
def test_each_figure_has_a_panel(check):
    assert any(selects(expr, check) for expr in EXPRS), check


def test_panels_have_unique_ids_and_do_not_overlap():
    panels = DASHBOARD["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    cells = [(x, y) for p in panels for x in range(p["gridPos"]["x"], p["gridPos"]["x"] + p["gridPos"]["w"])
             for y in range(p["gridPos"]["y"], p["gridPos"]["y"] + p["gridPos"]["h"])]
    assert len(cells) == len(set(cells))
