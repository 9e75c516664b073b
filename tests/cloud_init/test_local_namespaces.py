"""Two local-mode nodes in their own network namespaces, booted from their rendered user-data, join one c10d
rendezvous on the head's address and all-reduce with gloo: what the local cluster will do, minus its supervisor."""

from __future__ import annotations

import hashlib
import os
import subprocess

import pytest
from bootstrap_helpers import VENV_BIN
from node_cases import boot, plan_of

from here.local.network import inside
from plan.bundle import build, source_files

# The job the node's command hands its world to (health.run_job calls training.train.main): one all-reduce over the
# nodes' eth0, each rank's sum written where the node points --checkpoint-dir.
TRAIN = b"""import os, pathlib, sys, torch, torch.distributed as dist
def main(argv=None, form_world=None):
    argv = sys.argv[1:] if argv is None else argv
    dist.init_process_group("gloo")
    t = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(t)
    ckpt = pathlib.Path(argv[argv.index("--checkpoint-dir") + 1])
    ckpt.mkdir(parents=True, exist_ok=True)
    (ckpt / f"rank{dist.get_rank()}").write_text(f"{t.item()} {os.environ['GLOO_SOCKET_IFNAME']}")
    dist.destroy_process_group()
    return 0
"""
SUBNET = "10.231.77"


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


@pytest.fixture
def namespaces():
    """A bridge namespace and two node namespaces, each node with eth0 on the bridge; removed afterwards."""
    if os.geteuid() != 0:
        pytest.skip("needs root for network namespaces (scripts/setup installs iproute2)")
    tag = f"gft{os.getpid() % 100000}"
    bridge, nodes = f"{tag}br", [f"{tag}n0", f"{tag}n1"]
    for ns in [bridge, *nodes]:
        sh("ip", "netns", "add", ns)
    try:
        sh(*inside(bridge, "ip"), "link", "add", "br0", "type", "bridge")
        sh(*inside(bridge, "ip"), "link", "set", "br0", "up")
        for i, ns in enumerate(nodes):
            sh("ip", "link", "add", f"{tag}v{i}", "netns", ns, "type", "veth", "peer", "name", f"p{i}", "netns", bridge)
            sh(*inside(ns, "ip"), "link", "set", f"{tag}v{i}", "name", "eth0")
            sh(*inside(ns, "ip"), "addr", "add", f"{SUBNET}.{i + 1}/24", "dev", "eth0")
            for link in ("eth0", "lo"):
                sh(*inside(ns, "ip"), "link", "set", link, "up")
            sh(*inside(bridge, "ip"), "link", "set", f"p{i}", "master", "br0", "up")
        yield nodes
    finally:
        for ns in [*nodes, bridge]:
            subprocess.run(["ip", "netns", "del", ns], check=False)


def test_two_nodes_rendezvous_and_all_reduce(namespaces, tmp_path):
    bundle = build(source_files() | {"training/train.py": TRAIN})
    sha = hashlib.sha256(bundle).hexdigest()
    (tmp_path / f"{sha}.tar.gz").write_bytes(bundle)
    plan = plan_of("local")
    settings = {"head_address": f"{SUBNET}.1", "code_uri": f"file://{tmp_path}/{sha}.tar.gz", "code_sha256": sha,
                "checkpoint_dir": "/ckpt", "checkpoint_uri": f"file://{tmp_path}/bucket"}
    procs = []
    for ns, role in zip(namespaces, (plan.head, plan.worker), strict=True):
        entry = boot(role.user_data, tmp_path / ns, **settings)
        env = {"PATH": f"{VENV_BIN}:/usr/sbin:/usr/bin:/sbin:/bin", "GPUFLEET_ROOT": str(tmp_path / ns)}
        cmd = inside(ns, str(entry), "start")
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = [p.communicate(timeout=180)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], "\n".join(outputs)
    world = 2 * plan.ranks_per_node
    assert sorted(p.name for p in (tmp_path / "bucket").iterdir()) == [f"rank{r}" for r in range(world)]
    for rank in range(world):
        assert (tmp_path / "bucket" / f"rank{rank}").read_text() == f"{world * (world + 1) / 2} eth0"
