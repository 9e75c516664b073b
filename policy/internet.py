"""Nothing reachable from the internet unless the stack opted in, judged on parsed networks on every cloud.

A range wider than a /8 is the internet however it is spelled (`0.0.0.0/00`, `0::0/0`, `0.0.0.0/1`), and so is any
set of ranges that together admit more internet addresses than a /8 holds (`0.0.0.0/1` + `128.0.0.0/1`, or
every other /8). spec.cidrs makes that judgement for the plan and the policy alike; each cloud's reader says
which ranges its resources admit.
"""

from __future__ import annotations

from collections.abc import Iterator

from plan.firewall import INTERNET_OPT_IN
from policy.base import Ingress, Inputs, Resource, known
from policy.readers import reader_for
from spec.cidrs import WIDEST_OPEN_PREFIX, exposing, internet_addresses, network_of

OPT_IN_HINT = ("name the networks in network.sshCidrs instead, or opt in with network.allowInternet: true "
               "(docs/gitops.md)")


def _opted_in(found: Ingress) -> bool:
    """The plan writes the opt-in into the description of a rule the stack opened to the internet."""
    return INTERNET_OPT_IN in str(found.description or "")


def ingresses(kind: str, inputs: Inputs) -> list[Ingress]:
    """Every range a resource admits from outside the cluster, as its cloud's reader finds them."""
    reader = reader_for(kind)
    return [found for found in (reader.ingress(kind, inputs) if reader else ()) if found.cidr not in (None, "")]


def open_ingress(kind: str, inputs: Inputs) -> Iterator[str]:
    """SSH, NCCL, metrics or anything else open to a range wider than a /8 (or to one no provider can read)."""
    for found in ingresses(kind, inputs):
        if _opted_in(found) or not known(found.cidr):
            continue
        rule = f"ingress {found.protocol} {found.ports}"
        network = network_of(found.cidr)
        if network is None:
            yield (f"{rule} admits {found.cidr!r}, which is not a network; nothing may be opened to a range "
                   "that cannot be judged.")
        elif network.prefixlen < WIDEST_OPEN_PREFIX:
            yield (f"{rule} is open to {network} ({network.num_addresses:,} addresses: wider than a "
                   f"/{WIDEST_OPEN_PREFIX} counts as the internet); {OPT_IN_HINT}.")


def internet_by_parts(resources: list[Resource]) -> Iterator[tuple[str, str]]:
    """Ranges each narrower than a /8 that together admit more of the internet than a /8 holds."""
    found = [(resource["name"], network) for resource in resources
             for entry in ingresses(resource["type"], resource["inputs"])
             if not _opted_in(entry) and known(entry.cidr) and (network := network_of(entry.cidr)) is not None]
    networks = [network for _, network in found]
    exposed = [network for network in exposing(networks) if network.prefixlen >= WIDEST_OPEN_PREFIX]
    if not exposed:
        return
    total = internet_addresses(exposed)
    listed = ", ".join(sorted({str(n) for n in exposed}))
    for name in dict.fromkeys(name for name, network in found if network in exposed):
        yield name, (f"the cluster's ingress ranges ({listed}) together admit {total:,} internet addresses, more "
                     f"than a /{WIDEST_OPEN_PREFIX} holds; {OPT_IN_HINT}.")
