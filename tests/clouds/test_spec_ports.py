"""The rendezvous port and a pinned NCCL range stay clear of every port a node listens on, and a range is only
accepted where the fabric honours it."""

from __future__ import annotations

import pytest
from spec_cases import only, plan_of

from clouds.ports import listening_ports
from plan.planner import METRICS_PORTS
from plan.userdata import GRAFANA_PORT, PROMETHEUS_PORT

RANGE = "gpufleet:cluster.network.ncclPortRange"
P5 = {"instanceType": "p5.48xlarge", "job": {"globalBatch": 1024, "microBatch": 16}}


def test_every_port_the_plan_opens_is_known():
    assert set(listening_ports()) == {22, *METRICS_PORTS, PROMETHEUS_PORT, GRAFANA_PORT} == {22, 3000, 9090, 9100, 9400}


@pytest.mark.parametrize("port", [3000, 9090, 9100, 9400])
def test_the_rendezvous_port_is_no_service_port(tmp_path, port):
    problem = only(tmp_path, "aws", {"network": {"rendezvousPort": port}})
    assert problem.path == "gpufleet:cluster.network.rendezvousPort" and str(port) in problem.message


@pytest.mark.parametrize("ports, inside", [
    ("9000-9500", "9090"), ("9050-9350", "9100"), ("9300-9600", "9400"), ("2900-3200", "3000"),
])
def test_a_pinned_range_holds_no_service_port(tmp_path, ports, inside):
    problem = only(tmp_path, "aws", {"network": {"fabric": "tcp", "ncclPortRange": ports}})
    assert problem.path == RANGE and inside in problem.message and "50000-51000" in problem.fix


def test_a_pinned_range_and_a_moved_rendezvous_port(tmp_path):
    problem = only(tmp_path, "aws", {"network": {"fabric": "tcp", "ncclPortRange": "40000-41000",
                                                 "rendezvousPort": 40500}})
    assert problem.path == RANGE and "rendezvous port 40500" in problem.message
    _, plan = plan_of(tmp_path, "aws", {"network": {"fabric": "tcp", "ncclPortRange": "40000-41000"}})
    assert [(r.from_port, r.to_port) for r in plan.firewall if r.description.startswith("NCCL")] == [(40000, 41000)]


@pytest.mark.parametrize("cloud, changes", [
    ("aws", P5),
    ("aws", {**P5, "network": {"fabric": "efa"}}),
    ("alicloud", {"instanceType": "ecs.ebmgn7ex.32xlarge", "zone": "cn-wulanchabu-c",
                  "job": {"globalBatch": 512, "microBatch": 32}}),
])
def test_a_pinned_range_is_refused_off_tcp(tmp_path, cloud, changes):
    region = "cn-wulanchabu" if cloud == "alicloud" else None
    network = {**changes.get("network", {}), "ncclPortRange": "50000-51000"}
    problem = only(tmp_path, cloud, {**changes, "network": network}, region=region)
    assert problem.path == RANGE and "needs every port open" in problem.message and "fabric: tcp" in problem.fix


def test_a_pinned_range_is_honoured_on_tcp(tmp_path):
    _, plan = plan_of(tmp_path, "aws", {**P5, "network": {"fabric": "tcp", "ncclPortRange": "50000-51000"}})
    assert plan.fabric.kind == "tcp"
    assert any(r.from_port == 50000 and r.to_port == 51000 for r in plan.firewall)
