"""Plain CVM instances: the head (on-demand, fixed address) and the workers of an `instances` plan group."""

from __future__ import annotations

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from components.realizers.encoding import gzip_base64
from components.realizers.images import image_ignore_changes
from components.realizers.rollout import node_options
from components.tencentcloud.nodes import SYSTEM_DISK, NodeArgs, Placement, market_args
from plan.model import SPOT, RolePlan, WorkerGroupPlan
from plan.rollout import rollout_of


def cvm_instance(resource_name: str, args: NodeArgs, role: RolePlan, where: Placement, *, nodes: str, spot: bool,
                 opts: pulumi.ResourceOptions, private_ip: str | None = None) -> tencentcloud.instance.Instance:
    """One node: no public address, the cluster's group and role, the plan's user-data, its role's placements.
    Replaced when its user-data changes (the provider's user_data_replace_on_change: it would otherwise update it
    in place, which re-runs no bootstrap: docs/cloud-facts.md#rollout-tencent); `nodes` names its set in the
    plan's rollout."""
    # One node of the plan.
    return tencentcloud.instance.Instance(
        resource_name, instance_name=resource_name, availability_zone=args.zone, instance_type=args.instance_type,
        image_id=args.image.ref, vpc_id=where.vpc_id, subnet_id=where.subnet_id, private_ip=private_ip,
        orderly_security_groups=[where.group_id], allocate_public_ip=False, system_disk_type=SYSTEM_DISK,
        system_disk_size=args.root_volume_gb, cam_role_name=where.role_name,
        user_data=gzip_base64(role.user_data), user_data_replace_on_change=True,
        hpc_cluster_id=where.hpc_cluster_id.get(role.role),
        placement_group_id=where.spread_group_id.get(role.role), tags=role.tag_map,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions.merge(
            node_options(rollout_of(args.rollout, nodes), None),
            pulumi.ResourceOptions(ignore_changes=image_ignore_changes(args.image), depends_on=[where.code]))),
        **market_args(args.market, spot, "instance"))


def worker_instances(name: str, args: NodeArgs, role: RolePlan, groups: tuple[WorkerGroupPlan, ...],
                     where: Placement, opts: pulumi.ResourceOptions) -> list[tencentcloud.instance.Instance]:
    """Each plan group's desired count of instances, numbered across the groups in their order."""
    members = [(group.name, group.market == SPOT) for group in groups for _ in range(group.desired)]
    return [cvm_instance(f"{name}-worker-{index}", args, role, where, nodes=nodes, spot=spot, opts=opts)
            for index, (nodes, spot) in enumerate(members)]
