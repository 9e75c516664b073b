"""One shipped stack per cloud booted for real: a head and a worker, each a Debian machine with systemd as PID 1,
real cloud-init reading the exact user-data the plan renders through the cloud's datasource (Ec2 with IMDSv2, AliYun
with hardened-mode tokens, Tencent's config drive), the cloud's metadata service and the object store holding the
code bundle. What the node scripts do with it today is recorded in docs/boot-findings.md.

The mainland stacks (those whose plan names its cloud's in-VPC mirrors) boot as the blocked-internet drill (issue 32):
nothing stands in for the internet's package hosts (Boot(internet=False): no pip.conf or sources.list of the harness's
on the disk, nothing served at the bridge's own address), no route out and every name unresolvable but the cloud's
own endpoints and the mirror hosts its profile names (here.boot.mirrors). Each node installs python3-venv with apt,
its store client and the job's torch with pip through that mirror alone, and the job reaches its first step."""

from __future__ import annotations

import base64
import gzip
import json
import os
import shlex
import time
from urllib.parse import urlsplit

import pytest
from boot_helpers import wait
from node_policies import grants, resources_of

from clouds import profile
from components.realizers.encoding import gzip_base64
from fleet.stacks import resolve, spec_and_plan
from here.boot import fetched, report, store
from here.boot.cluster import Boot
from here.boot.rehearsal import TINY_JOB, with_job
from here.local.cloudconfig import document
from plan import permissions

pytestmark = pytest.mark.usefixtures("needs_root")

STACKS = {"aws": "aws-g4dn-dev", "alicloud": "ali-spot", "tencentcloud": "tencent-spot"}
DATASOURCES = {"aws": "ec2", "alicloud": "aliyun", "tencentcloud": "configdrive"}
# The AWS worker boots as a warm-pool instance (aws-g4dn-dev keeps a standby).
WARMING = {"aws": {"worker-1": "Warmed:Stopped"}}
# The stacks in mainland regions (cn-hangzhou, ap-guangzhou): their plans name the cloud's in-VPC mirrors, so they
# boot as the blocked-internet drill.
MAINLAND = ("alicloud", "tencentcloud")
OUTCOME_TIMEOUT_S = 900
FIRST_STEP_TIMEOUT_S = 600
# The harness's tiny job (a CPU-only host reaches its first step in seconds, where a shipped stack's global batch of
# 512 took more than 600 s on the shared 2-core machine: docs/boot-findings.md), with steps enough to outlast the
# module: the node-life test's worker leaves a running job.
JOB = TINY_JOB | {"steps": 1_000_000, "checkpointEvery": 1000}


@pytest.fixture(scope="module", params=sorted(STACKS))
def booted(request):
    """(cloud, plan, boot, outcomes): the stack's head and one worker, booted until each node's fate is known. The
    AWS worker boots as a warm-pool instance (aws-g4dn-dev keeps a standby), its target state Warmed:Stopped.
    GF_BOOT_KEEP=1 keeps the run's directory (disks, service logs) under GF_BOOT_CACHE/runs."""
    cloud = request.param
    plan = spec_and_plan(with_job(resolve(STACKS[cloud], None), JOB))[1]
    with Boot(plan, lifecycle=WARMING.get(cloud, {}), internet=not plan.network.mirrors.pip,
              keep=bool(os.environ.get("GF_BOOT_KEEP"))) as boot:
        outcomes = {node.name: report.wait_outcome(node, OUTCOME_TIMEOUT_S) for node in boot.nodes}
        yield cloud, plan, boot, outcomes


def test_cloud_init_takes_the_plans_user_data_from_the_clouds_datasource(booted):
    cloud, plan, boot, _ = booted
    for node in boot.nodes:
        status = json.loads(node.machine.run("cloud-init", "status", "--format", "json").stdout)
        # AliYun and Ec2 read metadata in cloud-init's local stage once DHCP answered ("...local").
        assert status["datasource"].removesuffix("local") == DATASOURCES[cloud], status
        rendered = plan.head.user_data if node.role == "head" else plan.worker.user_data
        instance = node.machine.read("/var/lib/cloud/instance/user-data.txt")
        # Byte for byte what the realizer hands the cloud, and what the plan rendered once cloud-init inflates it.
        assert instance == base64.b64decode(gzip_base64(rendered))
        assert gzip.decompress(instance).decode() == rendered
        for f in document(rendered)["write_files"]:  # write_files, as cloud-init itself wrote them
            written = node.machine.path(f["path"])
            assert written.read_bytes() == f["content"].encode(), f["path"]
            if not f["path"].startswith("/opt/gpufleet/bin/"):  # `gpufleet-node install` reinstalls those 0755
                assert oct(written.stat().st_mode & 0o777) == oct(int(f.get("permissions", "0644"), 8)), f["path"]
        runcmd = node.machine.read("/var/lib/cloud/instance/scripts/runcmd").decode()
        assert runcmd.splitlines()[1] == "'/opt/gpufleet/bin/gpufleet-node' 'install'"  # runcmd's first command


def test_each_node_recognised_its_cloud_and_used_its_metadata_tokens(booted):
    cloud, _, boot, _ = booted
    log = (boot.directory / "metadata.log").read_text()
    for node in boot.nodes:
        requests = [line for line in log.splitlines() if line.startswith(node.instance.private_ip + " ")]
        if cloud == "tencentcloud":
            assert node.machine.path("/etc/hostname").read_text().strip() == node.instance.hostname
            continue
        assert any('"PUT /latest/api/token' in r and " 200 " in r for r in requests), requests[:5]
        assert any("/user-data HTTP" in r and " 200 " in r for r in requests)
        assert not [r for r in requests if " 401 " in r or " 403 " in r], "a request without the token"


def test_the_vpc_resolves_the_clouds_own_endpoint_names(booted):
    _, plan, boot, _ = booted
    store_name = store.endpoints(plan)[0]
    for node in boot.nodes:
        assert node.machine.run("getent", "hosts", store_name).stdout.split()[0] == boot.net.gateway
        assert node.machine.run("getent", "hosts", "pypi.org").returncode != 0  # no route out: nothing else resolves
    if plan.cloud == "tencentcloud":
        assert boot.nodes[0].machine.run("getent", "hosts", "metadata.tencentyun.com").stdout.split()[0] == \
            "169.254.0.23"


CREDENTIALS = {"aws": "/meta-data/iam/security-credentials/", "alicloud": "/meta-data/ram/security-credentials/",
               "tencentcloud": "/meta-data/cam/security-credentials/"}


def test_every_node_fetches_the_bundle_through_the_s3_api_with_its_role(booted):
    cloud, plan, boot, _ = booted
    for node in boot.nodes:
        code = node.machine.path(f"/var/lib/gpufleet/code/{plan.storage.code_sha256}")
        assert (code / "training" / "train.py").is_file(), node.name
    log = (boot.directory / "metadata.log").read_text()
    assert CREDENTIALS[cloud] in log
    # The nodes' requests are virtual-hosted (the bucket in the host name, not the path), as OSS's S3 API requires.
    addresses = tuple(f"{node.instance.private_ip} " for node in boot.nodes)
    requests = [line for line in (boot.directory / "store.log").read_text().splitlines() if line.startswith(addresses)]
    assert any(f"GET /{plan.storage.code_key} " in line for line in requests), requests[:5]
    assert not [line for line in requests if f"/{plan.storage.bucket}/" in line], requests[:5]


def test_every_command_a_node_script_calls_is_on_the_image_or_installed_first(booted):
    """The nodes ran the scripts with the image's PATH (a plain image has python3 but no pip, venv or cloud CLI):
    nothing the node's own scripts called was missing."""
    _, _, boot, _ = booted
    for node in boot.nodes:
        logs = node.machine.run("journalctl", "--no-pager", "-o", "cat", timeout=60).stdout
        logs += node.machine.read("/var/log/cloud-init-output.log").decode(errors="replace")
        missing = [line for line in logs.splitlines() if "command not found" in line and "gpufleet" in line]
        assert not missing, f"{node.name}: {missing[:5]}"


@pytest.mark.parametrize("booted", [c for c in sorted(STACKS) if profile(c).api_client], indirect=True)
def test_the_cloud_api_tool_and_its_pinned_sdk_are_on_every_node(booted):
    """Alibaba and Tencent nodes call their cloud's API (cloud_addresses, cloud_mark_unhealthy) through
    gpufleet-cloud-api and the SDK the plan pins, in the tools venv the bundle fetch installed."""
    cloud, _, boot, _ = booted
    pins = profile(cloud).api_client
    for node in boot.nodes:
        assert node.machine.path("/opt/gpufleet/bin/gpufleet-cloud-api").is_file(), node.name
        frozen = node.machine.run("/opt/gpufleet/tools/bin/python3", "-m", "pip", "freeze", timeout=60).stdout
        assert set(pins) <= set(frozen.split()), f"{node.name}: {frozen}"


def test_every_node_reaches_the_training_service(booted):
    cloud, _, boot, outcomes = booted
    expected = {node.name: "warming" if node.name in WARMING.get(cloud, {}) else "training" for node in boot.nodes}
    assert outcomes == expected, f"{cloud}: {outcomes}"


@pytest.mark.parametrize("booted", MAINLAND, indirect=True)
def test_a_mainland_stack_reaches_the_first_step_through_its_clouds_mirrors_alone(booted):
    """The blocked-internet drill: every package came from the cloud's mirror, nothing else stood in for the internet,
    and the job trains."""
    _, plan, boot, _ = booted
    mirrors = plan.network.mirrors
    host = urlsplit(mirrors.pip).hostname
    assert host and urlsplit(mirrors.apt).hostname == host, "the profile names the cloud's mirror for pip and apt"
    assert not boot.internet and list(boot.mirrors) == [boot.directory / "mirrors.log"], \
        "nothing else stands in for the internet"
    first = wait(lambda: [s for n in boot.nodes if (s := report.first_step(n)) is not None], FIRST_STEP_TIMEOUT_S)
    assert first, "no first step"
    for node in boot.nodes:
        assert node.machine.run("getent", "hosts", host).stdout.split()[0] == boot.net.gateway
        for outside in ("pypi.org", "deb.debian.org", "developer.download.nvidia.com"):
            assert node.machine.run("getent", "hosts", outside).returncode != 0, outside
    log = (boot.directory / "mirrors.log").read_text().splitlines()
    served = [m for line in log if (m := fetched.LINE.match(line))]
    sent = boot.fetched_outside()
    pip_path, apt_path = urlsplit(mirrors.pip).path, urlsplit(mirrors.apt).path.rstrip("/")
    for node in boot.nodes:
        paths = [m[2] for m in served if m[1] == node.instance.private_ip]
        assert any(p.startswith(pip_path) and p.endswith(".whl") for p in paths), (node.name, paths[:10])
        assert any(p.startswith(f"{apt_path}/debian/pool/") and p.endswith(".deb") for p in paths), node.name
        assert sent[node.name] > 0, sent
    # The figures docs/boot-findings.md records (pytest -s shows them).
    print(json.dumps({"stack": STACKS[plan.cloud], "first_step_s": round(first[0], 1),
                      "fetched_from_mirrors_bytes": sent}))


@pytest.mark.parametrize("booted", sorted(WARMING), indirect=True)
def test_a_warming_aws_node_waits_for_service_then_starts_its_gate(booted):
    _, _, boot, outcomes = booted
    worker = boot.node("worker-1")
    assert outcomes["worker-1"] == "warming"
    gate = report.collect(worker).unit("gpufleet-gate.service")
    assert gate.get("LoadState") == "loaded", "the worker installed its units while warming"
    assert gate.get("ActiveEnterTimestampMonotonic", "0") == "0" and gate.get("ActiveState") == "inactive"
    assert worker.machine.run("systemctl", "is-active", "gpufleet-train.service").stdout.strip() != "active"
    boot.set_lifecycle("worker-1", "InService")

    def gate_started() -> bool:  # activating (running its checks), active or failed: anything but never started
        return worker.machine.run("systemctl", "show", "gpufleet-gate.service", "-p", "ActiveState",
                                  "--value").stdout.strip() != "inactive"

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not gate_started():
        time.sleep(2)
    assert gate_started(), worker.machine.run("journalctl", "-u", "gpufleet-in-service", "--no-pager").stdout[-2000:]


# Above the store client's 8 MB multipart threshold (docs/cloud-facts.md#node-permissions): it goes up in parts.
CHECKPOINT_BYTES = 12 * 1024 * 1024
LEFT_THE_JOB = "left the job after the interruption notice"


def _write_checkpoint(node, name: str) -> str:
    """A checkpoint-sized file in the node's checkpoint directory, written on the node; its sha256."""
    path = f"{node.settings['GF_CHECKPOINT_DIR']}/node-life/{name}"
    done = node.machine.run("sh", "-c", f"mkdir -p {path.rsplit('/', 1)[0]} && head -c {CHECKPOINT_BYTES} "
                            f"/dev/urandom > {path} && sha256sum {path}")
    assert done.returncode == 0, done.stderr
    return done.stdout.split()[0]


def _journal(node, unit: str) -> str:
    return node.machine.run("journalctl", "-u", unit, "-o", "cat", "--no-pager", timeout=30).stdout


def _leave(cloud, boot) -> None:
    """The worker's way out with a checkpoint: the spot notice on Alibaba and Tencent (spot workers); on AWS, whose
    worker here is on demand, its group's termination hook (the IMDS lifecycle state Terminated), which also has it
    find its group and complete the hook. moto implements no CompleteLifecycleAction: once the call is made, the
    worker is put back in service so that its watcher stops retrying."""
    worker = boot.node("worker-1")
    assert wait(lambda: worker.machine.run("systemctl", "is-active", "gpufleet-spot.service").stdout.strip()
                  == "active", 600), _journal(worker, "gpufleet-gate.service")[-3000:]
    if cloud != "aws":
        boot.spot_notice("worker-1", warning_s=120)
        assert wait(lambda: LEFT_THE_JOB in _journal(worker, "gpufleet-spot.service"), 240), \
            _journal(worker, "gpufleet-spot.service")[-3000:]
        return
    # A warm-pool stack's nodes complete their launching hook too (after the gate): only a completion made after the
    # notice, once the worker's checkpoint is in the bucket, is the drain's.
    def completions() -> int:
        return len([r for r in boot.store_requests() if r["operation"] == "CompleteLifecycleAction"])

    def pushed() -> bool:
        return any(r["operation"] in ("PutObject", "CompleteMultipartUpload") and "worker.pt" in (r.get("path") or "")
                   for r in boot.store_requests())

    before = completions()
    boot.set_lifecycle("worker-1", "Terminated")
    completed = wait(lambda: completions() > before and pushed(), 240)
    boot.set_lifecycle("worker-1", "InService")
    assert completed, _journal(worker, "gpufleet-spot.service")[-3000:]


def test_a_node_life_through_the_store_client_asks_only_for_what_its_role_grants(booted):
    """The whole life of a node's data, through the real store client with the node's role: the bundle fetch (at
    boot), a checkpoint push above the multipart threshold (the sync unit's step), the worker's exit with its
    checkpoint (the spot watcher's push, then the training unit's last push), a pull of both checkpoints, and a
    failure record (gpufleet-report's permanent-failure path). Every request the store (and, on AWS, EC2 and Auto
    Scaling) answered is a call of the permissions table, and the role the stack renders grants its action. Last in
    the module: it takes the worker out of the job and marks the head failed."""
    cloud, plan, boot, _ = booted
    head, worker = boot.node("head"), boot.node("worker-1")
    written = {"head.pt": _write_checkpoint(head, "head.pt"), "worker.pt": _write_checkpoint(worker, "worker.pt")}
    pushed = head.machine.run("/opt/gpufleet/bin/gpufleet-node", "push", timeout=300)
    assert pushed.returncode == 0, pushed.stderr
    _leave(cloud, boot)
    pulled_to = "/var/tmp/node-life-pull"
    pulled = head.machine.run("/opt/gpufleet/bin/gpufleet-store", "pull", head.settings["GF_CHECKPOINT_URI"],
                              pulled_to, timeout=300)
    assert pulled.returncode == 0, pulled.stderr
    sums = head.machine.run("sh", "-c", f"cd {pulled_to}/node-life && sha256sum *").stdout
    assert dict(reversed(line.split()) for line in sums.splitlines()) == written, "the checkpoints came back changed"
    kind = shlex.split(head.settings["GF_PERMANENT_FAILURES"][1:-1])[0]  # a reason whose failures are recorded
    head.machine.run("/opt/gpufleet/bin/gpufleet-report", f"{kind}:node-life", timeout=300)
    # The head's scrape-target refresh (a timer, first a minute after boot) lists the cluster's nodes: run it now,
    # so that its call is in the log however soon this test comes.
    head.machine.run("/opt/gpufleet/bin/gpufleet-discover", timeout=120)
    record = f"/failures/{kind}_node-life/"
    assert [r for r in boot.store_requests() if r["operation"] == "PutObject" and record in r["path"]], \
        _journal(head, "gpufleet-*")[-3000:]
    # Every node wrote its mark where `fleet heal` and `fleet roll` read it (plan/heal.py node_marks): the head, which
    # no group holds, and the worker, which `fleet roll` waits for when a group launched it in place of a rolled node.
    for node in (head, worker):
        mark = f"/nodes/{node.instance.instance_id}"
        assert [r for r in boot.store_requests() if r["operation"] == "PutObject" and r["path"].endswith(mark)], \
            _journal(node, "gpufleet-*")[-3000:]

    addresses = {node.instance.private_ip for node in boot.nodes}
    requests = [r for r in boot.store_requests() if r["client"] in addresses]
    made = {(r["api"], r["operation"]) for r in requests}
    assert {("s3", "CreateMultipartUpload"), ("s3", "UploadPart"), ("s3", "CompleteMultipartUpload"),
            ("s3", "GetObject"), ("s3", "ListObjectsV2")} <= made, sorted(made)
    if cloud == "aws":
        assert {("ec2", "DescribeInstances"), ("ec2", "CreateTags"),
                ("autoscaling", "DescribeAutoScalingInstances")} <= made, sorted(made)
        # The head is in no group: its failure is its tag, never SetInstanceHealth (docs/cloud-facts.md#rollout).
        assert not [r for r in requests if r["client"] == head.instance.private_ip
                    and r["operation"] == "SetInstanceHealth"], sorted(made)
    needs = {call: permissions.action(profile(cloud).node_calls, *call) for call in made}
    unknown = sorted(f"{api} {operation}" for (api, operation), action in needs.items() if action is None)
    assert not unknown, f"calls the {cloud} profile's node_calls do not hold: {unknown}"
    granted = grants(resources_of(STACKS[cloud]))
    missing = sorted(f"{api} {operation} needs {action}" for (api, operation), action in needs.items()
                     if action not in granted)
    assert not missing, f"the {STACKS[cloud]} node role lacks: {missing}"
