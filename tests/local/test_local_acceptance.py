"""The cluster acceptance in the local cluster, through the real path: `fleet up` boots each node from its user-data
(node.json from the plan), the gate passes, torchrun forms the job and the job's first act is the acceptance
(cloud-init/health/job.py). A healthy cluster passes on every node; a node whose link is slowed (tc tbf in its
namespace) or whose collectives' ports are closed (nftables) is named within a minute and reported, and the job goes
on without the slow one; `fleet health` prints each node's last results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
FLEET = [sys.executable, "-m", "fleet"]
JOB = {"model": "tiny", "seqLen": 64, "globalBatch": 8, "microBatch": 4, "logEvery": 1, "steps": 6,
       "bucketCapMb": 1}
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces, tc and nftables")


def fleet(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*FLEET, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def stack(tmp_path):
    made = []

    def make(name: str, **cluster) -> Path:
        body = {"cloud": "local", "instanceType": "cpu", "nodes": 3, "ranksPerNode": 1, "job": JOB,
                "network": {"vpcCidr": "10.78.0.0/24", "ncclPortRange": "50000-51000"}} | cluster
        path = tmp_path / f"Pulumi.{name}-{os.getpid()}.yaml"
        path.write_text(yaml.safe_dump({"config": {"gpufleet:cluster": body}}))
        made.append(path)
        return path

    yield make
    for path in made:
        fleet("down", "--stack-file", str(path))


def results(path: Path) -> dict[str, dict]:
    """`fleet health --json`: each node's last gate and acceptance result, by node name."""
    shown = fleet("health", "--stack-file", str(path), "--json")
    return {node["node"]: node for node in json.loads(shown.stdout)["nodes"]}


def test_a_healthy_cluster_passes_on_every_node_and_fleet_health_shows_it(stack):
    path = stack("la-ok")
    up = fleet("up", "--stack-file", str(path), "--json", "--first-step-timeout", "180")
    assert up.returncode == 0, up.stderr
    nodes = results(path)
    assert set(nodes) == {"head", "worker-1", "worker-2"}
    for node in nodes.values():
        accept = node["acceptance"]
        assert node["gate"]["ok"] and accept["ok"], accept
        assert {c["check"] for c in accept["checks"]} == {"acceptance-world", "acceptance-pair", "acceptance-node"}
        verdicts = {c["subject"]: c["ok"] for c in accept["checks"] if c["check"] == "acceptance-node"}
        assert verdicts == {"node0": True, "node1": True, "node2": True}, accept["checks"]
    print("light acceptance, 3 local nodes, 1 MiB:", [n["acceptance"]["duration_s"] for n in nodes.values()])
    table = fleet("health", "--stack-file", str(path))
    assert table.returncode == 0, table.stderr
    for name in nodes:
        assert name in table.stdout
    assert "FAILED" not in table.stdout


def test_a_node_whose_link_is_slowed_is_named_within_a_minute_and_the_job_goes_on_without_it(stack):
    path = stack("la-slow", nodes={"min": 2, "desired": 3, "max": 3})
    up = fleet("up", "--stack-file", str(path), "--json", "--slow-link", "worker-2:20mbit",
               "--first-step-timeout", "180")
    assert up.returncode == 0, up.stderr
    summary = json.loads(up.stdout.splitlines()[-1])
    assert any("worker-2 (10.78.0.12) was named by the cluster acceptance" in e for e in summary["events"]), summary
    assert (summary["steps_completed"], summary["nodes"]) == (6, 2), "the job finished on the two healthy nodes"
    nodes = results(path)
    slow = nodes["worker-2"]["acceptance"]
    assert not slow["ok"] and slow["duration_s"] < 60
    mine = [c for c in slow["checks"] if c["check"] == "acceptance-node" and not c["ok"]]
    assert len(mine) == 1 and "10.78.0.12" in mine[0]["detail"]
    assert nodes["head"]["acceptance"]["ok"], "the head's last acceptance: the re-formed job, which passed"
    table = fleet("health", "--stack-file", str(path))
    assert table.returncode == 1 and "FAILED" in table.stdout and "acceptance-node" in table.stdout


def test_a_node_whose_collective_ports_are_closed_is_named_by_the_acceptance(stack):
    path = stack("la-port")
    up = fleet("up", "--stack-file", str(path), "--json", "--close-port", "worker-1:50000-51000",
               "--first-step-timeout", "180")
    assert up.returncode == 1 and "worker-1 = 10.78.0.11" in up.stderr, up.stderr
    nodes = results(path)
    named = nodes["worker-1"]["acceptance"]
    assert not named["ok"] and named["duration_s"] < 60
    rows = [c for c in named["checks"] if not c["ok"]]
    assert [c["check"] for c in rows] == ["mesh"] and rows[0]["figure"] == 2.0, "neither other node reached it"
    # fleet up waits for every node's verdict before it takes the cluster down: the healthy nodes are cleared.
    assert [nodes[name]["acceptance"]["ok"] for name in ("head", "worker-2")] == [True, True]
