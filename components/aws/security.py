"""The cluster's security group: the plan's rules, one rule resource each, `self` meaning the group itself."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from plan.model import FirewallRule


def _protocol_args(rule: FirewallRule) -> dict:
    if rule.protocol == "all":
        return {"ip_protocol": "-1"}
    return {"ip_protocol": rule.protocol, "from_port": rule.from_port, "to_port": rule.to_port}


class AwsSecurity(pulumi.ComponentResource):
    """One security group for every node and every interface of a node."""

    def __init__(self, name: str, *, cluster: str, rules: tuple[FirewallRule, ...], vpc_id: pulumi.Input[str],
                 tags: dict[str, str], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:Security", f"{name}-security", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # The group itself carries no inline rules, so each rule below is its own reviewable resource.
        self.group = aws.ec2.SecurityGroup(f"{name}-sg", vpc_id=vpc_id, description=f"gpufleet {cluster} nodes",
                                           tags={**tags, "Name": f"{name}-sg"}, opts=child)
        for index, rule in enumerate(rules):
            peer = ({"referenced_security_group_id": self.group.id} if rule.peer == "self"
                    else {"cidr_ipv4": rule.peer})
            kind = aws.vpc.SecurityGroupIngressRule if rule.direction == "ingress" else aws.vpc.SecurityGroupEgressRule
            # One rule of the plan's firewall.
            kind(f"{name}-{rule.direction}-{index}", security_group_id=self.group.id, description=rule.description,
                 tags=tags, opts=child, **peer, **_protocol_args(rule))
        self.register_outputs({"securityGroupId": self.group.id})
