"""TcCluster: the Tencent Cloud realizer's one entry point, composing network, security, identity, storage, nodes."""

from __future__ import annotations

from typing import Any

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from components.clouds.tencentcloud import is_hcc
from components.plan.model import ClusterPlan
from components.realizers.outputs import plan_outputs
from components.tencentcloud.groups import TcWorkerGroups
from components.tencentcloud.identity import TcIdentity
from components.tencentcloud.instances import cvm_instance, hcc_workers
from components.tencentcloud.network import TcNetwork
from components.tencentcloud.nodes import Placement
from components.tencentcloud.security import TcSecurity
from components.tencentcloud.storage import TcStorage


class TcCluster(pulumi.ComponentResource):
    """A ClusterPlan as Tencent Cloud resources; no decisions here, only translation."""

    def __init__(self, plan: ClusterPlan, opts: pulumi.ResourceOptions | None = None) -> None:
        name = plan.name
        super().__init__("gpufleet:tencentcloud:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        network = TcNetwork(name, plan, opts=child)
        security = TcSecurity(name, plan, opts=child)
        identity = TcIdentity(name, plan, opts=child)
        storage = TcStorage(name, plan, opts=child)
        hpc = spread = None
        if is_hcc(plan.instance):
            # HCC types: every node in one HPC cluster in the zone, the RDMA domain.
            hpc = tencentcloud.cvm.HpcCluster(f"{name}-hpc", zone=plan.zone, name=f"{name}-hpc",
                                              remark=f"gpufleet {plan.name}", opts=child)
        if plan.anti_affinity:
            # A spread placement group: at most one node per host, only because the stack asked for anti-affinity.
            spread = tencentcloud.placement.Group(f"{name}-spread", name=f"{name}-spread", type="HOST",
                                                  tags=plan.tag_map, opts=child)
        where = Placement(vpc_id=network.vpc.id, subnet_id=network.private.id, group_id=security.group.id,
                          role_name=identity.role.name, hpc_cluster_id=hpc.id if hpc else None,
                          spread_group_id=spread.id if spread else None)
        # The head: never spot, at the fixed address every worker rendezvouses with.
        head = cvm_instance(f"{name}-head", plan, plan.head, where, spot=False, opts=child,
                            private_ip=plan.network.head_address)
        workers = hcc_workers(name, plan, where, child) if hpc else []
        groups = TcWorkerGroups(name, plan, where, opts=child) if not hpc and plan.scaling.workers_max > 0 else None
        self.outputs: dict[str, Any] = {
            **plan_outputs(plan),
            "headInstanceId": head.id,
            "image": head.image_id,
            "workerGroups": {market: group.id for market, group in groups.groups.items()} if groups else None,
            "workerInstanceIds": [worker.id for worker in workers] or None,
            "hpcClusterId": hpc.id if hpc else None,
            "securityGroupId": security.group.id,
            "bucket": storage.bucket.bucket,
        }
        self.register_outputs(self.outputs)


def realize(plan: ClusterPlan) -> dict[str, Any]:
    return TcCluster(plan).outputs
