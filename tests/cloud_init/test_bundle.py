"""The code bundle carries what user-data no longer does (node scripts, units, monitoring config), deterministically."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile

import pytest
import yaml

from fleet.stacks import spec_and_plan
from plan.bundle import build, bundle_bytes, bundle_sha256, source_files, write_bundle
from plan.paths import PROJECT_ROOT
from spec.stackfile import load_stack_file


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


def test_the_kernels_travel_only_with_a_job_that_uses_them(tmp_path, write_stack, aws_cluster):
    with_kernels, without = source_files(), source_files(kernels=False)
    assert "training/kernels/__init__.py" in with_kernels and not [n for n in without if n.startswith("training/k")]
    assert set(with_kernels) - set(without) == {n for n in with_kernels if n.startswith("training/kernels/")}
    plans = {}
    for setting in ("auto", "off"):
        aws_cluster["job"] = {"kernels": setting}
        plans[setting] = spec_and_plan(load_stack_file(write_stack(aws_cluster, name=setting)))[1]
    assert plans["auto"].storage.code_sha256 == bundle_sha256()
    assert plans["off"].storage.code_sha256 == bundle_sha256(kernels=False) != bundle_sha256()
    written = write_bundle(tmp_path, plans["off"].storage.code_sha256)
    assert written.read_bytes() == bundle_bytes(kernels=False)
    # Into a folder not made yet (the local bucket's first upload), with the kernels where the plan names them.
    written = write_bundle(tmp_path / "bucket" / "code", plans["auto"].storage.code_sha256)
    assert written.read_bytes() == bundle_bytes() and written.name == f"{bundle_sha256()}.tar.gz"
    with pytest.raises(ValueError, match="no bundle of this checkout"):
        write_bundle(tmp_path, "0" * 64)


def test_a_job_runs_from_a_bundle_without_the_kernels(tmp_path):
    (tmp_path / "code").mkdir()
    # Unpacked as the node does (cloud-init/bin/gpufleet-node).
    subprocess.run(["tar", "-xzf", "-", "-C", str(tmp_path / "code")], input=bundle_bytes(kernels=False), check=True)
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    command = [sys.executable, "-m", "training.train", "--model", "tiny", "--seq-len", "16", "--device", "cpu",
               "--steps", "1", "--kernels", "off", "--run-dir", str(tmp_path / "run"), "--progress", "false"]
    result = subprocess.run(command, cwd=tmp_path / "code", env=environ, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1])["kernels"] == []
