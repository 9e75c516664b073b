"""What the head and the workers share: the plan's slice they are made of, disks and interfaces as ECS/ESS
arguments, and one ECS node with its role and ERIs."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_alicloud as alicloud

from components.realizers.encoding import gzip_base64
from components.realizers.images import image_ignore_changes
from components.realizers.rollout import node_options
from plan.model import ClusterPlan, ImagePlan, Interface, MarketPlan, PlacementPlan, RolePlan
from plan.rollout import RolloutPlan, rollout_of

# eRDMA interfaces are ENIs in HighPerformance mode; every other interface is a Standard ENI.
TRAFFIC_MODE = {"erdma": "HighPerformance"}
SYSTEM_DISK = "cloud_essd"


@dataclass(frozen=True)
class NodeArgs:
    """The slice of the plan every node is made of, and the vSwitch, group, role and code bundle it uses."""

    instance_type: str
    worker_types: tuple[str, ...]  # what a worker scaling group may launch, highest priority first
    image: ImagePlan
    interfaces: tuple[Interface, ...]
    root_volume_gb: int
    zone: str
    mtu: int
    market: MarketPlan
    placements: tuple[PlacementPlan, ...]
    rollout: tuple[RolloutPlan, ...]
    vswitch_id: pulumi.Input[str]
    group_id: pulumi.Input[str]
    role_name: pulumi.Input[str]
    code: pulumi.Resource  # the code bundle the user-data names: every node and configuration waits for it

    @classmethod
    def of(cls, plan: ClusterPlan, vswitch_id: pulumi.Input[str], group_id: pulumi.Input[str],
           role_name: pulumi.Input[str], code: pulumi.Resource) -> NodeArgs:
        return cls(instance_type=plan.instance.name, worker_types=plan.worker_types,
                   image=plan.image, interfaces=plan.fabric.interfaces,
                   root_volume_gb=plan.storage.root_volume_gb, zone=plan.zone, mtu=plan.network.mtu,
                   market=plan.market, placements=plan.placements, rollout=plan.rollout, vswitch_id=vswitch_id,
                   group_id=group_id, role_name=role_name, code=code)

    def placements_of(self, role: RolePlan) -> tuple[PlacementPlan, ...]:
        return tuple(p for p in self.placements if role.role in p.roles)


def traffic_mode(nic: Interface) -> str:
    return TRAFFIC_MODE.get(nic.kind, "Standard")


def erdma_interfaces(args: NodeArgs) -> list[Interface]:
    """The plan's secondary interfaces (the ERIs); the primary comes with the instance."""
    return [nic for nic in args.interfaces if (nic.card, nic.device) != (0, 0)]


def disk_args(args: NodeArgs) -> dict:
    """Encrypted ESSD system disk of the plan's size (same argument names on ecs.Instance and ESS)."""
    return {"system_disk_category": SYSTEM_DISK, "system_disk_size": args.root_volume_gb,
            "system_disk_encrypted": True}


def _market(market: MarketPlan, spot: bool) -> dict:
    """Pay-as-you-go; a spot node capped at the stack's price, else at the on-demand price."""
    if not spot:
        return {"spot_strategy": "NoSpot"}
    if market.max_spot_price is None:
        return {"spot_strategy": "SpotAsPriceGo"}
    return {"spot_strategy": "SpotWithPriceLimit", "spot_price_limit": market.max_spot_price}


def _reservation(market: MarketPlan) -> dict:
    """An ECS private pool (the stack's reservationId) the node must launch into."""
    if not market.reservation_id:
        return {}
    return {"private_pool_options_match_criteria": "Target", "private_pool_options_id": market.reservation_id}


def ecs_node(resource_name: str, args: NodeArgs, role: RolePlan, *, nodes: str, spot: bool,
             opts: pulumi.ResourceOptions, private_ip: str | None = None,
             deployment_set_id: pulumi.Input[str] | None = None) -> alicloud.ecs.Instance:
    """One node as an ECS instance: hardened metadata, encrypted disk, jumbo frames for the plan's MTU, the node
    role, and the plan's ERIs (an ESS configuration cannot carry ERIs: docs/cloud-facts.md#alibaba-provider-rules).
    Replaced when its user-data changes: the provider would update it in place and reboot, which re-runs no
    bootstrap (docs/cloud-facts.md#rollout-alibaba); `nodes` names its set in the plan's rollout.

    Each instance gets ERIs of its own: an attachment's instance and ENI are both ForceNew, so a replacement asks
    for a new attachment, and an ENI attaches to one instance at a time (docs/cloud-facts.md#alibaba-eri-replacement).
    A worker is replaced create-first and keeps training while its successor boots, so it must keep its ERIs (its
    NCCL fabric) until the engine deletes it; detaching them first (a delete-first attachment) would stop the running
    job at once. So each ERI is replaced with its instance: the successor gets new ERIs on the same cards, the old
    ones go with the old instance at the end of the update (the attachments first), and a node the cloud released
    (its ERIs released with it: DeleteOnRelease) comes back with new ones. The delete-first head works alike."""
    tags = role.tag_map
    # The node: no public address, hardened metadata, jumbo frames when the plan's MTU needs them.
    instance = alicloud.ecs.Instance(
        resource_name, instance_name=resource_name, availability_zone=args.zone, vswitch_id=args.vswitch_id,
        security_groups=[args.group_id], instance_type=args.instance_type, image_id=args.image.ref,
        private_ip=private_ip, instance_charge_type="PostPaid", internet_max_bandwidth_out=0, http_endpoint="enabled",
        http_tokens="required", enable_jumbo_frame=args.mtu > 1500, user_data=gzip_base64(role.user_data),
        deployment_set_id=deployment_set_id, tags=tags, volume_tags=tags,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions.merge(
            node_options(rollout_of(args.rollout, nodes), "userData"),
            pulumi.ResourceOptions(ignore_changes=image_ignore_changes(args.image), depends_on=[args.code]))),
        **disk_args(args), **_market(args.market, spot), **_reservation(args.market))
    # The node role on the node.
    alicloud.ecs.RamRoleAttachment(f"{resource_name}-role", instance_id=instance.id, ram_role_name=args.role_name,
                                   opts=opts)
    for nic in erdma_interfaces(args):
        # One ERI of the plan: a HighPerformance ENI in the nodes' vSwitch and security group, made anew with each
        # instance its node becomes: replaced whenever the instance is (its trigger is the instance's id), and a
        # dependent of it (a targeted `pulumi up --target-dependents` of the instance takes it along).
        eni = alicloud.ecs.EcsNetworkInterface(
            f"{resource_name}-eri-{nic.device}", network_interface_name=f"{resource_name}-eri-{nic.device}",
            vswitch_id=args.vswitch_id, security_group_ids=[args.group_id],
            network_interface_traffic_mode=traffic_mode(nic), delete_on_release=True, tags=tags,
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[instance],
                                                                           replacement_trigger=instance.id)))
        # Bound to the node on the plan's network card.
        alicloud.ecs.EcsNetworkInterfaceAttachment(f"{resource_name}-eri-{nic.device}-attachment",
                                                   instance_id=instance.id, network_interface_id=eni.id,
                                                   network_card_index=nic.card, opts=opts)
    return instance
