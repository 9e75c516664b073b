"""Workers of `scaling-group` plan groups: one AS config and group each (the AS group of tencentcloud_iac_pulumi
0.2.3 has no spot-mix field, so the plan splits markets into groups). A change of the workers' user-data changes the
config in place; `fleet roll` then has AS refresh the group's members (plan/group_refresh.py): no refresh is a
resource here, since the provider's would hold `pulumi up` while a refresh fails or pauses and start one on a group's
first up (docs/cloud-facts.md#rollout-tencent)."""

from __future__ import annotations

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from components.realizers.encoding import gzip_base64
from components.realizers.images import image_ignore_changes
from components.tencentcloud.nodes import SYSTEM_DISK, NodeArgs, Placement, market_args
from plan.model import SPOT, RolePlan, WorkerGroupPlan


class TcWorkerGroups(pulumi.ComponentResource):
    """One AS config and group per plan group."""

    def __init__(self, name: str, args: NodeArgs, role: RolePlan, groups: tuple[WorkerGroupPlan, ...],
                 where: Placement, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:tencentcloud:WorkerGroups", f"{name}-workers", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = role.tag_map
        spread = where.spread_group_id.get(role.role)
        self.groups: dict[str, tencentcloud.as_.ScalingGroup] = {}
        for group in groups:
            # What a worker of this group is: its types in priority order (AS tries them in order,
            # docs/cloud-facts.md#launch-fallback), image, disk, group, role, user-data, its spread group if any.
            config = tencentcloud.as_.ScalingConfig(
                f"{name}-{group.name}-config", configuration_name=f"{name}-{group.name}", image_id=args.image.ref,
                instance_types=list(args.worker_types), security_group_ids=[where.group_id],
                system_disk_type=SYSTEM_DISK, system_disk_size=args.root_volume_gb,
                cam_role_name=where.role_name, user_data=gzip_base64(role.user_data), public_ip_assigned=False,
                disaster_recover_group_ids=[spread] if spread else None, instance_tags=tags, tags=tags,
                opts=pulumi.ResourceOptions(parent=self, ignore_changes=image_ignore_changes(args.image),
                                            depends_on=[where.code]),
                **market_args(args.market, group.market == SPOT, "as"))
            # The group, in the nodes' subnet, trying its subnets and types in their order (PRIORITY).
            self.groups[group.name] = tencentcloud.as_.ScalingGroup(
                f"{name}-{group.name}-workers", scaling_group_name=f"{name}-{group.name}", configuration_id=config.id,
                min_size=group.min_size, desired_capacity=group.desired, max_size=group.max_size,
                vpc_id=where.vpc_id, subnet_ids=[where.subnet_id], multi_zone_subnet_policy="PRIORITY",
                retry_policy="INCREMENTAL_INTERVALS", tags=tags,
                # A node that fails its gate at the group's minimum, where RemoveInstances is refused, powers off;
                # the ping check finds it unreachable and the group launches its successor
                # (docs/cloud-facts.md#rollout-replacement).
                health_check_type="CVM", replace_monitor_unhealthy=True, replace_mode="RECREATE", opts=child)
        self.register_outputs({market: group.id for market, group in self.groups.items()})
