"""What the head and the workers share: the plan's slice they are made of, disks and interfaces as ECS/ESS
arguments."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.plan.model import ClusterPlan, ImagePlan, Interface, MarketPlan, PlacementPlan, RolePlan

# eRDMA interfaces are ENIs in HighPerformance mode; every other interface is a Standard ENI.
TRAFFIC_MODE = {"erdma": "HighPerformance"}
SYSTEM_DISK = "cloud_essd"


@dataclass(frozen=True)
class NodeArgs:
    """The slice of the plan every node is made of, and the vSwitch, group and role it uses."""

    instance_type: str
    image: ImagePlan
    interfaces: tuple[Interface, ...]
    root_volume_gb: int
    zone: str
    mtu: int
    market: MarketPlan
    placements: tuple[PlacementPlan, ...]
    vswitch_id: pulumi.Input[str]
    group_id: pulumi.Input[str]
    role_name: pulumi.Input[str]

    @classmethod
    def of(cls, plan: ClusterPlan, vswitch_id: pulumi.Input[str], group_id: pulumi.Input[str],
           role_name: pulumi.Input[str]) -> NodeArgs:
        return cls(instance_type=plan.instance.name, image=plan.image, interfaces=plan.fabric.interfaces,
                   root_volume_gb=plan.storage.root_volume_gb, zone=plan.zone, mtu=plan.network.mtu,
                   market=plan.market, placements=plan.placements, vswitch_id=vswitch_id, group_id=group_id,
                   role_name=role_name)

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
