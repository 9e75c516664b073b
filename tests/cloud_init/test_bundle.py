"""The code bundle carries what user-data no longer does (node scripts, units, monitoring config), deterministically."""

from __future__ import annotations

import io
import json
import tarfile

import yaml

from components.bundle import build, bundle_bytes, source_files
from components.paths import PROJECT_ROOT


def test_bundle_carries_the_node_files():
    names = set(source_files())
    node = {f"cloud-init/bin/{p.name}" for p in (PROJECT_ROOT / "cloud-init/bin").iterdir()}
    units = {f"cloud-init/systemd/{p.name}" for p in (PROJECT_ROOT / "cloud-init/systemd").iterdir()}
    monitoring = {"monitoring/prometheus.yml", "monitoring/gpufleet-dashboard.json", "monitoring/dcgm-counters.csv"}
    assert node | units | monitoring | {"cloud-init/health_allreduce.py", "training/train.py"} <= names
    assert not [n for n in names if "__pycache__" in n or n.startswith("monitoring/baselines/")]


def test_bundle_is_deterministic_and_ignores_modes_and_order():
    files = source_files()
    assert build(files) == build(dict(reversed(files.items()))) == bundle_bytes()
    with tarfile.open(fileobj=io.BytesIO(bundle_bytes())) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == sorted(files)
    assert {(m.mode, m.mtime, m.uid, m.uname) for m in members} == {(0o644, 0, 0, "")}


def test_monitoring_config_is_ready_to_mount():
    files = source_files()
    prometheus = yaml.safe_load(files["monitoring/prometheus.yml"])
    assert prometheus["global"]["external_labels"]["cluster"] == "${GF_CLUSTER}", "Prometheus 3 expands it"
    assert {job["job_name"] for job in prometheus["scrape_configs"]} == {"node", "dcgm"}
    dashboard = json.loads(files["monitoring/gpufleet-dashboard.json"])
    assert "DCGM_FI_PROF_NVLINK_TX_BYTES" in json.dumps(dashboard)
