"""The network NCCL must use, fed from the plan: every shipped stack's node.json and nccl.env (its nodes' own
files, the env sourced by bash as gpufleet-lib.sh load_nccl_env sources it), and the NCCL log a node of that fabric
prints under that env (nccl_emulation: NCCL's and aws-ofi-nccl's rules from their sources). The node gate
(health.nccl) and the NCCL probe (health.ncclprobe) must pass every stack on its own network and fail a node that fell
back to sockets; an EFA type the stack runs over TCP is held to sockets."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from nccl_emulation import EFA, NODE_OF_FABRIC, PLAIN, InitFailed, Node, nccl_log
from node_cases import STACKS, plan_of

from fleet.stacks import spec_and_plan
from plan.fabric import NCCL_NETWORK_NAMES, nccl_network
from plan.model import ROLES
from plan.paths import PROJECT_ROOT
from plan.software import FABRIC_STACK
from spec.stackfile import load_stack_file, stack_name_of

sys.path.insert(0, str(PROJECT_ROOT / "cloud-init"))

from health import config, nccl, ncclprobe

SHIPPED = [stack_name_of(path) for path in STACKS]
NCCL_VERSION = "2.29.7"


def node_files(tmp_path: Path, user_data: str) -> tuple[config.HealthConfig, dict[str, str]]:
    """The node's node.json, parsed as the gate parses it, and the environment its nccl.env gives NCCL."""
    files = {f["path"]: f["content"] for f in yaml.safe_load(user_data)["write_files"]}
    health = config.parse(Path("node.json"), json.loads(files["/etc/gpufleet/node.json"]))
    env_file = tmp_path / "nccl.env"
    env_file.write_text(files["/etc/gpufleet/nccl.env"])
    before = subprocess.run(["env", "-i", "bash", "-c", "env -0"], capture_output=True, text=True, check=True)
    after = subprocess.run(["env", "-i", "bash", "-c", 'set -a; . "$1"; env -0', "_", str(env_file)],
                           capture_output=True, text=True, check=True)
    baseline = set(before.stdout.split("\0"))
    return health, dict(item.split("=", 1) for item in after.stdout.split("\0") if item and item not in baseline)


def probe_reason(network: str, fabric: config.Fabric) -> str | None:
    return ncclprobe.reason({"version": NCCL_VERSION, "source": "torch", "network": network}, fabric)


@pytest.mark.parametrize("stack", SHIPPED)
@pytest.mark.parametrize("role", ROLES)
def test_every_shipped_stacks_gate_passes_its_own_network(tmp_path, stack, role):
    health, env = node_files(tmp_path, getattr(plan_of(stack), role).user_data)
    log = nccl_log(env, NODE_OF_FABRIC[health.fabric.kind])
    row = nccl.checks(log, health.fabric)[0]
    assert row.ok, row.detail
    assert probe_reason(nccl.parse(log).network, health.fabric) is None


def test_the_shipped_stacks_cover_every_fabric():
    kinds = {plan_of(stack).fabric.kind for stack in ("aws-p5", "ali-erdma", "tencent-hcc", "aws-g5-spot")}
    assert kinds == {"efa", "erdma", "rdma", "tcp"}


@pytest.mark.parametrize("stack", ["aws-p5", "aws-p4d-capacity-block", "ali-erdma", "tencent-hcc"])
def test_a_node_that_fell_back_to_sockets_fails(tmp_path, stack):
    health, env = node_files(tmp_path, plan_of(stack).worker.user_data)
    # A NCCL that never got NCCL_NET, on a node whose fabric transport is missing: it trains over sockets.
    log = nccl_log({k: v for k, v in env.items() if k != "NCCL_NET"}, PLAIN)
    assert nccl.parse(log).network == "Socket"
    row = nccl.checks(log, health.fabric)[0]
    assert not row.ok and "network Socket" in row.detail and f"NCCL_NET={health.fabric.nccl_net}" in row.detail
    net = health.fabric.nccl_net.replace(" ", "_")
    assert probe_reason("Socket", health.fabric) == f"nccl-net:{net}:chose=Socket"
    # Under the plan's NCCL_NET the same node's NCCL fails at init instead: no network logged, the gate fails.
    with pytest.raises(InitFailed) as failed:
        nccl_log(env, PLAIN)
    assert nccl.parse(failed.value.log).network is None
    assert not nccl.checks(failed.value.log, health.fabric)[0].ok
    assert ncclprobe.reason({"version": "", "network": "", "error": str(failed.value)}, health.fabric) == \
        f"nccl-net:{net}:unavailable"


def test_an_efa_type_the_stack_runs_over_tcp_expects_sockets(tmp_path, write_stack):
    cluster = yaml.safe_load((PROJECT_ROOT / "stacks/Pulumi.aws-p5.yaml").read_text())["config"]["gpufleet:cluster"]
    cluster["network"] = {"fabric": "tcp"}
    plan = spec_and_plan(load_stack_file(write_stack(cluster)))[1]
    for role in ROLES:
        health, env = node_files(tmp_path, getattr(plan, role).user_data)
        assert (health.fabric.kind, health.fabric.devices) == ("tcp", 0)
        # The image still brings aws-ofi-nccl; the plan's NCCL_NET keeps NCCL on sockets, and the gate expects that.
        log = nccl_log(env, Node(plugin=EFA.plugin))
        assert nccl.parse(log).network == "Socket"
        assert nccl.checks(log, health.fabric)[0].ok
        assert not nccl.checks(nccl_log({"NCCL_NET": "OFI"}, EFA), health.fabric)[0].ok


@pytest.mark.parametrize("nccl_net", [*NCCL_NETWORK_NAMES, "ofi", "Aws LibFabric", "SOCKET"])
def test_the_plans_name_table_is_what_nccl_logs_for_each_nccl_net(nccl_net):
    """On a node with every transport (aws-ofi-nccl of the DLAMI, EFA, verbs), NCCL_NET picks one network; the name
    NCCL logs for it is the plan's (plan/fabric.py), whatever the value's case."""
    node = Node(plugin=EFA.plugin, efa_nics=EFA.efa_nics, verbs="mlx5_0:1/RoCE")
    assert nccl.parse(nccl_log({"NCCL_NET": nccl_net}, node)).network == nccl_network(nccl_net)


def test_the_efa_stack_asks_for_an_aws_ofi_nccl_that_answers_to_ofi():
    """Up to 1.12 the plugin is "AWS Libfabric" whatever NCCL_NET says, so NCCL_NET=OFI fails at init there: the
    release the fabric stack names (plan/software.py) must be one that answers to it."""
    with pytest.raises(InitFailed):
        nccl_log({"NCCL_NET": "OFI"}, Node(plugin=(1, 12), efa_nics=32))
    stack, nccl_net = FABRIC_STACK["efa"]
    release = tuple(int(part) for part in re.search(r"aws-ofi-nccl >= (\d+)\.(\d+)", stack).groups())
    assert nccl.parse(nccl_log({"NCCL_NET": nccl_net}, Node(plugin=release, efa_nics=32))).network == "OFI"
