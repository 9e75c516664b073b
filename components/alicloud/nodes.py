"""What the head and the workers share: disks and the plan's interfaces as ESS/ENI arguments."""

from __future__ import annotations

from components.plan.model import ClusterPlan, Interface

# eRDMA interfaces are ENIs in HighPerformance mode; every other interface is a Standard ENI.
TRAFFIC_MODE = {"erdma": "HighPerformance"}
SYSTEM_DISK = "cloud_essd"


def traffic_mode(nic: Interface) -> str:
    return TRAFFIC_MODE.get(nic.kind, "Standard")


def erdma_interfaces(plan: ClusterPlan) -> list[Interface]:
    """The plan's secondary interfaces (the ERIs); the primary comes with the instance."""
    return [nic for nic in plan.fabric.interfaces if (nic.card, nic.device) != (0, 0)]


def disk_args(plan: ClusterPlan) -> dict:
    """Encrypted ESSD system disk of the plan's size (same argument names on ecs.Instance and ESS)."""
    return {"system_disk_category": SYSTEM_DISK, "system_disk_size": plan.storage.root_volume_gb,
            "system_disk_encrypted": True}
