"""The nodes' role: the checkpoint bucket and reporting their own health, nothing else."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws


def node_policy(cluster: str, bucket_name: str) -> dict:
    """Least privilege: read/write one bucket; tag and mark unhealthy only resources of this cluster."""
    bucket = f"arn:aws:s3:::{bucket_name}"
    own = {"StringEquals": {"aws:ResourceTag/gpufleet:cluster": cluster}}
    own_group = {"StringEquals": {"autoscaling:ResourceTag/gpufleet:cluster": cluster}}
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "ListCheckpointBucket", "Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [bucket]},
            {"Sid": "UseCheckpointBucket", "Effect": "Allow",
             "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"], "Resource": [f"{bucket}/*"]},
            {"Sid": "TagOwnInstance", "Effect": "Allow", "Action": ["ec2:CreateTags"],
             "Resource": ["arn:aws:ec2:*:*:instance/*"], "Condition": own},
            {"Sid": "ReportOwnHealth", "Effect": "Allow", "Action": ["autoscaling:SetInstanceHealth"],
             "Resource": ["*"], "Condition": own_group},
            {"Sid": "PublishGpuMetrics", "Effect": "Allow", "Action": ["cloudwatch:PutMetricData"],
             "Resource": ["*"], "Condition": {"StringEquals": {"cloudwatch:namespace": "gpufleet"}}},
        ],
    }


class AwsIdentity(pulumi.ComponentResource):
    """Role, inline policy and instance profile for every node."""

    def __init__(self, name: str, *, cluster: str, bucket: str, tags: dict[str, str],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:Identity", f"{name}-identity", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        assume = {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
        # The role EC2 assumes for the nodes.
        self.role = aws.iam.Role(f"{name}-node-role", assume_role_policy=json.dumps(assume), tags=tags,
                                 opts=child)
        # Its only permissions.
        aws.iam.RolePolicy(f"{name}-node-policy", role=self.role.id, policy=json.dumps(node_policy(cluster, bucket)),
                           opts=child)
        # The profile the launch templates attach.
        self.profile = aws.iam.InstanceProfile(f"{name}-node-profile", role=self.role.name, tags=tags,
                                               opts=child)
        self.register_outputs({"roleArn": self.role.arn})
