"""Workers: an ESS scaling group with the plan's spot mix for `scaling-group` plan groups, ECS instances for
`instances` plan groups (eRDMA workers, whose ERIs an ESS configuration cannot carry)."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from components.alicloud.nodes import NodeArgs, disk_args, ecs_node
from components.realizers.encoding import gzip_base64
from components.realizers.images import image_ignore_changes
from components.realizers.rollout import user_data_trigger
from plan.model import SPOT, MarketPlan, RolePlan, WorkerGroupPlan
from plan.rollout import USER_DATA_TAG


def _spot(market: MarketPlan, instance_types: tuple[str, ...]) -> dict:
    """Spot for the share above the base: capped at the stack's price, else at the on-demand price."""
    if not market.uses_spot:
        return {"spot_strategy": "NoSpot"}
    if market.max_spot_price is None:
        return {"spot_strategy": "SpotAsPriceGo"}
    return {"spot_strategy": "SpotWithPriceLimit",
            "spot_price_limits": [{"instance_type": kind, "price_limit": market.max_spot_price}
                                  for kind in instance_types]}


def _types(instance_types: tuple[str, ...]) -> dict:
    """One type as the configuration's type; several as its ordered list, the order ESS launches them in."""
    if len(instance_types) == 1:
        return {"instance_type": instance_types[0]}
    return {"instance_types": list(instance_types)}


def _multi_az_policy(market: MarketPlan, instance_types: tuple[str, ...]) -> str:
    """PRIORITY where an on-demand group has types to fall back on: ESS tries them in the configuration's order. A
    spot mix keeps the cost-optimized policy its base and share need, which tries the types cheapest vCPU first
    (docs/cloud-facts.md#launch-fallback)."""
    return "PRIORITY" if len(instance_types) > 1 and not market.uses_spot else market.spot_strategy


def _reservation(market: MarketPlan) -> dict:
    """Launch into the stack's ECS private pool first."""
    if not market.reservation_id:
        return {}
    return {"resource_pool_options_strategy": "PrivatePoolFirst",
            "resource_pool_options_private_pool_ids": [market.reservation_id]}


class AliWorkers(pulumi.ComponentResource):
    """One `scaling-group` plan group; its configuration names the cluster's security group, which the provider's
    create path requires (docs/cloud-facts.md#alibaba-provider-rules), and so carries no ERIs."""

    def __init__(self, name: str, args: NodeArgs, role: RolePlan, workers: WorkerGroupPlan,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:alicloud:Workers", f"{name}-{workers.name}", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        market, tags = args.market, role.tag_map
        # The group: on-demand base, then the spot share above it, cheapest pools first (COST_OPTIMIZED); on demand
        # throughout, the configuration's types in order (PRIORITY).
        self.group = alicloud.ess.ScalingGroup(
            f"{name}-{workers.name}", scaling_group_name=f"{name}-{workers.name}", min_size=workers.min_size,
            max_size=workers.max_size, desired_capacity=workers.desired, vswitch_ids=[args.vswitch_id],
            multi_az_policy=_multi_az_policy(market, args.worker_types), on_demand_base_capacity=market.on_demand_base,
            on_demand_percentage_above_base_capacity=100 - market.spot_percent, spot_instance_pools=1,
            health_check_type="ECS", removal_policies=["NewestInstance", "OldestScalingConfiguration"], tags=tags,
            opts=child)
        # What a worker is: the types in priority order, image, encrypted disk, security group, role and user-data.
        # pulumi_alicloud 4.0.0's ESS configuration has http_endpoint but no http_tokens: hardened IMDS needs an ECS
        # instance. A change of the user-data (and of its hash in USER_DATA_TAG) is made in place and reaches the
        # instances ESS launches next: `fleet roll` has ESS replace the older ones
        # (docs/cloud-facts.md#rollout-alibaba).
        alicloud.ess.ScalingConfiguration(
            f"{name}-worker-config", scaling_group_id=self.group.id, scaling_configuration_name=f"{name}-worker",
            image_id=args.image.ref, security_group_ids=[args.group_id],
            role_name=args.role_name, user_data=gzip_base64(role.user_data), http_endpoint="enabled",
            internet_max_bandwidth_out=0, instance_name=f"{name}-worker", active=True, enable=True,
            tags={**tags, USER_DATA_TAG: user_data_trigger(role.user_data)},
            force_delete=True,
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=image_ignore_changes(args.image),
                                        depends_on=[args.code]),
            **_types(args.worker_types), **disk_args(args), **_spot(market, args.worker_types), **_reservation(market))
        self.register_outputs({"scalingGroupId": self.group.id})


def worker_instances(name: str, args: NodeArgs, role: RolePlan, groups: tuple[WorkerGroupPlan, ...],
                     deployment_set_id: pulumi.Input[str] | None,
                     opts: pulumi.ResourceOptions) -> list[alicloud.ecs.Instance]:
    """Each `instances` plan group's desired count of ECS nodes, numbered across the groups in their order; the
    on-demand ones join the plan's deployment set, which takes no spot instance
    (docs/cloud-facts.md#alibaba-placement)."""
    members = [(group.name, group.market == SPOT) for group in groups for _ in range(group.desired)]
    joins = bool(args.placements_of(role))
    return [ecs_node(f"{name}-worker-{index}", args, role, nodes=nodes, spot=spot, opts=opts,
                     deployment_set_id=deployment_set_id if joins and not spot else None)
            for index, (nodes, spot) in enumerate(members)]
