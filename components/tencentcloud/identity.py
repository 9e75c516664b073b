"""The nodes' CAM role: the checkpoint bucket and reporting their own health, nothing else."""

from __future__ import annotations

import json

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from clouds.tencentcloud import TENCENTCLOUD
from plan.identity import CLUSTER_TAG
from plan.permissions import ANY, BUCKET, OBJECTS, OWN_GROUPS, actions

CALLS = TENCENTCLOUD.node_calls  # what the nodes call, with the action each needs


def node_policy(bucket_name: str, account_id: str | None, region: str, cluster: str, *,
                in_scaling_groups: bool = True, prefix: str = "") -> dict:
    """Least privilege: the action of each call a node makes (CloudProfile.node_calls,
    docs/cloud-facts.md#node-permissions) on one bucket (in a bucket the stack does not own, only under the cluster's
    `prefix`, listing by the `cos:prefix` condition); list nodes; take a failed node only out of a group that
    carries the cluster's tag (qcs:resource_tag, docs/cloud-facts.md#tencent-node-permissions), where AS launched
    some of its nodes (`in_scaling_groups`)."""
    bucket = f"qcs::cos:{region}:uid/{account_id}:{bucket_name}"
    listing = {"condition": {"string_like": {"cos:prefix": [f"{prefix}*"]}}} if prefix else {}
    statements = [
        {"effect": "allow", "action": actions(CALLS, BUCKET), "resource": [f"{bucket}/"], **listing},
        {"effect": "allow", "action": actions(CALLS, OBJECTS), "resource": [f"{bucket}/{prefix}*"]},
        {"effect": "allow", "action": actions(CALLS, ANY, groups=in_scaling_groups), "resource": ["*"]},
    ]
    if in_scaling_groups:
        statements.append({"effect": "allow", "action": actions(CALLS, OWN_GROUPS), "resource": ["*"],
                           "condition": {"for_any_value:string_equal": {
                               "qcs:resource_tag": [f"{CLUSTER_TAG}&{cluster}"]}}})
    return {"version": "2.0", "statement": statements}


class TcIdentity(pulumi.ComponentResource):
    """Role CVM assumes, its one policy, and the attachment of the two."""

    def __init__(self, name: str, *, bucket: pulumi.Input[str], prefix: str, account_id: str | None, region: str,
                 cluster: str, in_scaling_groups: bool, tags: dict[str, str],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:tencentcloud:Identity", f"{name}-identity", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        trust = {"version": "2.0", "statement": [
            {"action": "name/sts:AssumeRole", "effect": "allow", "principal": {"service": ["cvm.qcloud.com"]}}]}
        # The role CVM assumes for the nodes.
        self.role = tencentcloud.cam.Role(f"{name}-node-role", name=f"{name}-node", document=json.dumps(trust),
                                          console_login=False, tags=tags, opts=child)
        # Its only permissions.
        policy = tencentcloud.cam.Policy(f"{name}-node-policy", name=f"{name}-node",
                                         document=pulumi.Output.from_input(bucket).apply(
                                             lambda made: json.dumps(node_policy(
                                                 made, account_id, region, cluster,
                                                 in_scaling_groups=in_scaling_groups, prefix=prefix))),
                                         opts=child)
        # The policy on the role.
        tencentcloud.cam.RolePolicyAttachment(f"{name}-node-policy-attachment", role_id=self.role.id,
                                              policy_id=policy.id, opts=child)
        self.register_outputs({"roleName": self.role.name})
