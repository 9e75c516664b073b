"""Network rules: the fabric's security group talks to itself both ways, and a node with several interfaces gets no
public address (what the internet may reach is policy.internet's)."""

from __future__ import annotations

from collections.abc import Iterable

from policy import types as t
from policy.base import Inputs, Resource, items, of_type, present, truthy

ERDMA_MODE = "HighPerformance"


def public_ip_with_several_interfaces(kind: str, inputs: Inputs) -> Iterable[str]:
    """EC2 rejects a public IP when a node has more than one interface; eRDMA nodes follow the same rule here."""
    if kind in (t.AWS_LAUNCH_TEMPLATE, t.AWS_INSTANCE):
        nics = items(inputs.get("networkInterfaces"))
        public = truthy(inputs.get("associatePublicIpAddress")) or any(
            truthy(n.get("associatePublicIpAddress")) for n in nics)
        if len(nics) > 1 and public:
            yield "a public IP cannot go with several interfaces (EC2 rejects it); use the NAT gateway."
    elif kind in (t.ALI_INSTANCE, t.ALI_LAUNCH_TEMPLATE, t.ALI_SCALING_CONFIG):
        nics = items(inputs.get("networkInterfaces"))
        if nics and int(inputs.get("internetMaxBandwidthOut") or 0) > 0:
            yield ("a public IP (internetMaxBandwidthOut > 0) cannot go with secondary interfaces; "
                   "leave through the NAT gateway.")


def _efa_in_use(resources: list[Resource]) -> bool:
    return any(n.get("interfaceType") in ("efa", "efa-only")
               for r in of_type(resources, t.AWS_LAUNCH_TEMPLATE, t.AWS_INSTANCE)
               for n in items(r["inputs"].get("networkInterfaces")))


def _erdma_in_use(resources: list[Resource]) -> bool:
    nics = [n for r in of_type(resources, t.ALI_INSTANCE, t.ALI_LAUNCH_TEMPLATE, t.ALI_SCALING_CONFIG)
            for n in items(r["inputs"].get("networkInterfaces"))]
    standalone = [r["inputs"] for r in of_type(resources, t.ALI_NIC)]
    return any(n.get("networkInterfaceTrafficMode") == ERDMA_MODE for n in nics + standalone) or any(
        r["inputs"].get("networkInterfaceTrafficMode") == ERDMA_MODE for r in of_type(resources, t.ALI_INSTANCE))


def _aws_self_rules(resources: list[Resource]) -> Iterable[tuple[str, str]]:
    for direction, kind in (("ingress", t.AWS_SG_INGRESS), ("egress", t.AWS_SG_EGRESS)):
        if not any(r["inputs"].get("ipProtocol") == "-1" and present(r["inputs"].get("referencedSecurityGroupId"))
                   for r in of_type(resources, kind)):
            yield "security group", (f"EFA needs an all-traffic {direction} rule referencing the group itself "
                                     "(ingress-only fails with 'Unresponsive receiver').")


def _ali_self_rules(resources: list[Resource]) -> Iterable[tuple[str, str]]:
    groups = of_type(resources, t.ALI_SG)
    if any(str(g["inputs"].get("innerAccessPolicy", "")).lower() == "accept" for g in groups):
        return
    rules = of_type(resources, t.ALI_SG_RULE)
    for direction in ("ingress", "egress"):
        if not any(r["inputs"].get("type") == direction and r["inputs"].get("ipProtocol") == "all"
                   and present(r["inputs"].get("sourceSecurityGroupId")) for r in rules):
            yield "security group", (f"eRDMA needs the group open to itself: innerAccessPolicy Accept, or an "
                                     f"{direction} rule for all protocols with sourceSecurityGroupId = the group.")


def _tc_self_rules(resources: list[Resource]) -> Iterable[tuple[str, str]]:
    sets = of_type(resources, t.TC_SG_RULES)
    for direction in ("ingresses", "egresses"):
        entries = [e for s in sets for e in items(s["inputs"].get(direction))]
        if not any(str(e.get("protocol", "")).upper() == "ALL" and str(e.get("action", "")).upper() == "ACCEPT"
                   and present(e.get("sourceSecurityId")) for e in entries):
            yield "security group", (f"HCC RDMA needs the group open to itself: an {direction[:-2]} entry with "
                                     "protocol ALL, action ACCEPT and sourceSecurityId = the group.")


def fabric_self_both_ways(resources: list[Resource]) -> Iterable[tuple[str, str]]:
    """RDMA-style fabrics (EFA, eRDMA, HCC RDMA) need every protocol between members, in and out."""
    if _efa_in_use(resources):
        yield from _aws_self_rules(resources)
    if _erdma_in_use(resources):
        yield from _ali_self_rules(resources)
    if any(present(r["inputs"].get("hpcClusterId")) for r in of_type(resources, t.TC_INSTANCE)):
        yield from _tc_self_rules(resources)
