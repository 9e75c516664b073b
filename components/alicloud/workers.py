"""Workers: an ESS scaling group per plan group with the plan's spot mix, its scaling configuration, and GPU target
tracking."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from components.alicloud.nodes import NodeArgs, disk_args, traffic_mode
from components.plan.model import MarketPlan, RolePlan, WorkerGroupPlan
from components.realizers.encoding import gzip_base64
from components.realizers.images import image_ignore_changes

# CloudMonitor agent metric of average GPU utilisation that ESS target tracking can follow (name unconfirmed).
GPU_METRIC = "GpuUtilizationAgent"


def _spot(market: MarketPlan, instance_type: str) -> dict:
    """Spot for the share above the base: capped at the stack's price, else at the on-demand price."""
    if not market.uses_spot:
        return {"spot_strategy": "NoSpot"}
    if market.max_spot_price is None:
        return {"spot_strategy": "SpotAsPriceGo"}
    return {"spot_strategy": "SpotWithPriceLimit",
            "spot_price_limits": [{"instance_type": instance_type, "price_limit": market.max_spot_price}]}


def _reservation(market: MarketPlan) -> dict:
    """Launch into the stack's ECS private pool first."""
    if not market.reservation_id:
        return {}
    return {"resource_pool_options_strategy": "PrivatePoolFirst",
            "resource_pool_options_private_pool_ids": [market.reservation_id]}


def _interfaces(args: NodeArgs) -> list[dict]:
    """The plan's interfaces: the primary ENI plus one HighPerformance ENI per ERI, all in the cluster's group."""
    return [{"instance_type": "Primary" if (nic.card, nic.device) == (0, 0) else "Secondary",
             "network_interface_traffic_mode": traffic_mode(nic), "security_group_ids": [args.group_id]}
            for nic in args.interfaces]


class AliWorkers(pulumi.ComponentResource):
    """One plan group of workers; ESS configurations take no deployment set, so workers are placed by zone."""

    def __init__(self, name: str, args: NodeArgs, role: RolePlan, workers: WorkerGroupPlan,
                 gpu_util_target: float | None, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:alicloud:Workers", f"{name}-{workers.name}", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        market, tags = args.market, role.tag_map
        # The group: on-demand base, then the spot share above it, cheapest pools first (COST_OPTIMIZED).
        self.group = alicloud.ess.ScalingGroup(
            f"{name}-{workers.name}", scaling_group_name=f"{name}-{workers.name}", min_size=workers.min_size,
            max_size=workers.max_size, desired_capacity=workers.desired, vswitch_ids=[args.vswitch_id],
            multi_az_policy=market.spot_strategy, on_demand_base_capacity=market.on_demand_base,
            on_demand_percentage_above_base_capacity=100 - market.spot_percent, spot_instance_pools=1,
            health_check_type="ECS", removal_policies=["NewestInstance", "OldestScalingConfiguration"], tags=tags,
            opts=child)
        # What a worker is: the type, image, encrypted disk, ERIs, role and user-data (IMDS: see the note below).
        # pulumi_alicloud 4.0.0's ESS configuration has http_endpoint but no http_tokens: hardened IMDS is head-only.
        alicloud.ess.ScalingConfiguration(
            f"{name}-worker-config", scaling_group_id=self.group.id, scaling_configuration_name=f"{name}-worker",
            instance_type=args.instance_type, image_id=args.image.ref, network_interfaces=_interfaces(args),
            role_name=args.role_name, user_data=gzip_base64(role.user_data), http_endpoint="enabled",
            internet_max_bandwidth_out=0, instance_name=f"{name}-worker", tags=tags, active=True, enable=True,
            force_delete=True,
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=image_ignore_changes(args.image)),
            **disk_args(args), **_spot(market, args.instance_type), **_reservation(market))
        if gpu_util_target is not None:
            # Scale on the average GPU utilisation of the group.
            alicloud.ess.ScalingRule(
                f"{name}-gpu-util", scaling_group_id=self.group.id, scaling_rule_name=f"{name}-gpu-util",
                scaling_rule_type="TargetTrackingScalingRule", metric_type="system", metric_name=GPU_METRIC,
                target_value=gpu_util_target, opts=child)
        self.register_outputs({"scalingGroupId": self.group.id})
