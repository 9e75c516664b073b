"""The node scripts run for real in local mode: bundle install, health gate, fabric settings, training launch,
checkpoint store and the spot watcher against fake metadata servers, each node booted from user-data the planner
rendered for a local stack, under its own node root."""

from __future__ import annotations

import copy
import http.server
import json
import os
import subprocess
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from bootstrap_helpers import run
from node_cases import boot, plan_of

from clouds import CLOUDS
from fleet.stacks import spec_and_plan
from plan.bundle import bundle_sha256, write_bundle
from plan.paths import PROJECT_ROOT
from spec.stackfile import load_stack_file

LOCAL_STACK = yaml.safe_load((PROJECT_ROOT / "stacks/Pulumi.local.yaml").read_text())["config"]["gpufleet:cluster"]

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


@pytest.fixture
def local_node(tmp_path, write_stack):
    """install(installed=True, role="head", metadata=..., stack=..., **settings) -> (root, entry, env, plan): a node
    booted from the planner's user-data for the shipped local stack (changed by `stack`), its bucket URIs moved
    under tmp_path and `settings` overridden in its node.env; unless installed=False, `gpufleet-node install`ed from
    the real code bundle; a fake torchrun first on PATH."""
    test = tmp_path / "test"
    fake_bin = test / "bin"
    fake_bin.mkdir(parents=True)
    (fake_bin / "torchrun").write_text(FAKE_TORCHRUN)
    (fake_bin / "torchrun").chmod(0o755)
    (test / "worker.py").write_text(WORKER)
    code_uri = f"file://{write_bundle(tmp_path / 'bucket/code', bundle_sha256())}"

    def install(installed=True, role="head", metadata="127.0.0.1:9", stack=None, **settings):
        cluster = copy.deepcopy(LOCAL_STACK) | (stack or {})
        plan = spec_and_plan(load_stack_file(write_stack(cluster, region=None)))[1]
        base = {"head_address": "127.0.0.1", "checkpoint_dir": "/ckpt", "code_uri": code_uri,
                "checkpoint_uri": f"file://{tmp_path}/bucket/ckpt"}
        root = tmp_path / "node"
        entry = boot(getattr(plan, role).user_data, root, metadata, **(base | settings))
        env = {"GPUFLEET_TEST": str(test), "PATH": f"{fake_bin}:" + run(["printenv", "PATH"], root).stdout.strip()}
        if installed:
            result = run([entry, "install"], root, env)
            assert result.returncode == 0, result.stderr
        return root, entry, env, plan

    return install


def test_gate_fails_with_the_reason_when_fabric_devices_are_missing(local_node):
    root, entry, env, _ = local_node(fabric="rdma", fabric_devices=2)
    result = run([entry, "start"], root, env | {"GPUFLEET_PROBE_FABRIC": "1"})
    assert result.returncode == 1
    assert "fabric:rdma:1/2" in result.stderr
    metric = (root / "var/lib/gpufleet/metrics/health.prom").read_text()
    assert metric == 'gpufleet_node_healthy{reason="fabric:rdma:1/2"} 0\n'
    assert not (root / "run/gpufleet/train.pid").exists(), "training must not start on an unhealthy node"


def test_gate_fails_when_a_promised_gpu_is_missing(local_node):
    root, entry, env, _ = local_node(gpus=8)
    result = run([entry, "gate"], root, env | {"GPUFLEET_PROBE_GPUS": "7"})
    assert result.returncode == 1
    assert "gpus:7/8" in (root / "var/lib/gpufleet/metrics/health.prom").read_text()


def test_gate_passes_when_probes_match(local_node):
    root, entry, env, _ = local_node(fabric="rdma", fabric_devices=2)
    result = run([entry, "gate"], root, env | {"GPUFLEET_PROBE_FABRIC": "2", "GPUFLEET_PROBE_BAD_GPUS": "0"})
    assert result.returncode == 0, result.stderr
    assert (root / "var/lib/gpufleet/versions.json").read_text() == '{"gpus": 0}\n'
    assert not (root / "var/lib/gpufleet/metrics/health.prom").exists()


def test_fabric_pins_the_port_range_inside_the_namespace(local_node):
    root, entry, env, _ = local_node(stack={"network": {**LOCAL_STACK["network"], "ncclPortRange": "50000-51000"}})
    fabric = entry.parent / "gpufleet-fabric"
    probe = subprocess.run(["unshare", "-n", "true"], check=False, capture_output=True)
    if probe.returncode != 0:
        pytest.skip("needs root for a private network namespace (unshare -n)")
    result = run(["unshare", "-n", "bash", "-c", f"{fabric} && sysctl -n net.ipv4.ip_local_port_range"], root, env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["50000", "51000"]
    conf = (root / "etc/sysctl.d/60-gpufleet-ports.conf").read_text()
    assert "net.ipv4.ip_local_port_range = 50000 51000" in conf


@pytest.mark.parametrize("role", ["head", "worker"])
def test_train_pulls_the_checkpoint_and_runs_the_plans_command(local_node, tmp_path, role):
    root, entry, env, plan = local_node(role=role)
    (tmp_path / "bucket/ckpt/step-3").mkdir(parents=True)
    (tmp_path / "bucket/ckpt/step-3/model.pt").write_text("old")
    (tmp_path / "bucket/ckpt/runs/another-node").mkdir(parents=True)
    (tmp_path / "bucket/ckpt/runs/another-node/metrics.jsonl").write_text("{}\n")
    result = run([entry.parent / "gpufleet-train"], root, env)
    assert result.returncode == 0, result.stderr
    args = (tmp_path / "test/args").read_text().splitlines()
    node_id = (root / "var/lib/gpufleet/node-id").read_text().strip()
    slots = {"{head_address}": "127.0.0.1", "{local_addr}": "127.0.0.1", "{node_id}": node_id,
             "{checkpoint_dir}": f"{root}/ckpt", "{keep_dir}": f"{root}/run/gpufleet/keep"}

    def filled(arg: str) -> str:
        for slot, value in slots.items():
            arg = arg.replace(slot, value)
        return arg

    command = getattr(plan, role).command
    assert command[0] == "torchrun"
    assert args == [filled(arg) for arg in command[1:]]
    assert args[:10] == ["--nnodes=2:2", f"--nproc-per-node={plan.ranks_per_node}", "--rdzv-backend=c10d",
                         "--rdzv-endpoint=127.0.0.1:29400", f"--rdzv-id={plan.name}",
                         f"--rdzv-conf=is_host={int(role == 'head')},last_call_timeout=5,keep_alive_interval=1,"
                         "keep_alive_max_attempt=3", "--max-restarts=100",
                         "--local-addr=127.0.0.1", "-m", "health.run_job"]
    assert args[-6:] == ["--checkpoint-dir", f"{root}/ckpt", "--run-dir", f"{root}/ckpt/runs/{node_id}",
                         "--keep-dir", f"{root}/run/gpufleet/keep"], (
        "the node's own directories come last, so no job setting overrides them")
    assert "--steps=40" in args and "--model=tiny" in args, "the stack's job settings"
    cwd, ifname = (tmp_path / "test/env").read_text().splitlines()
    assert (Path(cwd) / "training/train.py").exists()
    assert ifname == "eth0", "NCCL env comes from the one env file"
    assert (root / "ckpt/step-3/model.pt").read_text() == "old"
    assert not (root / "ckpt/runs/another-node").exists(), "a node pushes only its own metrics"


def _unit_settings(name: str) -> dict[str, str]:
    """KEY=value lines of a shipped systemd unit (a repeated key keeps its last value)."""
    lines = (PROJECT_ROOT / "cloud-init/systemd" / name).read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


@pytest.mark.parametrize("named_by", ["acceptance-reason", "health-reason"])
def test_a_named_node_reports_itself_and_exits_with_the_status_its_unit_does_not_restart(local_node, tmp_path,
                                                                                        named_by):
    root, entry, env, _ = local_node()
    (root / "run/gpufleet" / named_by).write_text("acceptance-node:node2=1.2:min=4.5\n")
    result = run([entry.parent / "gpufleet-train"], root, env)
    unit = _unit_settings("gpufleet-train.service")
    assert unit["Restart"] == "on-failure" and result.returncode != 0
    assert str(result.returncode) in unit.get("RestartPreventExitStatus", "").split(), (
        f"exit {result.returncode} would restart the unit every {unit['RestartSec']} s")
    assert (root / "var/lib/gpufleet/metrics/health.prom").read_text() == \
        'gpufleet_node_healthy{reason="acceptance-node:node2=1.2:min=4.5"} 0\n'
    assert not (tmp_path / "test/args").exists(), "torchrun must not start on a named node"


def test_install_puts_the_bundled_scripts_beside_the_user_data_ones(local_node):
    root, entry, env, _ = local_node(installed=False)
    bin_dir = root / "opt/gpufleet/bin"
    assert not (bin_dir / "gpufleet-train").exists(), "user-data carries only what fetches the bundle"
    assert run([entry, "install"], root, env).returncode == 0
    assert os.access(bin_dir / "gpufleet-train", os.X_OK) and (bin_dir / "health_allreduce.py").is_file()
    assert (root / f"var/lib/gpufleet/code/{bundle_sha256()}/training/train.py").is_file()
    assert not (root / "etc/systemd").exists(), "local nodes run no units"


def test_install_refuses_a_bundle_with_the_wrong_hash(local_node):
    root, entry, env, _ = local_node(installed=False, code_sha256="00" + bundle_sha256()[2:])
    result = run([entry, "start"], root, env)
    assert result.returncode == 1
    assert "does not match its sha256" in result.stderr
    assert 'reason="bundle:sha256"' in (root / "var/lib/gpufleet/metrics/health.prom").read_text()
    assert not (root / "opt/gpufleet/bin/gpufleet-train").exists()


def test_fabric_sets_the_mtu_and_persists_it_for_netplan(local_node):
    root, entry, env, _ = local_node(mtu=9000)
    (root / "etc/netplan").mkdir(parents=True)
    if subprocess.run(["unshare", "-n", "true"], check=False, capture_output=True).returncode != 0:
        pytest.skip("needs root for a private network namespace (unshare -n)")
    setup = (
        "ip link add ens5 type veth peer name peer0 && ip addr add 10.9.0.2/24 dev ens5 && ip link set ens5 up"
        " && ip route add default via 10.9.0.1"
    )
    script = f"{setup} && {entry.parent / 'gpufleet-fabric'} && ip -o link show ens5"
    result = run(["unshare", "-n", "bash", "-c", script], root, env | {"GPUFLEET_PROBE_FABRIC": "0"})
    assert result.returncode == 0, result.stderr
    assert " mtu 9000 " in result.stdout
    dropin = root / "etc/netplan/90-gpufleet-mtu.yaml"
    assert yaml.safe_load(dropin.read_text()) == {"network": {"version": 2, "ethernets": {"ens5": {"mtu": 9000}}}}
    assert dropin.stat().st_mode & 0o777 == 0o600, "netplan warns about config others can read"


# How each cloud's metadata service answers (docs/cloud-facts.md#aws-imds, #alibaba-metadata): the status a
# token-less GET gets where a token is required, and whether "no spot notice" reads as an empty 200 or a 404. Paths
# and header names are the profiles'.
METADATA_STYLES = {
    "aws": {"reject": 401, "empty_means_none": False},
    "alicloud": {"reject": 403, "empty_means_none": True},
    "tencentcloud": {"reject": 0, "empty_means_none": False},
}
TOKEN = "tok-123"
INSTANCE_ID = "i-0node"
# Each cloud's role credentials as its metadata serves them
# (docs/cloud-facts.md#alibaba-ram-role-credentials, #tencent-cos).
ROLE_CREDENTIALS = {
    "ram": {"AccessKeyId": "STS.id", "AccessKeySecret": "sts-secret", "SecurityToken": "sts-token"},
    "cam": {"TmpSecretId": "STS.id", "TmpSecretKey": "sts-secret", "Token": "sts-token", "ExpiredTime": 1},
}


class FakeMetadata(http.server.BaseHTTPRequestHandler):
    """Instance metadata: the instance id, the spot notice (none until the worker is up), the role's credentials;
    where the cloud has a token header, a PUT with its TTL header gives the token and GETs without it are rejected."""

    ready: Path
    header = ""
    reject = 0
    empty_means_none = False

    def _answer(self, status: int, body: bytes = b"") -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self):
        if not self.header:
            return self._answer(404)
        if not self.headers.get(f"{self.header}-ttl-seconds", "").isdigit():
            return self._answer(400)
        self._answer(200, TOKEN.encode())

    def do_GET(self):
        if self.header and self.headers.get(self.header) != TOKEN:
            return self._answer(self.reject)
        if self.path.endswith("/instance-id"):
            return self._answer(200, INSTANCE_ID.encode())
        for kind, credentials in ROLE_CREDENTIALS.items():
            if self.path.endswith(f"/{kind}/security-credentials/"):
                return self._answer(200, b"gpufleet-node")
            if self.path.endswith(f"/{kind}/security-credentials/gpufleet-node"):
                return self._answer(200, json.dumps(credentials).encode())
        body = b'{"action": "terminate", "time": "2026-07-20T12:00:00Z"}' if self.ready.exists() else b""
        self._answer(200 if body or self.empty_means_none else 404, body)

    def log_message(self, *args):
        pass


@pytest.fixture
def metadata(tmp_path):
    """serve(cloud) -> node settings: a fake metadata server answering as that cloud's does, and its profile's
    metadata, spot notice and token URLs pointed at it."""
    servers = []

    def serve(cloud):
        profile = CLOUDS[cloud]
        handler = type("Handler", (FakeMetadata,), {"ready": tmp_path / "test/worker-ready",
                                                    "header": profile.imds_token_header, **METADATA_STYLES[cloud]})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)

        def here(url: str) -> str:
            return f"http://127.0.0.1:{server.server_port}{urlsplit(url).path}" if url else ""

        return {"metadata_url": here(profile.metadata_url), "spot_notice_url": here(profile.spot_notice_url),
                "imds_token_url": here(profile.imds_token_url), "imds_token_header": profile.imds_token_header}

    yield serve
    for server in servers:
        server.shutdown()


SPOT_WORKER = {"nodes": 2, "market": {"spotPercent": 100}}


@pytest.mark.parametrize("cloud", METADATA_STYLES)
def test_spot_notice_checkpoints_syncs_and_leaves(local_node, metadata, tmp_path, cloud):
    root, entry, env, plan = local_node(role="worker", stack=SPOT_WORKER, spot_poll_s=0.2, **metadata(cloud))
    assert plan.worker.spot and "GF_SPOT=1" in plan.worker.user_data
    result = run([entry, "start"], root, env | {"GPUFLEET_TEST_WORKER": "1"}, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "SIGUSR1 to training workers" in result.stderr
    assert (tmp_path / "bucket/ckpt/step-7/model.pt").read_text() == "weights"
    assert "terminate" in (root / "run/gpufleet/spot-notice").read_text()


FAKE_AWS = """#!/usr/bin/env bash
# Stands in for the AWS CLI: keeps its arguments, the credentials and config it was given, then writes a cp's target.
set -euo pipefail
printf '%s\\n' "$@" > "$GPUFLEET_TEST/aws-args"
env | grep '^AWS_' | sort > "$GPUFLEET_TEST/aws-env"
cp "$AWS_CONFIG_FILE" "$GPUFLEET_TEST/aws-config"
printf 'bundle' > "$5"
"""
STORES = {"alicloud": ("ali-spot", "oss", "https://s3.oss-cn-hangzhou-internal.aliyuncs.com"),
          "tencentcloud": ("tencent-spot", "cos", "https://cos.ap-guangzhou.myqcloud.com")}


@pytest.mark.parametrize("cloud", sorted(STORES))
def test_store_goes_through_the_s3_api_with_the_roles_metadata_credentials(local_node, metadata, tmp_path, cloud):
    """A worker's own user-data (its cloud adapter), booted under a node root: the bundle fetch from OSS or COS is an
    S3 copy at the cloud's S3 endpoint, virtual-hosted, with the role's temporary credentials from metadata (Alibaba's
    in token mode). (local_node sets up the fake tools' folder.)"""
    stack, scheme, endpoint = STORES[cloud]
    plan = plan_of(stack)
    root = tmp_path / cloud
    entry = boot(plan.worker.user_data, root, **metadata(cloud))
    env = {"GPUFLEET_TEST": str(tmp_path / "test"),
           "PATH": f"{tmp_path}/test/bin:" + run(["printenv", "PATH"], root).stdout.strip()}
    aws = tmp_path / "test/bin/aws"
    aws.write_text(FAKE_AWS)
    aws.chmod(0o755)
    target = tmp_path / "bundle.tar.gz"
    result = run([entry.parent / "gpufleet-store", "get", f"{scheme}://b/code/x.tar.gz", target], root, env)
    assert result.returncode == 0, result.stderr
    assert target.read_text() == "bundle"
    args = (tmp_path / "test/aws-args").read_text().splitlines()
    assert args == ["s3", "cp", "--only-show-errors", "s3://b/code/x.tar.gz", str(target), "--endpoint-url", endpoint]
    given = dict(line.split("=", 1) for line in (tmp_path / "test/aws-env").read_text().splitlines())
    assert {k: given[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")} == {
        "AWS_ACCESS_KEY_ID": "STS.id", "AWS_SECRET_ACCESS_KEY": "sts-secret", "AWS_SESSION_TOKEN": "sts-token"}
    assert given["AWS_DEFAULT_REGION"] == plan.region
    assert given["AWS_REQUEST_CHECKSUM_CALCULATION"] == "when_required"
    assert "addressing_style = virtual" in (tmp_path / "test/aws-config").read_text()


def test_a_node_without_an_adapter_for_its_cloud_stops(local_node):
    root, entry, env, _ = local_node(installed=False)
    (root / "opt/gpufleet/bin/gpufleet-cloud.sh").unlink()
    result = run([entry, "install"], root, env)
    assert result.returncode == 1 and "no node-script adapter for cloud 'local'" in result.stderr
    root, entry, env, _ = local_node(installed=False, cloud="elsewhere")
    result = run([entry, "install"], root, env)
    assert result.returncode == 1 and "the bundle has no node-script adapter for cloud 'elsewhere'" in result.stderr


def test_store_pushes_and_pulls_file_uris(local_node, tmp_path):
    root, entry, env, _ = local_node()
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


def test_nodes_pushing_the_same_checkpoint_at_once_all_succeed(local_node, tmp_path):
    # Every node keeps a copy of each checkpoint and pushes it when the job ends: in local mode the pushes race
    # into one file:// bucket, as they do into one S3 prefix, and none may fail.
    root, entry, env, _ = local_node()
    store = entry.parent / "gpufleet-store"
    source = tmp_path / "ckpt"
    for step in range(20):
        (source / f"step_{step:08d}").mkdir(parents=True)
        (source / f"step_{step:08d}/state.pt").write_bytes(bytes([step]) * 4096)
        (source / f"step_{step:08d}/manifest.json").write_text(str(step))

    def files(top: Path) -> dict[str, bytes]:
        return {str(p.relative_to(top)): p.read_bytes() for p in top.rglob("*") if p.is_file()}

    full_env = {"GPUFLEET_ROOT": str(root), **env}
    for attempt in range(5):
        bucket = tmp_path / f"bucket-{attempt}"
        command = [str(store), "push", str(source), f"file://{bucket}"]
        pushes = [subprocess.Popen(command, env=full_env, stderr=subprocess.PIPE) for _ in range(4)]
        errors = [p.communicate(timeout=120)[1].decode() for p in pushes]
        assert [p.returncode for p in pushes] == [0] * 4, errors
        assert files(bucket) == files(source)
