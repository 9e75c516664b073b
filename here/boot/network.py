"""The harness's network: the local cluster's bridge namespace and node namespaces (here.local.network), named
by one short tag so several harnesses and local clusters can run side by side.

The bridge's own address is the subnet's first host, as in the local cluster: here it is the VPC's router (each
node's default route) and the address of the harness's services (object store, PyPI mirror). The cloud's metadata
address (169.254.169.254, 100.100.100.200, 169.254.0.23) sits on the bridge too, so a node reaches it the way an
instance does, and nothing of it touches the host's own network.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path

from here.local import network as local_network
from here.local.errors import sh
from here.local.layout import Layout, Node
from plan.model import ClusterPlan


@dataclass(frozen=True)
class BootNetwork:
    """One harness's bridge and nodes (a local-cluster Layout), the router's address and the link-local services."""

    layout: Layout
    gateway: str
    service_addresses: tuple[str, ...]

    @property
    def namespace(self) -> str:
        return self.layout.bridge_namespace


def plan_network(tag: str, plan: ClusterPlan, roles: tuple[str, ...], directory: Path,
                 service_addresses: tuple[str, ...]) -> BootNetwork:
    """The head at the plan's head address, the other nodes after it (a cloud's DHCP would pick them)."""
    subnet = ipaddress.IPv4Network(plan.network.private.cidr)
    addresses = plan.network.node_addresses(len(roles))
    nodes = tuple(Node(name=f"{role}-{index}" if role != "head" else "head", role=role, address=address,
                       namespace=f"{tag}-{index}", veth=f"{tag}v{index}", root=directory / f"node-{index}", spot=False)
                  for index, (role, address) in enumerate(zip(roles, addresses, strict=True)))
    gateway = str(subnet.network_address + 1)
    lay = Layout(cluster=tag, directory=directory, bridge_namespace=f"{tag}-net", bridge="br0",
                 metadata_address=gateway, prefix_len=subnet.prefixlen, members=addresses, nodes=nodes)
    return BootNetwork(layout=lay, gateway=gateway, service_addresses=service_addresses)


def create(net: BootNetwork, mtu: int) -> None:
    lay = net.layout
    local_network.create_bridge(lay)
    for address in net.service_addresses:
        sh("ip", "-n", lay.bridge_namespace, "addr", "add", f"{address}/32", "dev", lay.bridge)
    for node in lay.nodes:
        local_network.create_node(lay, node, mtu)
        sh("ip", "-n", node.namespace, "route", "add", "default", "via", net.gateway)


def mac(namespace: str, device: str = "eth0") -> str:
    return json.loads(sh("ip", "-j", "-n", namespace, "link", "show", device).stdout)[0]["address"]


def delete(net: BootNetwork) -> None:
    """Idempotent; deleting a namespace deletes its links."""
    for node in net.layout.nodes:
        local_network.delete(node.namespace)
    local_network.delete(net.layout.bridge_namespace)
