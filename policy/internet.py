"""Nothing reachable from the internet unless the stack opted in, judged on parsed networks on all three clouds.

A range wider than a /8 is the internet however it is spelled (`0.0.0.0/00`, `0::0/0`, `0.0.0.0/1`), and so is any
set of ranges that together admit more internet addresses than a /8 holds (`0.0.0.0/1` + `128.0.0.0/1`, or
every other /8). components.cidrs makes that judgement for the plan and the policy alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from components.cidrs import WIDEST_OPEN_PREFIX, exposing, internet_addresses, network_of
from components.plan.firewall import INTERNET_OPT_IN
from policy import types as t
from policy.base import Inputs, Resource, items, known

OPT_IN_HINT = ("name the networks in network.sshCidrs instead, or opt in with network.allowInternet: true "
               "(docs/gitops.md)")


@dataclass(frozen=True)
class Ingress:
    """One range an ingress rule admits, as a provider's resource states it."""

    rule: str  # "ingress tcp 22-22"
    cidr: object
    opted_in: bool


def _opted_in(description: object) -> bool:
    return INTERNET_OPT_IN in str(description or "")


def _ranges(rule: str, cidrs: Iterable[object], description: object) -> list[Ingress]:
    return [Ingress(rule, cidr, _opted_in(description)) for cidr in cidrs if cidr not in (None, "")]


def ingresses(kind: str, inputs: Inputs) -> list[Ingress]:
    """Every (rule, range) a resource admits from outside the cluster, on AWS, Alibaba Cloud and Tencent Cloud."""
    if kind == t.AWS_SG_INGRESS:
        rule = f"ingress {inputs.get('ipProtocol')} {inputs.get('fromPort', 'all')}-{inputs.get('toPort', 'all')}"
        return _ranges(rule, (inputs.get("cidrIpv4"), inputs.get("cidrIpv6")), inputs.get("description"))
    if kind == t.AWS_SG_RULE and inputs.get("type") == "ingress":
        rule = f"ingress {inputs.get('protocol')} {inputs.get('fromPort')}-{inputs.get('toPort')}"
        cidrs = items(inputs.get("cidrBlocks")) + items(inputs.get("ipv6CidrBlocks"))
        return _ranges(rule, cidrs, inputs.get("description"))
    if kind == t.AWS_SG:
        return [found for entry in items(inputs.get("ingress"))
                for found in _ranges(f"ingress {entry.get('protocol')} {entry.get('fromPort')}-{entry.get('toPort')}",
                                     items(entry.get("cidrBlocks")) + items(entry.get("ipv6CidrBlocks")),
                                     entry.get("description"))]
    if kind == t.ALI_SG_RULE and inputs.get("type") == "ingress" and inputs.get("policy", "accept") == "accept":
        rule = f"ingress {inputs.get('ipProtocol')} {inputs.get('portRange')}"
        return _ranges(rule, (inputs.get("cidrIp"), inputs.get("ipv6CidrIp")), inputs.get("description"))
    if kind == t.TC_SG_RULES:
        return [found for entry in items(inputs.get("ingresses"))
                if str(entry.get("action", "")).upper() == "ACCEPT"
                for found in _ranges(f"ingress {entry.get('protocol')} {entry.get('port')}",
                                     (entry.get("cidrBlock"), entry.get("ipv6CidrBlock")), entry.get("description"))]
    return []


def open_ingress(kind: str, inputs: Inputs) -> Iterator[str]:
    """SSH, NCCL, metrics or anything else open to a range wider than a /8 (or to one no provider can read)."""
    for found in ingresses(kind, inputs):
        if found.opted_in or not known(found.cidr):
            continue
        network = network_of(found.cidr)
        if network is None:
            yield (f"{found.rule} admits {found.cidr!r}, which is not a network; nothing may be opened to a range "
                   "that cannot be judged.")
        elif network.prefixlen < WIDEST_OPEN_PREFIX:
            yield (f"{found.rule} is open to {network} ({network.num_addresses:,} addresses: wider than a "
                   f"/{WIDEST_OPEN_PREFIX} counts as the internet); {OPT_IN_HINT}.")


def internet_by_parts(resources: list[Resource]) -> Iterator[tuple[str, str]]:
    """Ranges each narrower than a /8 that together admit more of the internet than a /8 holds."""
    found = [(resource["name"], network) for resource in resources
             for entry in ingresses(resource["type"], resource["inputs"])
             if not entry.opted_in and known(entry.cidr) and (network := network_of(entry.cidr)) is not None]
    networks = [network for _, network in found]
    exposed = [network for network in exposing(networks) if network.prefixlen >= WIDEST_OPEN_PREFIX]
    if not exposed:
        return
    total = internet_addresses(exposed)
    listed = ", ".join(sorted({str(n) for n in exposed}))
    for name in dict.fromkeys(name for name, network in found if network in exposed):
        yield name, (f"the cluster's ingress ranges ({listed}) together admit {total:,} internet addresses, more "
                     f"than a /{WIDEST_OPEN_PREFIX} holds; {OPT_IN_HINT}.")
