"""TcCluster: the Tencent Cloud realizer's one entry point, composing network, security, identity, storage, nodes."""

from __future__ import annotations

from typing import Any

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from components.realizers.contract import ClusterOutputs, PlacementOutput, WorkerGroupOutput
from components.realizers.outputs import plan_outputs
from components.tencentcloud.groups import TcWorkerGroups
from components.tencentcloud.identity import TcIdentity
from components.tencentcloud.instances import cvm_instance, worker_instances
from components.tencentcloud.network import TcNetwork
from components.tencentcloud.nodes import NodeArgs, Placement
from components.tencentcloud.security import TcSecurity
from components.tencentcloud.storage import TcStorage
from plan.model import HEAD, INSTANCES, SCALING_GROUP, ClusterPlan, in_scaling_groups

# No output the provider computes, besides ids, that this realizer reads.
COMPUTED: dict[str, dict[str, Any]] = {}
# The plan's spread placement as a placement group type: one node per host.
SPREAD_LEVEL = {"spread": "HOST"}


class TcCluster(pulumi.ComponentResource):
    """A ClusterPlan as Tencent Cloud resources; no decisions here, only translation."""

    def __init__(self, plan: ClusterPlan, opts: pulumi.ResourceOptions | None = None) -> None:
        name = plan.name
        super().__init__("gpufleet:tencentcloud:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = plan.tag_map
        network = TcNetwork(name, net=plan.network, zone=plan.zone, tags=tags, opts=child)
        security = TcSecurity(name, cluster=plan.identity, rules=plan.firewall, tags=tags, opts=child)
        storage = TcStorage(name, storage=plan.storage, tags=tags, object_tags=plan.object_tag_map, opts=child)
        # CAM names are the account's: the identity's. The grant names the bucket through its resource, so it waits
        # for the bucket (made or read) to exist.
        identity = TcIdentity(plan.identity, bucket=storage.bucket_name, prefix=plan.storage.prefix,
                              account_id=plan.storage.account_id,
                              region=plan.region, cluster=plan.identity,
                              in_scaling_groups=in_scaling_groups(plan.workers), tags=tags, opts=child)
        made = {}
        for group in plan.placements:
            if group.kind == "hpc-cluster":
                # The plan's HPC cluster: the RDMA domain its nodes share, in the zone.
                made[group.kind] = tencentcloud.cvm.HpcCluster(f"{name}-hpc", zone=plan.zone, name=f"{name}-hpc",
                                                               remark=f"gpufleet {plan.name}", opts=child)
            else:
                # The plan's spread placement group: at most one of its nodes per host.
                made[group.kind] = tencentcloud.placement.Group(f"{name}-{group.kind}", name=f"{name}-{group.kind}",
                                                                type=SPREAD_LEVEL[group.kind], tags=tags, opts=child)

        def joined(kind: str) -> dict[str, pulumi.Output[str]]:
            return {role: made[p.kind].id for p in plan.placements if p.kind == kind for role in p.roles}

        where = Placement(vpc_id=network.vpc.id, subnet_id=network.private.id, group_id=security.group.id,
                          role_name=identity.role.name, hpc_cluster_id=joined("hpc-cluster"),
                          spread_group_id=joined("spread"), code=storage.code)
        nodes = NodeArgs.of(plan)
        # The head: never spot, at the fixed address every worker rendezvouses with.
        head = cvm_instance(f"{name}-head", nodes, plan.head, where, nodes=HEAD, spot=False, opts=child,
                            private_ip=plan.network.head_address)
        fixed = tuple(g for g in plan.workers if g.form == INSTANCES)
        scaled = tuple(g for g in plan.workers if g.form == SCALING_GROUP)
        workers = worker_instances(name, nodes, plan.worker, fixed, where, child)
        groups = TcWorkerGroups(name, nodes, plan.worker, scaled, where, opts=child) if scaled else None
        self.outputs = ClusterOutputs(
            **plan_outputs(plan), headInstanceId=head.id, image=head.image_id,
            workerGroups=[WorkerGroupOutput(name=group.name, market=group.market, id=groups.groups[group.name].id)
                          for group in scaled],
            workerInstanceIds=[worker.id for worker in workers],
            placementGroups=[PlacementOutput(kind=kind, id=group.id) for kind, group in made.items()],
            securityGroupId=security.group.id, bucket=storage.bucket_name, bringUp=None)
        self.register_outputs(self.outputs)


def realize(plan: ClusterPlan) -> ClusterOutputs:
    return TcCluster(plan).outputs
