"""The cluster acceptance test: its pairing and naming decisions as functions, then the real thing with gloo on CPU:
four node processes on loopback (a healthy set passes), and four torchrun agents in network namespaces on a bridge
where one node's link is slowed (tc) or its collectives' ports are closed (nftables) and that node is named."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "cloud-init"))

from health.acceptance import (  # noqa: E402
    best_per_node,
    confirm_rounds,
    mesh_report,
    named,
    node_limit,
    ring_rounds,
    unreachable,
)
from health.thresholds import PAIR_PEER_FRACTION  # noqa: E402
from health_configs import write_node_config  # noqa: E402

from here.local.network import inside  # noqa: E402

pytest.importorskip("torch")
PYTHONPATH = f"{ROOT / 'cloud-init'}:{ROOT}"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces, tc and nftables")


# --- the decisions ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("nodes", range(2, 10))
def test_ring_rounds_pair_every_node_with_both_neighbours_in_disjoint_rounds(nodes):
    rounds = ring_rounds(nodes)
    assert len(rounds) == (1 if nodes == 2 else 2 if nodes % 2 == 0 else 3)
    for pairs in rounds:
        members = [n for pair in pairs for n in pair]
        assert len(members) == len(set(members)), "a node is in one pair a round"
    partners = {n: {b if a == n else a for a, b in itertools.chain(*rounds) if n in (a, b)} for n in range(nodes)}
    for n in range(nodes):
        assert partners[n] == {(n - 1) % nodes, (n + 1) % nodes}


def test_confirm_rounds_give_each_suspect_a_good_partner_once_a_round():
    assert confirm_rounds([3], [0, 1]) == [[(3, 0)]]
    assert confirm_rounds([1, 2, 5], [0, 4]) == [[(1, 0), (2, 4)], [(5, 0)]]


def _figures(nodes: int, slow: set[int], fast: float = 10.0, slowed: float = 1.0) -> dict:
    """A pair runs at the pace of its slower node."""
    return {(a, b): slowed if {a, b} & slow else fast for a, b in itertools.chain(*ring_rounds(nodes))}


def _name(nodes: int, slow: set[int], baseline: float | None = None) -> list[int]:
    """The decision the acceptance makes, with the confirm round played by the same pair model."""
    figures = _figures(nodes, slow)
    best = best_per_node(figures, nodes)
    limit = node_limit(best, baseline, PAIR_PEER_FRACTION)
    suspects = [n for n, gbs in best.items() if gbs < limit]
    good = [n for n, gbs in best.items() if gbs >= limit]
    for pairs in confirm_rounds(suspects, good) if suspects and good else []:
        figures |= {pair: 1.0 if set(pair) & slow else 10.0 for pair in pairs}
    best = best_per_node(figures, nodes)
    return named(best, node_limit(best, baseline, PAIR_PEER_FRACTION))


@pytest.mark.parametrize(("nodes", "slow"), [(3, {0}), (3, {2}), (4, {1}), (8, {5}), (8, {2, 3}), (8, {1, 3}),
                                             (7, {6}), (5, set())])
def test_the_slow_nodes_and_only_they_are_named(nodes, slow):
    assert _name(nodes, slow) == sorted(slow)


def test_a_node_at_half_the_median_is_not_slow_but_below_half_is():
    best = {0: 10.0, 1: 12.0, 2: 5.5, 3: 4.4, 4: 40.0}
    limit = node_limit(best, None, PAIR_PEER_FRACTION)
    assert limit == 5.0, "half the median, however lucky the best pair was"
    assert named(best, limit) == [3], "a node at 0.44 of the median is named, one at 0.55 is not"


def test_a_baseline_raises_the_limit_and_a_slow_fabric_names_no_node():
    assert node_limit({0: 10.0, 1: 10.0}, 30.0, 0.5) == 30.0
    assert _name(4, set(), baseline=30.0) == [], "every pair below the baseline: the fabric, not a node"
    assert _name(4, {2}, baseline=5.0) == [2]


def test_unreachable_names_the_node_nobody_reaches_then_the_one_that_reaches_nobody():
    inbound = [{"from": 0, "to": 2}, {"from": 1, "to": 2}]
    assert unreachable(inbound, 3) == [2]
    outbound = [{"from": 1, "to": 0}, {"from": 1, "to": 2}, {"from": 0, "to": 2}]
    assert unreachable(outbound, 3) == [2], "node 2 is missed by both others"
    assert unreachable([{"from": 1, "to": 0}, {"from": 1, "to": 2}], 3) == [1]
    assert unreachable([{"from": 0, "to": 1}], 4) == [0, 1], "no clear culprit: both ends are suspects"


def test_mesh_report_fails_the_unreachable_node_only():
    failures = [{"from": n, "from_address": f"10.0.0.{n}", "to": 3, "target": "10.0.0.3:40000", "why": "no answer"}
                for n in range(3)]
    for node in range(4):
        report = mesh_report(failures, node, 4, time.time())
        assert report.ok == (node != 3)
    assert [c.subject for c in report.failed] == ["node3"] and report.failed[0].figure == 3.0
    assert report.reason() == "mesh:node3=3:max=0"


# --- four nodes on loopback ------------------------------------------------------------------------------------


def _nodes_on_loopback(tmp_path: Path, count: int, *args: str) -> list[dict]:
    """``count`` node processes of one world, as torchrun would start them (one rank per node)."""
    port = 29700 + os.getpid() % 200
    procs = []
    for rank in range(count):
        env = {**os.environ, "RANK": str(rank), "WORLD_SIZE": str(count), "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
               "GROUP_RANK": str(rank), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
               "PYTHONPATH": PYTHONPATH, "GLOO_SOCKET_IFNAME": "lo"}
        cmd = [sys.executable, "-m", "health.acceptance", "--device", "cpu", "--out", str(tmp_path / f"{rank}.json"),
               *args]
        with open(tmp_path / f"{rank}.log", "w") as log:  # a pipe nobody reads would block the process
            procs.append(subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT))
    for rank, proc in enumerate(procs):
        assert proc.wait(timeout=150) == 0, (tmp_path / f"{rank}.log").read_text()[-3000:]
    return [json.loads((tmp_path / f"{rank}.json").read_text()) for rank in range(count)]


def test_a_healthy_set_passes_and_every_node_is_measured(tmp_path):
    reports = _nodes_on_loopback(tmp_path, 4, "--bucket-mb", "8", "--reason-file", str(tmp_path / "reason"))
    for node, report in enumerate(reports):
        assert report["ok"] and report["kind"] == "acceptance" and report["node"] == f"node{node}"
        rows = {(c["check"], c["subject"]): c for c in report["checks"]}
        assert rows[("acceptance-world", "world")]["figure"] > 0
        assert {s for c, s in rows if c == "acceptance-pair"} == {"node0+node1", "node2+node3", "node1+node2",
                                                                  "node0+node3"}
        assert all(rows[("acceptance-node", f"node{n}")]["ok"] for n in range(4))
    assert not (tmp_path / "reason").exists()


def test_a_baseline_the_world_reaches_skips_the_pairs(tmp_path):
    config = write_node_config(tmp_path / "node.json", {"cross_node_busbw_gbs": 0.7e-6})
    reports = _nodes_on_loopback(tmp_path, 3, "--bucket-mb", "1", "--config", str(config))
    world = reports[0]["checks"]
    assert [c["check"] for c in world] == ["acceptance-world"] and reports[0]["ok"]
    assert world[0]["threshold"] == 0.7e-6, "the plan's cross-node threshold, as written"


# --- four torchrun agents in network namespaces ----------------------------------------------------------------


class Namespaces:
    """N node namespaces on a bridge, made by the local cluster's own code from a local stack's plan."""

    def __init__(self, tmp_path: Path, nodes: int) -> None:
        from fleet.stacks import resolve, spec_and_plan
        from here.local import layout, network

        body = {"cloud": "local", "instanceType": "cpu", "nodes": nodes, "network": {"vpcCidr": "10.79.0.0/24"}}
        path = tmp_path / f"Pulumi.accept-{os.getpid()}.yaml"
        path.write_text(yaml.safe_dump({"config": {"gpufleet:cluster": body}}))
        self.plan = spec_and_plan(resolve(None, str(path)))[1]
        self.lay = layout.layout(self.plan)
        self.network = network
        self.tmp = tmp_path
        network.create_bridge(self.lay)
        for node in self.lay.nodes:
            network.create_node(self.lay, node, self.plan.network.mtu)

    def run(self, *args: str) -> dict[str, dict]:
        """The acceptance as its own torchrun on every node; each node's report by its address."""
        head = self.lay.nodes[0].address
        procs = []
        for node in self.lay.nodes:
            env = ["env", "-i", f"PATH={Path(sys.executable).parent}:/usr/sbin:/usr/bin:/sbin:/bin",
                   f"PYTHONPATH={PYTHONPATH}", "GLOO_SOCKET_IFNAME=eth0", "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1"]
            cmd = [*inside(node.namespace, *env), sys.executable, "-m", "torch.distributed.run",
                   f"--nnodes={len(self.lay.nodes)}", "--nproc-per-node=1", "--rdzv-backend=c10d",
                   f"--rdzv-endpoint={head}:29400", "--rdzv-id=acceptance",
                   f"--rdzv-conf=is_host={int(node.role == 'head')}", f"--local-addr={node.address}",
                   "-m", "health.acceptance", "--device", "cpu", "--out", str(self.tmp / f"{node.name}.json"), *args]
            with open(self.tmp / f"{node.name}.log", "w") as log:  # a pipe nobody reads would block the agent
                procs.append(subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                              start_new_session=True))
        for proc, node in zip(procs, self.lay.nodes, strict=True):
            assert proc.wait(timeout=150) == 0, (self.tmp / f"{node.name}.log").read_text()[-3000:]
        return {node.address: json.loads((self.tmp / f"{node.name}.json").read_text()) for node in self.lay.nodes}

    def close(self) -> None:
        for namespace in [n.namespace for n in self.lay.nodes] + [self.lay.bridge_namespace]:
            for pid in self.network.pids(namespace):
                os.kill(pid, 9)
            self.network.delete(namespace)


@pytest.fixture
def namespaces(tmp_path):
    made = []

    def make(nodes: int) -> Namespaces:
        made.append(Namespaces(tmp_path, nodes))
        return made[-1]

    yield make
    for item in made:
        item.close()


def _named_addresses(reports: dict[str, dict]) -> set[str]:
    return {address for address, report in reports.items() if not report["ok"]}


@needs_root
def test_a_node_whose_link_is_slowed_is_named_within_a_minute(namespaces):
    cluster = namespaces(4)
    slow = cluster.lay.nodes[2]
    subprocess.run(inside(slow.namespace, "tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", "20mbit", "burst",
                          "32kbit", "latency", "100ms"), check=True)
    reports = cluster.run("--bucket-mb", "1")
    assert _named_addresses(reports) == {slow.address}
    report = reports[slow.address]
    assert report["duration_s"] < 60
    mine = [c for c in report["checks"] if c["check"] == "acceptance-node" and not c["ok"]]
    assert len(mine) == 1 and slow.address in mine[0]["detail"] and mine[0]["subject"] == report["node"]
    for other in (r for a, r in reports.items() if a != slow.address):
        failed = [c for c in other["checks"] if not c["ok"]]
        assert [c["subject"] for c in failed if c["check"] == "acceptance-node"] == [report["node"]]
        assert all(report["node"] in c["subject"].split("+") for c in failed if c["check"] == "acceptance-pair")


@needs_root
def test_a_node_whose_collective_ports_are_closed_is_named(namespaces):
    from here.local import firewall

    cluster = namespaces(4)
    closed = cluster.lay.nodes[1]
    rules = firewall.ruleset(cluster.plan.firewall, cluster.lay.members)
    for node in cluster.lay.nodes:
        firewall.apply(node.namespace, rules)
    ports = inside(closed.namespace, "sysctl", "-n", "net.ipv4.ip_local_port_range")
    low, high = (int(p) for p in subprocess.run(ports, capture_output=True, text=True, check=True).stdout.split())
    firewall.close_ports(closed.namespace, low, high)
    reports = cluster.run("--bucket-mb", "1")
    assert _named_addresses(reports) == {closed.address}
    rows = [c for c in reports[closed.address]["checks"] if not c["ok"]]
    assert [c["check"] for c in rows] == ["mesh"] and rows[0]["figure"] == 3.0, "no other node reached it"
