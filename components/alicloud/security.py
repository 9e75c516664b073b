"""The cluster's security group: the plan's firewall rules, `self` meaning the group itself (intranet)."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from plan.model import FirewallRule


def rule_args(rule: FirewallRule) -> dict:
    """One plan rule as SecurityGroupRule arguments: "all" is port range -1/-1, tcp/udp is "low/high"."""
    ports = "-1/-1" if rule.protocol == "all" else f"{rule.from_port}/{rule.to_port}"
    args = {"type": rule.direction, "ip_protocol": rule.protocol, "port_range": ports, "policy": "accept",
            "description": rule.description}
    return args | ({"nic_type": "intranet"} if rule.peer == "self" else {"cidr_ip": rule.peer})


class AliSecurity(pulumi.ComponentResource):
    """One security group for every node and every interface (ERIs share it)."""

    def __init__(self, name: str, *, cluster: str, rules: tuple[FirewallRule, ...], vpc_id: pulumi.Input[str],
                 tags: dict[str, str], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:alicloud:Security", f"{name}-security", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # Members do not reach each other implicitly (Drop): only the plan's rules below open traffic.
        self.group = alicloud.ecs.SecurityGroup(f"{name}-sg", vpc_id=vpc_id, security_group_type="normal",
                                                inner_access_policy="Drop", security_group_name=f"{name}-sg",
                                                description=f"gpufleet {cluster} nodes", tags=tags,
                                                opts=child)
        for index, rule in enumerate(rules):
            peer = {"source_security_group_id": self.group.id} if rule.peer == "self" else {}
            # One rule of the plan's firewall.
            alicloud.ecs.SecurityGroupRule(f"{name}-{rule.direction}-{index}", security_group_id=self.group.id,
                                           opts=child, **rule_args(rule), **peer)
        self.register_outputs({"securityGroupId": self.group.id})
