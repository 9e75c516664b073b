"""The gate's hook into the node scripts: with the plan's /etc/gpufleet/health.json, `gpufleet-node gate` runs the
health package from the installed code bundle, and a failed check reports the node with its figure (metric, the
local stand-in for the tag and the group's unhealthy path) before training could start; the report and metrics stay
where `fleet health` and node exporter read them."""

from __future__ import annotations

import json

import pytest
from bootstrap_helpers import run
from test_local_scripts import local_node  # noqa: F401 - the fixture: a local node installed from the real bundle

pytest.importorskip("torch")


def test_a_failed_check_reports_the_node_with_its_figure(local_node):  # noqa: F811
    root, entry, env, _ = local_node()
    (root / "etc/gpufleet/health.json").write_text(json.dumps({"row": {"gpus": 1}, "level": "light"}))
    result = run([entry, "gate"], root, env, timeout=120)
    assert result.returncode == 1
    assert (root / "var/lib/gpufleet/metrics/health.prom").read_text() == \
        'gpufleet_node_healthy{reason="gpus:node=0:min=1"} 0\n'
    report = json.loads((root / "var/lib/gpufleet/health/gate.json").read_text())
    assert not report["ok"] and report["checks"][0]["check"] == "gpus"
    assert 'gpufleet_health_ok{kind="gate",level="light"} 0' in (
        root / "var/lib/gpufleet/metrics/health-gate.prom").read_text()


def test_a_healthy_node_passes_and_keeps_its_report(local_node):  # noqa: F811
    root, entry, env, _ = local_node()
    (root / "etc/gpufleet/health.json").write_text(json.dumps({"row": {"gpus": 0}, "level": "light"}))
    result = run([entry, "gate"], root, env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads((root / "var/lib/gpufleet/health/gate.json").read_text())["ok"]
    assert not (root / "var/lib/gpufleet/metrics/health.prom").exists()
    assert not (root / "run/gpufleet/health-reason").exists()
