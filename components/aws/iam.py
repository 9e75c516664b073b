"""The nodes' role: exactly the calls the node scripts make, scoped to the cluster, and Session Manager."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

# What SSM Agent needs for Session Manager, as AWS's own AWSCloud9SSMInstanceProfile policy grants it
# (docs/cloud-facts.md#aws-session-manager).
SESSION_MANAGER = ["ssm:UpdateInstanceInformation", "ssmmessages:CreateControlChannel",
                   "ssmmessages:CreateDataChannel", "ssmmessages:OpenControlChannel", "ssmmessages:OpenDataChannel"]


def node_policy(cluster: str, bucket_name: str, gpu_metric: bool) -> dict:
    """Least privilege: each call a node script makes (cloud-init/clouds/aws.sh), on this cluster's resources where
    AWS allows; the GPU metric only where the plan has the nodes publish it (RolePlan.gpu_metric).

    Describe calls and the Session Manager channel take no resource or tag condition (AWS's service authorization
    reference lists none for them): they read, or act only on the calling instance's own registration.
    """
    bucket = f"arn:aws:s3:::{bucket_name}"
    own = {"StringEquals": {"aws:ResourceTag/gpufleet:cluster": cluster}}
    own_group = {"StringEquals": {"autoscaling:ResourceTag/gpufleet:cluster": cluster}}
    # gpufleet-gpu-metric: the GPU utilisation the workers scale on, in the gpufleet namespace only.
    metric = [{"Sid": "PublishGpuMetrics", "Effect": "Allow", "Action": ["cloudwatch:PutMetricData"],
               "Resource": ["*"], "Condition": {"StringEquals": {"cloudwatch:namespace": "gpufleet"}}}]
    return {
        "Version": "2012-10-17",
        "Statement": [
            # gpufleet-store: code bundle and checkpoints.
            {"Sid": "ListCheckpointBucket", "Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [bucket]},
            {"Sid": "UseCheckpointBucket", "Effect": "Allow",
             "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"], "Resource": [f"{bucket}/*"]},
            # gpufleet-report: tag the node failed and hand it to the group to replace.
            {"Sid": "TagOwnInstance", "Effect": "Allow", "Action": ["ec2:CreateTags"],
             "Resource": ["arn:aws:ec2:*:*:instance/*"], "Condition": own},
            {"Sid": "ReportOwnHealth", "Effect": "Allow", "Action": ["autoscaling:SetInstanceHealth"],
             "Resource": ["*"], "Condition": own_group},
            # gpufleet-spot: a worker the group terminates checkpoints, then lets the termination go on.
            {"Sid": "CompleteOwnDrain", "Effect": "Allow", "Action": ["autoscaling:CompleteLifecycleAction"],
             "Resource": ["*"], "Condition": own_group},
            {"Sid": "FindOwnGroup", "Effect": "Allow", "Action": ["autoscaling:DescribeAutoScalingInstances"],
             "Resource": ["*"]},
            # gpufleet-discover (head): the cluster's nodes as scrape targets, found by their cluster tag.
            {"Sid": "DiscoverNodes", "Effect": "Allow", "Action": ["ec2:DescribeInstances"], "Resource": ["*"]},
            *(metric if gpu_metric else []),
            # SSM Session Manager, the way in (no SSH port, no key pair): the agent's registration and channels.
            {"Sid": "SessionManager", "Effect": "Allow", "Action": SESSION_MANAGER, "Resource": ["*"]},
        ],
    }


class AwsIdentity(pulumi.ComponentResource):
    """Role, inline policy and instance profile for every node."""

    def __init__(self, name: str, *, cluster: str, bucket: str, gpu_metric: bool, tags: dict[str, str],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:Identity", f"{name}-identity", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        assume = {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
        # The role EC2 assumes for the nodes.
        self.role = aws.iam.Role(f"{name}-node-role", assume_role_policy=json.dumps(assume), tags=tags,
                                 opts=child)
        # Its only permissions.
        aws.iam.RolePolicy(f"{name}-node-policy", role=self.role.id,
                           policy=json.dumps(node_policy(cluster, bucket, gpu_metric)), opts=child)
        # The profile the launch templates attach.
        self.profile = aws.iam.InstanceProfile(f"{name}-node-profile", role=self.role.name, tags=tags,
                                               opts=child)
        self.register_outputs({"roleArn": self.role.arn})
