"""Non-HCC workers: AS groups, one on-demand and one spot, sized from the plan's market split (the AS group of
tencentcloud_iac_pulumi 0.2.3 has no spot-mix field)."""

from __future__ import annotations

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from components.plan.model import ClusterPlan
from components.realizers.encoding import gzip_base64
from components.realizers.images import image_ignore_changes
from components.tencentcloud.nodes import SYSTEM_DISK, Placement, market_args


def _sizes(plan: ClusterPlan) -> dict[str, tuple[int, int, int]]:
    """(min, desired, max) of the on-demand and the spot group: the plan's split of each bound."""
    scaling, market = plan.scaling, plan.market
    bounds = [market.split(count) for count in (scaling.workers_min, scaling.workers_desired, scaling.workers_max)]
    return {"on-demand": tuple(b[0] for b in bounds), "spot": tuple(b[1] for b in bounds)}


class TcWorkerGroups(pulumi.ComponentResource):
    """One AS config and group per market that has any workers at the group's largest size."""

    def __init__(self, name: str, plan: ClusterPlan, where: Placement,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:tencentcloud:WorkerGroups", f"{name}-workers", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = {**plan.tag_map, "gpufleet:role": "worker"}
        self.groups: dict[str, tencentcloud.as_.ScalingGroup] = {}
        for market, (low, desired, high) in _sizes(plan).items():
            if high == 0:
                continue
            # What a worker of this market is: type, image, disk, group, role, user-data, spread group if asked.
            config = tencentcloud.as_.ScalingConfig(
                f"{name}-{market}-config", configuration_name=f"{name}-{market}", image_id=plan.image.ref,
                instance_types=[plan.instance.name], security_group_ids=[where.group_id],
                system_disk_type=SYSTEM_DISK, system_disk_size=plan.storage.root_volume_gb,
                cam_role_name=where.role_name, user_data=gzip_base64(plan.worker.user_data), public_ip_assigned=False,
                disaster_recover_group_ids=[where.spread_group_id] if where.spread_group_id else None,
                instance_tags=tags, tags=tags,
                opts=pulumi.ResourceOptions(parent=self, ignore_changes=image_ignore_changes(plan.image)),
                **market_args(plan, market == "spot", "as"))
            # The group of this market, in the nodes' subnet.
            self.groups[market] = tencentcloud.as_.ScalingGroup(
                f"{name}-{market}-workers", scaling_group_name=f"{name}-{market}", configuration_id=config.id,
                min_size=low, desired_capacity=desired, max_size=high, vpc_id=where.vpc_id,
                subnet_ids=[where.subnet_id], retry_policy="INCREMENTAL_INTERVALS", tags=tags, opts=child)
        self.register_outputs({market: group.id for market, group in self.groups.items()})
