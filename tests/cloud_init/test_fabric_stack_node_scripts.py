"""gpufleet-fabric in cloud mode on a node whose probe finds no fabric device (this machine has none), with each cloud's
adapter and stub tools, in a private network namespace: a fabric stack the image lacks and the cloud's documented way
cannot bring fails the node with a permanent reason (the failure budget then stops the replacements); a stack that is
there, or that installs, leaves the devices to the health gate."""

from __future__ import annotations

import subprocess

import pytest
from bootstrap_helpers import run
from test_local_scripts import local_node  # noqa: F401  (the fixture)

from plan.software import PERMANENT_FAILURES

ERDMA_SETUP = "http://mirrors.cloud.aliyuncs.com/erdma/env_setup.sh"


@pytest.fixture
def fabric_node(local_node, tmp_path):  # noqa: F811
    """(cloud, fabric, stubs) -> (result, root, recorded calls): gpufleet-fabric run once on such a node."""
    if subprocess.run(["unshare", "-n", "true"], check=False, capture_output=True).returncode != 0:
        pytest.skip("needs root for a private network namespace (unshare -n)")

    def fabric(cloud: str, fabric: str, stubs: dict[str, str]):
        root, entry, env, _ = local_node(cloud=cloud, region="cn-hangzhou", fabric=fabric, fabric_devices=2)
        with open(root / "etc/gpufleet/node.env", "a") as node_env:  # installed as a local node, now run as a cloud's
            node_env.write("GF_LOCAL='0'\n")
        bin_dir = tmp_path / "stubs"
        bin_dir.mkdir(exist_ok=True)
        for name, body in stubs.items():
            record = f'echo "{name} $*" >> "$GPUFLEET_TEST_CALLS"'
            (bin_dir / name).write_text(f"#!/usr/bin/env bash\n{record}\n{body}\n")
            (bin_dir / name).chmod(0o755)
        calls = tmp_path / "calls"
        calls.touch()
        env = env | {"PATH": f"{bin_dir}:{env['PATH']}", "GPUFLEET_TEST_CALLS": str(calls)}
        result = run(["unshare", "-n", entry.parent / "gpufleet-fabric"], root, env)
        return result, root, calls.read_text().splitlines()

    return fabric


def _failure(root) -> str:
    path = root / "run/gpufleet/failure"
    return path.read_text().strip() if path.exists() else ""


def test_hcc_without_rdma_agent_fails_for_good_after_waiting_for_it(fabric_node):
    result, root, calls = fabric_node("tencentcloud", "rdma", {"systemctl": "exit 1", "sleep": ""})
    assert result.returncode == 1
    reason = _failure(root)
    assert reason == "fabric-stack:rdma:no-rdma-agent" and reason.split(":")[0] in PERMANENT_FAILURES
    assert calls.count("sleep 10") == 30, "rdma-agent gets five minutes to appear"
    assert "give the stack's image: one that has rdma-agent" in result.stderr


def test_hcc_with_rdma_agent_leaves_the_devices_to_the_gate(fabric_node):
    result, root, calls = fabric_node("tencentcloud", "rdma", {"systemctl": "", "sleep": ""})
    assert result.returncode == 0, result.stderr
    assert _failure(root) == "" and "systemctl cat rdma-agent.service" in calls and "sleep 10" not in calls


@pytest.mark.parametrize(("setup_rc", "reason"), [(0, ""), (3, "fabric-stack:erdma:setup")])
def test_alibaba_runs_its_erdma_setup_and_a_failed_setup_is_permanent(fabric_node, setup_rc, reason):
    curl = f'printf "exit {setup_rc}\\n" > "$2"'  # curl -fsSLo FILE URL: the setup script, exiting setup_rc
    result, root, calls = fabric_node("alicloud", "erdma", {"curl": curl})
    assert result.returncode == (1 if reason else 0), result.stderr
    assert _failure(root) == reason
    (download,) = [line for line in calls if line.startswith("curl ")]
    assert download == f"curl -fsSLo {root}/run/gpufleet/erdma_setup.sh {ERDMA_SETUP}"
    if reason:
        assert reason.split(":")[0] in PERMANENT_FAILURES
