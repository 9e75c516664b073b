"""AwsCluster: the AWS realizer's one entry point, composing network, security, identity, storage, compute."""

from __future__ import annotations

from typing import Any

import pulumi

from components.aws.compute import AwsCompute, ComputeArgs
from components.aws.iam import AwsIdentity
from components.aws.network import AwsNetwork
from components.aws.security import AwsSecurity
from components.aws.storage import AwsStorage
from components.realizers.contract import ClusterOutputs, PlacementOutput, WorkerGroupOutput
from components.realizers.outputs import plan_outputs
from plan.model import ClusterPlan

# What AWS computes that this realizer reads (a launch template's latest version, which the nodes pin), as a first
# `pulumi up` sets it: the preview's mocks answer with it (fleet/preview.py).
COMPUTED: dict[str, dict[str, Any]] = {"aws:ec2/launchTemplate:LaunchTemplate": {"latestVersion": 1}}


class AwsCluster(pulumi.ComponentResource):
    """A ClusterPlan as AWS resources; no decisions here, only translation."""

    def __init__(self, plan: ClusterPlan, opts: pulumi.ResourceOptions | None = None) -> None:
        name = plan.name
        super().__init__("gpufleet:aws:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = plan.tag_map
        network = AwsNetwork(name, net=plan.network, zone=plan.zone, region=plan.region, tags=tags, opts=child)
        security = AwsSecurity(name, cluster=plan.identity, rules=plan.firewall, vpc_id=network.vpc.id, tags=tags,
                               opts=child)
        self.storage = AwsStorage(name, storage=plan.storage, tags=tags, object_tags=plan.object_tag_map, opts=child)
        # The grant names the bucket through its resource, so it waits for the bucket (made or read) to exist.
        identity = AwsIdentity(name, cluster=plan.identity, bucket=self.storage.bucket_name, prefix=plan.storage.prefix,
                               metric_namespace=plan.head.node.gpu_metric_namespace, tags=tags, opts=child)
        self.compute = AwsCompute(name, ComputeArgs.of(plan, network.private.id, security.group.id,
                                                       identity.profile.arn, self.storage.code), opts=child)
        self.outputs = ClusterOutputs(
            **plan_outputs(plan), headInstanceId=self.compute.head.id, image=self.compute.head.ami,
            workerGroups=[WorkerGroupOutput(name=group.name, market=group.market, id=made.name)
                          for group, made in zip(plan.workers, self.compute.workers, strict=True)],
            workerInstanceIds=[],
            placementGroups=[PlacementOutput(kind=kind, id=made.name)
                             for kind, made in self.compute.placement_groups.items()],
            securityGroupId=security.group.id, bucket=self.storage.bucket_name, bringUp=None)
        self.register_outputs(self.outputs)


def realize(plan: ClusterPlan) -> ClusterOutputs:
    return AwsCluster(plan).outputs
