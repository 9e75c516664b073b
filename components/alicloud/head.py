"""The head node: on-demand, at the plan's fixed address, in the LowLatency deployment set, with its ERIs."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from components.alicloud.nodes import disk_args, erdma_interfaces, traffic_mode
from components.plan.model import ClusterPlan
from components.realizers.encoding import gzip_base64
from components.realizers.images import image_ignore_changes


def _reservation(plan: ClusterPlan) -> dict:
    """An ECS private pool (the stack's reservationId) the head must launch into."""
    if not plan.market.reservation_id:
        return {}
    return {"private_pool_options_match_criteria": "Target", "private_pool_options_id": plan.market.reservation_id}


class AliHead(pulumi.ComponentResource):
    """The rendezvous host every worker connects to; never spot."""

    def __init__(self, name: str, plan: ClusterPlan, vswitch_id: pulumi.Input[str], group_id: pulumi.Input[str],
                 role_name: pulumi.Input[str], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:alicloud:Head", f"{name}-head", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = {**plan.tag_map, "gpufleet:role": "head"}
        self.deployment_set = None
        if plan.placement_group:
            # One network topology in one zone for the on-demand nodes (spot can never join a deployment set).
            self.deployment_set = alicloud.ecs.EcsDeploymentSet(f"{name}-ds", deployment_set_name=f"{name}-ds",
                                                                strategy="LowLatency", opts=child)
        # The head instance: pay-as-you-go, hardened metadata, encrypted disk, jumbo frames for the plan's MTU.
        self.instance = alicloud.ecs.Instance(
            f"{name}-head", instance_name=f"{name}-head", availability_zone=plan.zone, vswitch_id=vswitch_id,
            security_groups=[group_id], instance_type=plan.instance.name, image_id=plan.image.ref,
            private_ip=plan.network.head_address, instance_charge_type="PostPaid", spot_strategy="NoSpot",
            internet_max_bandwidth_out=0, http_endpoint="enabled", http_tokens="required",
            enable_jumbo_frame=plan.network.mtu > 1500, user_data=gzip_base64(plan.head.user_data),
            deployment_set_id=self.deployment_set.id if self.deployment_set else None, tags=tags, volume_tags=tags,
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=image_ignore_changes(plan.image)),
            **disk_args(plan), **_reservation(plan))
        # The node role on the head.
        alicloud.ecs.RamRoleAttachment(f"{name}-head-role", instance_id=self.instance.id, ram_role_name=role_name,
                                       opts=child)
        for nic in erdma_interfaces(plan):
            # One ERI of the plan: a HighPerformance ENI in the nodes' vSwitch and security group.
            eni = alicloud.ecs.EcsNetworkInterface(
                f"{name}-head-eri-{nic.device}", network_interface_name=f"{name}-head-eri-{nic.device}",
                vswitch_id=vswitch_id, security_group_ids=[group_id], network_interface_traffic_mode=traffic_mode(nic),
                delete_on_release=True, tags=tags, opts=child)
            # Bound to the head on the plan's network card.
            alicloud.ecs.EcsNetworkInterfaceAttachment(f"{name}-head-eri-{nic.device}-attachment",
                                                       instance_id=self.instance.id, network_interface_id=eni.id,
                                                       network_card_index=nic.card, opts=child)
        self.register_outputs({"instanceId": self.instance.id})
