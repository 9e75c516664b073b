"""The gate's hook into the node scripts: with the plan's /etc/gpufleet/node.json, `gpufleet-node gate` runs the
health package from the installed code bundle, and a failed check reports the node with its figure (metric, the
local stand-in for the tag and the group's unhealthy path) before training could start; the report and metrics stay
where `fleet health` and node exporter read them."""

from __future__ import annotations

import json
import shlex
import sys

import pytest
from bootstrap_helpers import run
from health_configs import node_config
from test_local_scripts import local_node  # noqa: F401 - the fixture: a local node installed from the real bundle

pytest.importorskip("torch")


def test_a_failed_check_reports_the_node_with_its_figure(local_node):  # noqa: F811
    root, entry, env, _ = local_node()
    (root / "etc/gpufleet/node.json").write_text(json.dumps(node_config(gpus=1)))
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
    assert json.loads((root / "etc/gpufleet/node.json").read_text())["gpus"] == 0, "the local plan's own file"
    result = run([entry, "gate"], root, env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads((root / "var/lib/gpufleet/health/gate.json").read_text())["ok"]
    assert not (root / "var/lib/gpufleet/metrics/health.prom").exists()
    assert not (root / "run/gpufleet/health-reason").exists()


def test_the_gate_runs_under_the_nodes_nccl_env_and_the_fabric_plugins_library_path(local_node):  # noqa: F811
    """As every NCCL user on the node (gpufleet-lib.sh load_nccl_env): the gate's all-reduce inherits this
    environment (test_health_gate.py), so its NCCL loads the network the job's NCCL loads."""
    root, entry, env, _ = local_node()
    plugin = root / "opt/amazon/ofi-nccl/lib"
    plugin.mkdir(parents=True)
    stub = root / "test-bin"
    stub.mkdir()
    (stub / "python3").write_text(f'#!/bin/sh\ncase "$*" in "-m health "*) env > "{root}/gate.env" ;; esac\n'
                                  f'exec "{sys.executable}" "$@"\n')
    (stub / "python3").chmod(0o755)
    result = run([entry, "gate"], root, env | {"PATH": f"{stub}:{env['PATH']}"}, timeout=120)
    assert result.returncode == 0, result.stderr
    gate_env = dict(line.split("=", 1) for line in (root / "gate.env").read_text().splitlines() if "=" in line)
    assert gate_env["LD_LIBRARY_PATH"].split(":")[0] == str(plugin)
    nccl_env = [line.split("=", 1) for line in (root / "etc/gpufleet/nccl.env").read_text().splitlines()
                if "=" in line and not line.startswith("#")]
    assert {key for key, _ in nccl_env} >= {"NCCL_NET", "NCCL_SOCKET_IFNAME"}
    for key, value in nccl_env:
        assert gate_env[key] == " ".join(shlex.split(value)), key
