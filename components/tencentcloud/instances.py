"""Plain CVM instances: the head (on-demand, fixed address) and, for HCC types, every worker."""

from __future__ import annotations

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from components.plan.model import ClusterPlan, RolePlan
from components.realizers.encoding import gzip_base64
from components.realizers.images import image_ignore_changes
from components.tencentcloud.nodes import SYSTEM_DISK, Placement, market_args


def cvm_instance(resource_name: str, plan: ClusterPlan, role: RolePlan, where: Placement, *, spot: bool,
                 opts: pulumi.ResourceOptions, private_ip: str | None = None) -> tencentcloud.instance.Instance:
    """One node: no public address, the cluster's group and role, the plan's user-data, its HPC cluster if any."""
    tags = {**plan.tag_map, "gpufleet:role": role.role}
    # One node of the plan.
    return tencentcloud.instance.Instance(
        resource_name, instance_name=resource_name, availability_zone=plan.zone, instance_type=plan.instance.name,
        image_id=plan.image.ref, vpc_id=where.vpc_id, subnet_id=where.subnet_id, private_ip=private_ip,
        orderly_security_groups=[where.group_id], allocate_public_ip=False, system_disk_type=SYSTEM_DISK,
        system_disk_size=plan.storage.root_volume_gb, cam_role_name=where.role_name,
        user_data=gzip_base64(role.user_data), hpc_cluster_id=where.hpc_cluster_id,
        placement_group_id=where.spread_group_id, tags=tags,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            ignore_changes=image_ignore_changes(plan.image))),
        **market_args(plan, spot, "instance"))


def hcc_workers(name: str, plan: ClusterPlan, where: Placement,
                opts: pulumi.ResourceOptions) -> list[tencentcloud.instance.Instance]:
    """A fixed worker count (the spec keeps HCC clusters fixed), split on-demand first, then spot."""
    on_demand, spot = plan.market.split(plan.scaling.workers_desired)
    return [cvm_instance(f"{name}-worker-{index}", plan, plan.worker, where, spot=index >= on_demand, opts=opts)
            for index in range(on_demand + spot)]
