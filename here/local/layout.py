"""Names, addresses and paths of one local cluster, derived from its plan: one place, so up, down and status agree."""

from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from plan.model import SPOT, ClusterPlan

STATE_ROOT = Path("/tmp")


@dataclass(frozen=True)
class Node:
    """One local node: its name, role, private address, namespace, host-side veth and root directory."""

    name: str
    role: str
    address: str
    namespace: str
    veth: str
    root: Path
    spot: bool

    @property
    def log(self) -> Path:
        return self.root.parent / f"{self.name}.log"


@dataclass(frozen=True)
class Layout:
    """Where everything of one cluster lives. The bucket path is the plan's own file:// checkpoint location."""

    cluster: str
    directory: Path
    bridge_namespace: str
    bridge: str
    metadata_address: str
    prefix_len: int
    members: tuple[str, ...]
    nodes: tuple[Node, ...]

    @property
    def state_file(self) -> Path:
        return self.directory / "state.json"

    @property
    def bucket(self) -> Path:
        return self.directory / "bucket"

    @property
    def metadata(self) -> Path:
        """The metadata service's state: its instances, and their spot notices (here.metadata.state)."""
        return self.directory / "metadata"

    @property
    def replacements(self) -> Path:
        """One file per node a `fleet drill rejoin` asked to come back (the scaling group's replacement machine)."""
        return self.directory / "replace"

    @property
    def cut_off(self) -> Path:
        """One file per node a `fleet drill cut` cut off the network."""
        return self.directory / "cut"

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)


def _short(name: str) -> str:
    """Interface names have 15 characters: a short stable hash keeps two clusters' links apart."""
    return hashlib.sha256(name.encode()).hexdigest()[:5]


def layout(plan: ClusterPlan) -> Layout:
    """The head at the plan's head address, workers after it; the bridge's own address (the fake metadata
    endpoint) is the first host of the private subnet, outside the members' set the firewall trusts. Everything is
    named by the cluster's identity, not its name, which two stacks may share: neither may see, nor `fleet down`
    remove, the other's directory, checkpoints or namespaces."""
    directory = STATE_ROOT / f"gpufleet-{plan.identity}"
    subnet = ipaddress.IPv4Network(plan.network.private.cidr)
    tag = _short(plan.identity)
    addresses = plan.network.node_addresses(plan.scaling.nodes_desired)
    spot = [False] + [group.market == SPOT for group in plan.workers for _ in range(group.desired)]
    nodes = tuple(
        Node(name="head" if index == 0 else f"worker-{index}", role="head" if index == 0 else "worker",
             address=address, namespace=f"gpufleet-{plan.identity}-{index}", veth=f"gf{tag}v{index}",
             root=directory / "nodes" / ("head" if index == 0 else f"worker-{index}"), spot=spot[index])
        for index, address in enumerate(addresses))
    return Layout(cluster=plan.name, directory=directory, bridge_namespace=f"gpufleet-{plan.identity}-net",
                  bridge="br0", metadata_address=str(subnet.network_address + 1), prefix_len=subnet.prefixlen,
                  members=plan.network.node_addresses(plan.scaling.nodes_max), nodes=nodes)
