"""The nodes' RAM role: the checkpoint bucket and reporting their own health, nothing else."""

from __future__ import annotations

import json

import pulumi
import pulumi_alicloud as alicloud


def node_policy(bucket_name: str) -> dict:
    """Least privilege: read/write one bucket; list the cluster's nodes, tag them, mark them unhealthy."""
    bucket = f"acs:oss:*:*:{bucket_name}"
    return {
        "Version": "1",
        "Statement": [
            {"Effect": "Allow", "Action": ["oss:ListObjects", "oss:GetBucketInfo"], "Resource": [bucket]},
            {"Effect": "Allow", "Action": ["oss:GetObject", "oss:PutObject", "oss:DeleteObject"],
             "Resource": [f"{bucket}/*"]},
            {"Effect": "Allow", "Action": ["ecs:DescribeInstances", "ecs:TagResources", "ess:SetInstanceHealth"],
             "Resource": ["*"]},
        ],
    }


class AliIdentity(pulumi.ComponentResource):
    """Role ECS assumes, its one policy, and the attachment of the two."""

    def __init__(self, name: str, *, bucket: str, tags: dict[str, str],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:alicloud:Identity", f"{name}-identity", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        trust = {"Version": "1", "Statement": [
            {"Effect": "Allow", "Principal": {"Service": ["ecs.aliyuncs.com"]}, "Action": "sts:AssumeRole"}]}
        # The role ECS assumes for the nodes.
        self.role = alicloud.ram.Role(f"{name}-node-role", role_name=f"{name}-node",
                                      assume_role_policy_document=json.dumps(trust), tags=tags, opts=child)
        # Its only permissions.
        policy = alicloud.ram.Policy(f"{name}-node-policy", policy_name=f"{name}-node",
                                     policy_document=json.dumps(node_policy(bucket)), tags=tags, opts=child)
        # The policy on the role.
        alicloud.ram.RolePolicyAttachment(f"{name}-node-policy-attachment", role_name=self.role.role_name,
                                          policy_name=policy.policy_name, policy_type="Custom", opts=child)
        self.register_outputs({"roleName": self.role.role_name})
