"""The cluster's security group and one rule set: the plan's firewall, `self` meaning the group itself."""

from __future__ import annotations

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from plan.model import FirewallRule


def rule_entry(rule: FirewallRule, group_id: pulumi.Input[str]) -> dict:
    """One plan rule as a GroupRuleSet entry: protocol ALL takes port "all", tcp/udp "low-high" or one port."""
    if rule.protocol == "all":
        protocol, port = "ALL", "all"
    else:
        protocol = rule.protocol.upper()
        port = str(rule.from_port) if rule.from_port == rule.to_port else f"{rule.from_port}-{rule.to_port}"
    peer = {"source_security_id": group_id} if rule.peer == "self" else {"cidr_block": rule.peer}
    return {"action": "ACCEPT", "protocol": protocol, "port": port, "description": rule.description, **peer}


class TcSecurity(pulumi.ComponentResource):
    """One security group for every node."""

    def __init__(self, name: str, *, cluster: str, rules: tuple[FirewallRule, ...], tags: dict[str, str],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:tencentcloud:Security", f"{name}-security", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # The group: nothing in or out but the rule set below.
        self.group = tencentcloud.security.Group(f"{name}-sg", name=f"{name}-sg",
                                                 description=f"gpufleet {cluster} nodes", tags=tags,
                                                 opts=child)
        entries = {direction: [rule_entry(rule, self.group.id) for rule in rules
                               if rule.direction == direction] for direction in ("ingress", "egress")}
        # The plan's firewall, all rules of the group in one ordered set.
        tencentcloud.security.GroupRuleSet(f"{name}-rules", security_group_id=self.group.id,
                                           ingresses=entries["ingress"], egresses=entries["egress"], opts=child)
        self.register_outputs({"securityGroupId": self.group.id})
