"""The nodes' RAM role: the checkpoint bucket and reporting their own health, nothing else."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pulumi
import pulumi_alicloud as alicloud

from clouds.alicloud import ALICLOUD
from plan.identity import CLUSTER_TAG
from plan.permissions import ANY, BUCKET, OBJECTS, OWN_GROUPS, OWN_INSTANCES, actions

CALLS = ALICLOUD.node_calls  # what the nodes call, with the action each needs


def node_policy(bucket_name: str, *, region: str, cluster: str, scaling_groups: Sequence[str] = (),
                prefix: str = "") -> dict:
    """Least privilege: the action of each call a node makes (CloudProfile.node_calls,
    docs/cloud-facts.md#node-permissions) on one bucket (in a bucket the stack does not own, only under the cluster's
    `prefix`, listing by the `oss:Prefix` condition); list nodes; tag only the cluster's instances (by its tag) and
    mark unhealthy only in its own scaling groups (docs/cloud-facts.md#alibaba-node-permissions)."""
    bucket = f"acs:oss:*:*:{bucket_name}"
    listing = {"Condition": {"StringLike": {"oss:Prefix": [f"{prefix}*"]}}} if prefix else {}
    statements = [
        {"Effect": "Allow", "Action": actions(CALLS, BUCKET), "Resource": [bucket], **listing},
        {"Effect": "Allow", "Action": actions(CALLS, OBJECTS), "Resource": [f"{bucket}/{prefix}*"]},
        {"Effect": "Allow", "Action": actions(CALLS, ANY), "Resource": ["*"]},
        {"Effect": "Allow", "Action": actions(CALLS, OWN_INSTANCES),
         "Resource": [f"acs:ecs:{region}:*:instance/*"],
         "Condition": {"StringEquals": {f"acs:ResourceTag/{CLUSTER_TAG}": [cluster]}}},
    ]
    if scaling_groups:  # only a worker ESS launched reports to its group
        statements.append({"Effect": "Allow", "Action": actions(CALLS, OWN_GROUPS),
                           "Resource": [f"acs:ess:{region}:*:scalinggroup/{group}" for group in scaling_groups]})
    return {"Version": "1", "Statement": statements}


class AliIdentity(pulumi.ComponentResource):
    """Role ECS assumes; its one policy comes with `grant`, once the scaling groups it names exist."""

    def __init__(self, name: str, *, tags: dict[str, str], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:alicloud:Identity", f"{name}-identity", None, opts)
        self._name, self._tags = name, tags
        trust = {"Version": "1", "Statement": [
            {"Effect": "Allow", "Principal": {"Service": ["ecs.aliyuncs.com"]}, "Action": "sts:AssumeRole"}]}
        # The role ECS assumes for the nodes.
        self.role = alicloud.ram.Role(f"{name}-node-role", role_name=f"{name}-node",
                                      assume_role_policy_document=json.dumps(trust), tags=tags,
                                      opts=pulumi.ResourceOptions(parent=self))
        self.register_outputs({"roleName": self.role.role_name})

    def grant(self, bucket: pulumi.Input[str], *, prefix: str, region: str, cluster: str,
              scaling_groups: Sequence[pulumi.Input[str]]) -> None:
        child = pulumi.ResourceOptions(parent=self)
        document = pulumi.Output.all(bucket, *scaling_groups).apply(lambda names: json.dumps(
            node_policy(names[0], region=region, cluster=cluster, scaling_groups=names[1:], prefix=prefix)))
        # The role's only permissions.
        policy = alicloud.ram.Policy(f"{self._name}-node-policy", policy_name=f"{self._name}-node",
                                     policy_document=document, tags=self._tags, opts=child)
        # The policy on the role.
        alicloud.ram.RolePolicyAttachment(f"{self._name}-node-policy-attachment", role_name=self.role.role_name,
                                          policy_name=policy.policy_name, policy_type="Custom", opts=child)
