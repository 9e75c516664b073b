"""The node scripts run for real in local mode: health gate, fabric settings, training launch, checkpoint store and the
spot watcher against a fake metadata server, each under its own node root."""

from __future__ import annotations

import hashlib
import http.server
import io
import subprocess
import tarfile
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from bootstrap_cases import CASES
from bootstrap_helpers import run

LOCAL = CASES["local-head"]

FAKE_TORCHRUN = """#!/usr/bin/env bash
# Stands in for torchrun: records how it was called, then runs one worker that checkpoints on SIGUSR1.
set -euo pipefail
printf '%s\\n' "$@" > "$GPUFLEET_TEST/args"
printf '%s\\n' "$PWD" "${NCCL_SOCKET_IFNAME:-}" > "$GPUFLEET_TEST/env"
[ "${GPUFLEET_TEST_WORKER:-0}" = 1 ] || exit 0
python3 "$GPUFLEET_TEST/worker.py" &
wait $!
"""

WORKER = """import os, pathlib, signal, sys, time
test = pathlib.Path(os.environ["GPUFLEET_TEST"])
ckpt = pathlib.Path((test / "args").read_text().split("--checkpoint-dir\\n")[1].splitlines()[0])
def on_usr1(*_):
    (ckpt / "step-7").mkdir(parents=True)
    (ckpt / "step-7" / "model.pt").write_text("weights")
    sys.exit(0)
signal.signal(signal.SIGUSR1, on_usr1)
(test / "worker-ready").touch()
time.sleep(60)
sys.exit(3)
"""


def bundle(tmp: Path) -> tuple[str, str]:
    """A code bundle like the planner's (tar.gz of training/); returns (file URI, sha256)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = b"print('train')\n"
        info = tarfile.TarInfo("training/train.py")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    sha = hashlib.sha256(buf.getvalue()).hexdigest()
    path = tmp / "bucket" / "code" / f"{sha}.tar.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(buf.getvalue())
    return f"file://{path}", sha


@pytest.fixture
def local_node(tmp_path, node_root):
    """install(**changes) -> (root, entry, env): a local node, a real bundle, a file:// bucket, a fake torchrun."""
    test = tmp_path / "test"
    fake_bin = test / "bin"
    fake_bin.mkdir(parents=True)
    (fake_bin / "torchrun").write_text(FAKE_TORCHRUN)
    (fake_bin / "torchrun").chmod(0o755)
    (test / "worker.py").write_text(WORKER)
    code_uri, sha = bundle(tmp_path)

    def install(**changes):
        base = {
            "head_address": "127.0.0.1",
            "checkpoint_dir": "/ckpt",
            "code_uri": code_uri,
            "code_sha256": sha,
            "checkpoint_uri": f"file://{tmp_path}/bucket/ckpt",
            "spot": False,
        }
        node = replace(LOCAL, **(base | changes))
        root, entry = node_root(node)
        env = {
            "GPUFLEET_TEST": str(test),
            "PATH": f"{fake_bin}:" + run(["printenv", "PATH"], root).stdout.strip(),
        }
        return root, entry, env

    return install


def test_gate_fails_with_the_reason_when_fabric_devices_are_missing(local_node):
    root, entry, env = local_node(fabric="rdma", fabric_devices=2)
    result = run([entry, "start"], root, env | {"GPUFLEET_PROBE_FABRIC": "1"})
    assert result.returncode == 1
    assert "fabric:rdma:1/2" in result.stderr
    metric = (root / "var/lib/gpufleet/metrics/health.prom").read_text()
    assert metric == 'gpufleet_node_healthy{reason="fabric:rdma:1/2"} 0\n'
    assert not (root / "run/gpufleet/train.pid").exists(), "training must not start on an unhealthy node"


def test_gate_fails_when_a_promised_gpu_is_missing(local_node):
    root, entry, env = local_node(gpus=8)
    result = run([entry, "gate"], root, env | {"GPUFLEET_PROBE_GPUS": "7"})
    assert result.returncode == 1
    assert "gpus:7/8" in (root / "var/lib/gpufleet/metrics/health.prom").read_text()


def test_gate_passes_when_probes_match(local_node):
    root, entry, env = local_node(fabric="rdma", fabric_devices=2, port_range=None)
    result = run([entry, "gate"], root, env | {"GPUFLEET_PROBE_FABRIC": "2", "GPUFLEET_PROBE_BAD_GPUS": "0"})
    assert result.returncode == 0, result.stderr
    assert (root / "var/lib/gpufleet/versions.json").read_text() == '{"local": true}\n'
    assert not (root / "var/lib/gpufleet/metrics/health.prom").exists()


def test_fabric_pins_the_port_range_inside_the_namespace(local_node):
    root, entry, env = local_node(port_range=(50000, 51000))
    fabric = entry.parent / "gpufleet-fabric"
    probe = subprocess.run(["unshare", "-n", "true"], check=False, capture_output=True)
    if probe.returncode != 0:
        pytest.skip("needs root for a private network namespace (unshare -n)")
    result = run(["unshare", "-n", "bash", "-c", f"{fabric} && sysctl -n net.ipv4.ip_local_port_range"], root, env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["50000", "51000"]
    conf = (root / "etc/sysctl.d/60-gpufleet-ports.conf").read_text()
    assert "net.ipv4.ip_local_port_range = 50000 51000" in conf


def test_train_verifies_the_bundle_pulls_the_checkpoint_and_starts_torchrun(local_node, tmp_path):
    root, entry, env = local_node()
    (tmp_path / "bucket/ckpt/step-3").mkdir(parents=True)
    (tmp_path / "bucket/ckpt/step-3/model.pt").write_text("old")
    result = run([entry.parent / "gpufleet-train"], root, env)
    assert result.returncode == 0, result.stderr
    args = (tmp_path / "test/args").read_text().splitlines()
    assert args == [
        "--nnodes=2:2",
        "--nproc-per-node=1",
        "--rdzv-backend=c10d",
        "--rdzv-endpoint=127.0.0.1:29400",
        "--rdzv-id=local",
        "--rdzv-conf=is_host=1",
        "--max-restarts=100",
        "--local-addr=127.0.0.1",
        "-m",
        "training.train",
        "--checkpoint-dir",
        f"{root}/ckpt",
        "--steps",
        "20",
    ]
    cwd, ifname = (tmp_path / "test/env").read_text().splitlines()
    assert (Path(cwd) / "training/train.py").exists()
    assert ifname == "eth0", "NCCL env comes from the one env file"
    assert (root / "ckpt/step-3/model.pt").read_text() == "old"


def test_train_refuses_a_bundle_with_the_wrong_hash(local_node, tmp_path):
    root, entry, env = local_node()
    (root / "etc/gpufleet/node.env").write_text(
        (root / "etc/gpufleet/node.env").read_text().replace("GF_CODE_SHA256='", "GF_CODE_SHA256='00")
    )
    result = run([entry.parent / "gpufleet-train"], root, env)
    assert result.returncode == 1
    assert "does not match its sha256" in result.stderr
    assert not (tmp_path / "test/args").exists()


class FakeMetadata(http.server.BaseHTTPRequestHandler):
    """A spot notice endpoint: 404 until the worker is up; AWS-style IMDSv2 token when the server has one."""

    ready: Path
    token: str | None = None
    empty_means_none = False

    def do_PUT(self):
        self.send_response(200 if self.token else 404)
        self.end_headers()
        self.wfile.write((self.token or "").encode())

    def do_GET(self):
        if self.token and self.headers.get("X-aws-ec2-metadata-token") != self.token:
            self.send_response(401)
            self.end_headers()
            return
        body = b'{"action": "terminate", "time": "2026-07-20T12:00:00Z"}' if self.ready.exists() else b""
        status = 200 if body or self.empty_means_none else 404
        self.send_response(status)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("style", ["aws", "alicloud"])
def test_spot_notice_checkpoints_syncs_and_leaves(local_node, tmp_path, style):
    handler = type(
        "Handler",
        (FakeMetadata,),
        {
            "ready": tmp_path / "test/worker-ready",
            "token": "tok-123" if style == "aws" else None,
            "empty_means_none": style == "alicloud",
        },
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    try:
        root, entry, env = local_node(
            spot=True,
            spot_notice_url=f"{url}/latest/meta-data/spot/instance-action",
            imds_token_url=f"{url}/latest/api/token" if style == "aws" else "",
        )
        node_env = root / "etc/gpufleet/node.env"
        node_env.write_text(node_env.read_text().replace("GF_SPOT_POLL_S='5'", "GF_SPOT_POLL_S='0.2'"))
        result = run([entry, "start"], root, env | {"GPUFLEET_TEST_WORKER": "1"}, timeout=60)
    finally:
        server.shutdown()
    assert result.returncode == 0, result.stderr
    assert "SIGUSR1 to training workers" in result.stderr
    assert (tmp_path / "bucket/ckpt/step-7/model.pt").read_text() == "weights"
    assert "terminate" in (root / "run/gpufleet/spot-notice").read_text()


def test_store_pushes_and_pulls_file_uris(local_node, tmp_path):
    root, entry, env = local_node()
    store = entry.parent / "gpufleet-store"
    (tmp_path / "ckpt/a").mkdir(parents=True)
    (tmp_path / "ckpt/a/w.pt").write_text("x")
    assert run([store, "push", tmp_path / "ckpt", f"file://{tmp_path}/remote"], root, env).returncode == 0
    assert run([store, "pull", f"file://{tmp_path}/remote", tmp_path / "back"], root, env).returncode == 0
    assert (tmp_path / "back/a/w.pt").read_text() == "x"
    missing = run([store, "pull", f"file://{tmp_path}/nothing-yet", tmp_path / "empty"], root, env)
    assert missing.returncode == 0 and (tmp_path / "empty").is_dir()
    bad = run([store, "get", "ftp://host/x", tmp_path / "x"], root, env)
    assert bad.returncode == 1 and "unsupported URI" in bad.stderr
