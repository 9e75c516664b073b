"""Capacity and placement rules: a placement group in one zone and subnet, Capacity Blocks without placement groups
or spot, no spot in an Alibaba deployment set, and Tencent HCC types only inside an HPC cluster."""

from __future__ import annotations

from collections.abc import Iterable

from components.catalog import lookup
from policy import types as t
from policy.base import Inputs, Resource, items, known, mapping, of_type, present
from policy.storage import spot_resources

SPOT_STRATEGIES = ("SpotAsPriceGo", "SpotWithPriceLimit")


def _distinct(values: Iterable[object]) -> set:
    return {v for v in values if known(v)}


def _aws_subnets(resources: list[Resource]) -> set:
    nics = [n for r in of_type(resources, t.AWS_LAUNCH_TEMPLATE, t.AWS_INSTANCE)
            for n in items(r["inputs"].get("networkInterfaces"))]
    direct = [r["inputs"].get("subnetId") for r in of_type(resources, t.AWS_INSTANCE)]
    groups = [s for r in of_type(resources, t.AWS_ASG) for s in items(r["inputs"].get("vpcZoneIdentifiers"))]
    return _distinct([n.get("subnetId") for n in nics] + direct + groups)


def placement_one_zone(resources: list[Resource]) -> Iterable[tuple[str, str]]:
    """EFA, eRDMA and HCC do not cross zones: nodes in a placement group share one zone and one subnet."""
    if of_type(resources, t.AWS_PLACEMENT_GROUP):
        if len(subnets := _aws_subnets(resources)) > 1:
            yield "placement group", f"nodes use {len(subnets)} subnets; a cluster placement group needs one."
        zones = _distinct(z for r in of_type(resources, t.AWS_ASG) for z in items(r["inputs"].get("availabilityZones")))
        if len(zones) > 1:
            yield "placement group", f"the worker group spans zones {sorted(zones)}; use one."
    if of_type(resources, t.ALI_DEPLOYMENT_SET):
        nodes = of_type(resources, t.ALI_INSTANCE)
        switches = _distinct([r["inputs"].get("vswitchId") for r in nodes] + [
            s for r in of_type(resources, t.ALI_SCALING_GROUP) for s in items(r["inputs"].get("vswitchIds"))])
        if len(switches) > 1:
            yield "deployment set", f"nodes use {len(switches)} vSwitches; a LowLatency deployment set needs one."
        if len(zones := _distinct(r["inputs"].get("availabilityZone") for r in nodes)) > 1:
            yield "deployment set", f"nodes span zones {sorted(zones)}; use one."
    for cluster in of_type(resources, t.TC_HPC_CLUSTER):
        members = [r for r in of_type(resources, t.TC_INSTANCE) if present(r["inputs"].get("hpcClusterId"))]
        zones = _distinct([cluster["inputs"].get("zone")] + [r["inputs"].get("availabilityZone") for r in members])
        if len(zones) > 1:
            yield cluster["name"], f"the HPC cluster and its nodes span zones {sorted(zones)}; use one."
        if len(subnets := _distinct(r["inputs"].get("subnetId") for r in members)) > 1:
            yield cluster["name"], f"HCC nodes use {len(subnets)} subnets; use one."


def capacity_block_alone(resources: list[Resource]) -> Iterable[tuple[str, str]]:
    """A Capacity Block places its own nodes: no placement group (ParallelCluster forbids it) and no spot mix."""
    blocks = [r for r in of_type(resources, t.AWS_LAUNCH_TEMPLATE, t.AWS_INSTANCE)
              if mapping(r["inputs"].get("instanceMarketOptions")).get("marketType") == "capacity-block"]
    for block in blocks:
        grouped = present(mapping(block["inputs"].get("placement")).get("groupName"))
        if grouped or of_type(resources, t.AWS_PLACEMENT_GROUP):
            yield block["name"], "a Capacity Block cannot be combined with a placement group; remove the group."
        if spot_resources(resources):
            yield block["name"], "a Capacity Block cannot be mixed with spot capacity; set spotPercent to 0."


def spot_outside_deployment_set(kind: str, inputs: Inputs) -> Iterable[str]:
    """Alibaba documents that spot instances cannot be created in a deployment set (the doc may be old: advisory)."""
    spot = kind in (t.ALI_INSTANCE, t.ALI_LAUNCH_TEMPLATE) and inputs.get("spotStrategy") in SPOT_STRATEGIES
    if spot and present(inputs.get("deploymentSetId")):
        yield "spot instances may fail to launch inside a deployment set; use on-demand or drop the set."


def hcc_in_hpc_cluster(kind: str, inputs: Inputs) -> Iterable[str]:
    """Tencent HCC (RDMA) types only reach their RDMA peers inside an HPC cluster; other types must not join one."""
    if kind != t.TC_INSTANCE or not known(inputs.get("instanceType")):
        return
    row = lookup("tencentcloud", inputs["instanceType"])
    hcc = row.fabric == "rdma" if row is not None else str(inputs["instanceType"]).upper().startswith("HCC")
    if hcc and not present(inputs.get("hpcClusterId")):
        yield f"{inputs['instanceType']} is an HCC type: set hpcClusterId to a cvm.HpcCluster in the same zone."
    elif not hcc and present(inputs.get("hpcClusterId")):
        yield f"{inputs['instanceType']} is not an HCC type and cannot join an HPC cluster; drop hpcClusterId."
