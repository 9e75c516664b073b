"""The head node: on-demand, at the plan's fixed address, in the plan's deployment set, with its ERIs."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from components.alicloud.nodes import NodeArgs, disk_args, erdma_interfaces, traffic_mode
from components.plan.model import MarketPlan, RolePlan
from components.realizers.encoding import gzip_base64
from components.realizers.images import image_ignore_changes

# The plan's placement kinds as deployment set strategies.
STRATEGY = {"cluster": "LowLatency"}


def _reservation(market: MarketPlan) -> dict:
    """An ECS private pool (the stack's reservationId) the head must launch into."""
    if not market.reservation_id:
        return {}
    return {"private_pool_options_match_criteria": "Target", "private_pool_options_id": market.reservation_id}


class AliHead(pulumi.ComponentResource):
    """The rendezvous host every worker connects to; never spot."""

    def __init__(self, name: str, args: NodeArgs, role: RolePlan, address: str,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:alicloud:Head", f"{name}-head", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = role.tag_map
        self.deployment_set = None
        for placement in args.placements_of(role):
            # The plan's deployment set: one network topology in one zone for the nodes that join it.
            self.deployment_set = alicloud.ecs.EcsDeploymentSet(f"{name}-ds", deployment_set_name=f"{name}-ds",
                                                                strategy=STRATEGY[placement.kind], opts=child)
        # The head instance: pay-as-you-go, hardened metadata, encrypted disk, jumbo frames for the plan's MTU.
        self.instance = alicloud.ecs.Instance(
            f"{name}-head", instance_name=f"{name}-head", availability_zone=args.zone, vswitch_id=args.vswitch_id,
            security_groups=[args.group_id], instance_type=args.instance_type, image_id=args.image.ref,
            private_ip=address, instance_charge_type="PostPaid", spot_strategy="NoSpot",
            internet_max_bandwidth_out=0, http_endpoint="enabled", http_tokens="required",
            enable_jumbo_frame=args.mtu > 1500, user_data=gzip_base64(role.user_data),
            deployment_set_id=self.deployment_set.id if self.deployment_set else None, tags=tags, volume_tags=tags,
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=image_ignore_changes(args.image)),
            **disk_args(args), **_reservation(args.market))
        # The node role on the head.
        alicloud.ecs.RamRoleAttachment(f"{name}-head-role", instance_id=self.instance.id,
                                       ram_role_name=args.role_name, opts=child)
        for nic in erdma_interfaces(args):
            # One ERI of the plan: a HighPerformance ENI in the nodes' vSwitch and security group.
            eni = alicloud.ecs.EcsNetworkInterface(
                f"{name}-head-eri-{nic.device}", network_interface_name=f"{name}-head-eri-{nic.device}",
                vswitch_id=args.vswitch_id, security_group_ids=[args.group_id],
                network_interface_traffic_mode=traffic_mode(nic), delete_on_release=True, tags=tags, opts=child)
            # Bound to the head on the plan's network card.
            alicloud.ecs.EcsNetworkInterfaceAttachment(f"{name}-head-eri-{nic.device}-attachment",
                                                       instance_id=self.instance.id, network_interface_id=eni.id,
                                                       network_card_index=nic.card, opts=child)
        self.register_outputs({"instanceId": self.instance.id})
