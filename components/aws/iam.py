"""The nodes' role: exactly the calls the nodes make, scoped to the cluster, and Session Manager."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

from clouds.aws import AWS
from plan.permissions import ANY, BUCKET, METRIC, OBJECTS, OWN_GROUPS, OWN_INSTANCES, SESSION, actions

CALLS = AWS.node_calls  # what the nodes call, with the action each needs
# What SSM Agent needs for Session Manager, as AWS's own AWSCloud9SSMInstanceProfile policy grants it
# (docs/cloud-facts.md#aws-session-manager).
SESSION_MANAGER = actions(CALLS, SESSION)


def node_policy(cluster: str, bucket_name: str, metric_namespace: str, prefix: str = "") -> dict:
    """Least privilege: the action of each call a node makes (CloudProfile.node_calls,
    docs/cloud-facts.md#node-permissions), on this cluster's resources where AWS allows: in a bucket the stack does
    not own, only under the cluster's `prefix` (StoragePlan.prefix; listing by the `s3:prefix` condition); the GPU
    metric only in the cluster's own namespace, where the plan has the nodes publish it
    (NodePlan.gpu_metric_namespace, "" = none).

    Describe calls and the Session Manager channel take no resource or tag condition (AWS's service authorization
    reference lists none for them): they read, or act only on the calling instance's own registration.
    """
    bucket = f"arn:aws:s3:::{bucket_name}"
    own = {"StringEquals": {"aws:ResourceTag/gpufleet:cluster": cluster}}
    own_group = {"StringEquals": {"autoscaling:ResourceTag/gpufleet:cluster": cluster}}
    listing = {"Condition": {"StringLike": {"s3:prefix": [f"{prefix}*"]}}} if prefix else {}
    # gpufleet-gpu-metric: the GPU utilisation the workers scale on, in the cluster's own namespace only.
    metric = [{"Sid": "PublishGpuMetrics", "Effect": "Allow", "Action": actions(CALLS, METRIC),
               "Resource": ["*"], "Condition": {"StringEquals": {"cloudwatch:namespace": metric_namespace}}}]
    return {
        "Version": "2012-10-17",
        "Statement": [
            # gpufleet-store: code bundle, checkpoints and failure records.
            {"Sid": "ListCheckpointBucket", "Effect": "Allow", "Action": actions(CALLS, BUCKET),
             "Resource": [bucket], **listing},
            {"Sid": "UseCheckpointBucket", "Effect": "Allow", "Action": actions(CALLS, OBJECTS),
             "Resource": [f"{bucket}/{prefix}*"]},
            # gpufleet-report: tag the node failed.
            {"Sid": "TagOwnInstance", "Effect": "Allow", "Action": actions(CALLS, OWN_INSTANCES),
             "Resource": ["arn:aws:ec2:*:*:instance/*"], "Condition": own},
            # gpufleet-report and gpufleet-spot: hand the node to its group to replace, let a drain go on.
            {"Sid": "ActInOwnGroup", "Effect": "Allow", "Action": actions(CALLS, OWN_GROUPS), "Resource": ["*"],
             "Condition": own_group},
            # gpufleet-spot finds its group, gpufleet-discover (head) the cluster's nodes as scrape targets.
            {"Sid": "Describe", "Effect": "Allow", "Action": actions(CALLS, ANY), "Resource": ["*"]},
            *(metric if metric_namespace else []),
            # SSM Session Manager, the way in (no SSH port, no key pair): the agent's registration and channels.
            {"Sid": "SessionManager", "Effect": "Allow", "Action": SESSION_MANAGER, "Resource": ["*"]},
        ],
    }


class AwsIdentity(pulumi.ComponentResource):
    """Role, inline policy and instance profile for every node."""

    def __init__(self, name: str, *, cluster: str, bucket: pulumi.Input[str], prefix: str, metric_namespace: str,
                 tags: dict[str, str], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:Identity", f"{name}-identity", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        assume = {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
        # The role EC2 assumes for the nodes.
        self.role = aws.iam.Role(f"{name}-node-role", assume_role_policy=json.dumps(assume), tags=tags,
                                 opts=child)
        # Its only permissions.
        aws.iam.RolePolicy(f"{name}-node-policy", role=self.role.id,
                           policy=pulumi.Output.from_input(bucket).apply(lambda made: json.dumps(
                               node_policy(cluster, made, metric_namespace, prefix))), opts=child)
        # The profile the launch templates attach.
        self.profile = aws.iam.InstanceProfile(f"{name}-node-profile", role=self.role.name, tags=tags,
                                               opts=child)
        self.register_outputs({"roleArn": self.role.arn})
