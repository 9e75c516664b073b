"""The plan's firewall rules as an nftables ruleset inside one node's namespace.

Ingress is default-drop like a security group: loopback, replies to the node's own connections, and each plan ingress
rule are accepted. peer "self" is the set of cluster member addresses. Egress stays open: a local node has no route
beyond the bridge, so the plan's egress allow-list has nothing to restrict.
"""

from __future__ import annotations

import ipaddress

from here.local import network
from here.local.errors import sh
from plan.model import FirewallRule

TABLE = "gpufleet"
ALL_PORTS = (0, 65535)


def _match(rule: FirewallRule) -> str:
    if rule.peer == "self":
        source = "ip saddr @members"
    else:
        family = "ip6" if ipaddress.ip_network(rule.peer, strict=False).version == 6 else "ip"
        source = f"{family} saddr {rule.peer}"
    if rule.protocol == "all":
        return source
    if (rule.from_port, rule.to_port) == ALL_PORTS or rule.protocol not in ("tcp", "udp"):
        return f"{source} meta l4proto {rule.protocol}"
    ports = str(rule.from_port) if rule.from_port == rule.to_port else f"{rule.from_port}-{rule.to_port}"
    return f"{source} {rule.protocol} dport {ports}"


def ruleset(rules: tuple[FirewallRule, ...], members: tuple[str, ...]) -> str:
    """The nft script for one node; re-applying it replaces the table."""
    accept = [f'    {_match(r)} accept comment "{r.description}"' for r in rules if r.direction == "ingress"]
    return "\n".join([
        f"table inet {TABLE}",
        f"delete table inet {TABLE}",
        f"table inet {TABLE} {{",
        f"  set members {{ type ipv4_addr; elements = {{ {', '.join(members)} }} }}",
        "  chain input {",
        "    type filter hook input priority filter; policy drop;",
        '    iif "lo" accept',
        "    ct state established,related accept",
        *accept,
        "  }",
        "}",
        "",
    ])


def apply(namespace: str, script: str) -> None:
    sh(*network.inside(namespace, "nft", "-f", "-"), stdin=script)


def close_ports(namespace: str, low: int, high: int) -> None:
    """Fault injection: drop new TCP connections to these ports ahead of every accept rule (a security group missing a
    rule: like one, it still lets the replies to the node's own connections in, whatever their port)."""
    ports = str(low) if low == high else f"{low}-{high}"
    sh(*network.inside(namespace, "nft", "insert", "rule", "inet", TABLE, "input", "ct", "state", "new", "tcp",
                       "dport", ports, "drop"))
