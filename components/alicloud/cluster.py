"""AliCluster: the Alibaba Cloud realizer's one entry point, composing network, security, identity, storage, nodes."""

from __future__ import annotations

from typing import Any

import pulumi

from components.alicloud.head import AliHead
from components.alicloud.identity import AliIdentity
from components.alicloud.network import AliNetwork
from components.alicloud.nodes import NodeArgs
from components.alicloud.security import AliSecurity
from components.alicloud.storage import AliStorage
from components.alicloud.workers import AliWorkers, worker_instances
from components.realizers.contract import ClusterOutputs, PlacementOutput, WorkerGroupOutput
from components.realizers.outputs import plan_outputs
from plan.model import INSTANCES, SCALING_GROUP, ClusterPlan

# No output the provider computes, besides ids, that this realizer reads.
COMPUTED: dict[str, dict[str, Any]] = {}


class AliCluster(pulumi.ComponentResource):
    """A ClusterPlan as Alibaba Cloud resources; no decisions here, only translation."""

    def __init__(self, plan: ClusterPlan, opts: pulumi.ResourceOptions | None = None) -> None:
        name = plan.name
        super().__init__("gpufleet:alicloud:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = plan.tag_map
        network = AliNetwork(name, net=plan.network, zone=plan.zone, tags=tags, opts=child)
        security = AliSecurity(name, cluster=plan.identity, rules=plan.firewall, vpc_id=network.vpc.id, tags=tags,
                               opts=child)
        identity = AliIdentity(plan.identity, tags=tags, opts=child)  # RAM names are the account's: the identity's
        storage = AliStorage(name, storage=plan.storage, region=plan.region, tags=tags, opts=child)
        nodes = NodeArgs.of(plan, network.private.id, security.group.id, identity.role.role_name, storage.code)
        head = AliHead(name, nodes, plan.head, plan.network.head_address, opts=child)
        scaling = tuple(g for g in plan.workers if g.form == SCALING_GROUP)
        scaled = [AliWorkers(name, nodes, plan.worker, group, opts=child) for group in scaling]
        fixed = worker_instances(name, nodes, plan.worker, tuple(g for g in plan.workers if g.form == INSTANCES),
                                 head.deployment_set.id if head.deployment_set else None, child)
        # The grant names the bucket through its resource, so it waits for the bucket (made or read) to exist.
        identity.grant(storage.bucket_name, prefix=plan.storage.prefix, region=plan.region, cluster=plan.identity,
                       scaling_groups=[group.group.id for group in scaled])
        self.outputs = ClusterOutputs(
            **plan_outputs(plan), headInstanceId=head.instance.id, image=head.instance.image_id,
            workerGroups=[WorkerGroupOutput(name=group.name, market=group.market, id=made.group.id)
                          for group, made in zip(scaling, scaled, strict=True)],
            workerInstanceIds=[worker.id for worker in fixed],
            # The head's deployment set, made for the placement the head joins.
            placementGroups=[PlacementOutput(kind=p.kind, id=head.deployment_set.id)
                             for p in nodes.placements_of(plan.head)],
            securityGroupId=security.group.id, bucket=storage.bucket_name, bringUp=None)
        self.register_outputs(self.outputs)


def realize(plan: ClusterPlan) -> ClusterOutputs:
    return AliCluster(plan).outputs
