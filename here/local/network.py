"""Network namespaces: a bridge namespace holding br0 (and the fake metadata endpoint's address), and one namespace
per node whose eth0 is a veth on that bridge. Nothing is added to the host's own network; deleting the namespaces
deletes every link with them."""

from __future__ import annotations

from here.local.errors import sh
from here.local.layout import Layout, Node

NETNS_DIR = "/run/netns"  # where `ip netns add` names its namespaces


def inside(namespace: str, *cmd: str) -> list[str]:
    """cmd run in the namespace's network and nothing else. `ip netns exec` (and `ip -n`) also make a mount namespace
    and remount /sys, which nothing here needs and which fails where / is not a mount point (a chroot)."""
    return ["nsenter", f"--net={NETNS_DIR}/{namespace}", *cmd]


def existing() -> set[str]:
    return {line.split()[0] for line in sh("ip", "netns", "list").stdout.splitlines() if line.strip()}


def create_bridge(lay: Layout) -> None:
    ns = lay.bridge_namespace
    sh("ip", "netns", "add", ns)
    sh(*inside(ns, "ip"), "link", "add", lay.bridge, "type", "bridge")
    sh(*inside(ns, "ip"), "addr", "add", f"{lay.metadata_address}/{lay.prefix_len}", "dev", lay.bridge)
    for link in (lay.bridge, "lo"):
        sh(*inside(ns, "ip"), "link", "set", link, "up")


def create_node(lay: Layout, node: Node, mtu: int) -> None:
    """The node's namespace with eth0 at its plan address (the interface name the plan's NCCL/gloo env expects)."""
    sh("ip", "netns", "add", node.namespace)
    sh("ip", "link", "add", "eth0", "netns", node.namespace, "mtu", str(mtu), "type", "veth",
       "peer", "name", node.veth, "netns", lay.bridge_namespace)
    sh(*inside(node.namespace, "ip"), "addr", "add", f"{node.address}/{lay.prefix_len}", "dev", "eth0")
    for link in ("eth0", "lo"):
        sh(*inside(node.namespace, "ip"), "link", "set", link, "up")
    sh(*inside(lay.bridge_namespace, "ip"), "link", "set", node.veth, "mtu", str(mtu), "master", lay.bridge, "up")


def slow_link(namespace: str, rate: str) -> None:
    """Fault injection: shape the node's eth0 to ``rate`` (tc's units, e.g. 20mbit) with a token bucket, both ways a
    slow NIC or a degraded link is slow for the node's collectives (this kernel has tbf, not netem)."""
    sh(*inside(namespace, "tc"), "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", rate, "burst", "32kbit",
       "latency", "100ms")


def cut(lay: Layout, node: Node) -> None:
    """Fault injection: the node's link on the bridge goes down, so whatever it sends or is sent is dropped without a
    word (no reset, no refusal), as when a switch or a cable fails."""
    sh(*inside(lay.bridge_namespace, "ip"), "link", "set", node.veth, "down")


def pids(namespace: str) -> list[int]:
    result = sh("ip", "netns", "pids", namespace, check=False)
    return [int(p) for p in result.stdout.split()] if result.returncode == 0 else []


def delete(namespace: str) -> None:
    """Idempotent: a namespace that is already gone is fine."""
    sh("ip", "netns", "del", namespace, check=False)
