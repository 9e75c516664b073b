"""Fabric per node: which fabric, which interfaces, and the NCCL environment that goes with it."""

from __future__ import annotations

from collections.abc import Mapping

from plan.catalog import InstanceType
from plan.model import FabricPlan, Interface
from plan.software import FABRIC_STACK

# NCCL/libfabric settings per fabric (docs/cloud-facts.md#aws-nccl-over-efa, #alibaba-erdma, #tencent-hcc).
# EFA with aws-ofi-nccl >= 1.7 needs almost nothing set.
_COMMON = (("NCCL_DEBUG", "WARN"), ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"))
NCCL_ENV: dict[str, tuple[tuple[str, str], ...]] = {
    "efa": (("NCCL_SOCKET_IFNAME", "^lo,docker"), ("FI_EFA_USE_HUGE_PAGE", "0")),
    "erdma": (("NCCL_SOCKET_IFNAME", "eth0"), ("NCCL_IB_GID_INDEX", "1"), ("NCCL_IB_HCA", "erdma"),
              ("NCCL_IB_QPS_PER_CONNECTION", "8"), ("NCCL_NET_PLUGIN", "none")),
    # HCC: the mlx5 RDMA devices rdma-agent brings up, the same prefix gpufleet-probe counts
    # (docs/cloud-facts.md#tencent-hcc).
    "rdma": (("NCCL_SOCKET_IFNAME", "eth0"), ("NCCL_IB_GID_INDEX", "3"), ("NCCL_IB_DISABLE", "0"),
             ("NCCL_IB_HCA", "mlx5")),
    "tcp": (("NCCL_SOCKET_IFNAME", "^lo,docker"), ("NCCL_IB_DISABLE", "1")),
}


# The name NCCL logs as "Using network <name>" once NCCL_NET has chosen a network, by NCCL_NET's value (NCCL matches
# it case-insensitively): its own transports keep their names; aws-ofi-nccl (>= 1.13) renames itself to "OFI" or
# "AWS Libfabric" when NCCL_NET asks for that, and is "Libfabric" otherwise (docs/cloud-facts.md#nccl-net).
NCCL_NETWORK_NAMES = {"ib": "IB", "socket": "Socket", "ofi": "OFI", "aws libfabric": "AWS Libfabric",
                      "libfabric": "Libfabric"}


def nccl_network(nccl_net: str) -> str:
    """The network name NCCL logs under NCCL_NET=nccl_net; KeyError for a value the table does not know."""
    return NCCL_NETWORK_NAMES[nccl_net.lower()]


def resolve_fabric(choice: str, row: InstanceType) -> str:
    """`auto` takes the best fabric the type has; an explicit choice was already checked against the catalog."""
    return row.fabric if choice == "auto" else choice


def _interfaces(kind: str, devices: int, cards: int) -> tuple[Interface, ...]:
    """One interface per network card; the primary (card 0, device 0) carries IP, the rest are fabric-only.

    EFA: card0/dev0 `efa`, cards 1..N-1 `efa-only` (one IP per node; an accepted layout, docs/cloud-facts.md#aws-efa).
    eRDMA: the primary plus ERIs 1..N, dealt one per network card of the type's `cards` (ERIs on one card share its
    bandwidth: docs/cloud-facts.md#alibaba-eri-cards); a type whose card count is unknown keeps them on card 0, the
    one index every type accepts. Others: the primary alone.
    """
    if kind == "efa":
        return (Interface(0, 0, "efa"), *(Interface(card, 0, "efa-only") for card in range(1, devices)))
    if kind == "erdma":
        return (Interface(0, 0, "interface"),
                *(Interface((eri - 1) % cards, eri, "erdma") for eri in range(1, devices + 1)))
    return (Interface(0, 0, "interface"),)


def plan_fabric(choice: str, row: InstanceType, cloud_env: Mapping[str, str] | None = None) -> FabricPlan:
    """The fabric, its interfaces and NCCL env: the fabric's settings, then the cloud's own (they win)."""
    kind = resolve_fabric(choice, row)
    devices = row.fabric_devices if kind == row.fabric else 0
    # NCCL_NET: the fabric's network only, so a node whose plugin is missing fails at NCCL's init instead of
    # training over sockets (docs/cloud-facts.md#nccl-net); the cloud's own settings still win.
    env = dict(_COMMON + NCCL_ENV[kind]) | {"NCCL_NET": FABRIC_STACK[kind][1]} | dict(cloud_env or {})
    interfaces = _interfaces(kind, devices, row.network_cards or 1)
    return FabricPlan(kind=kind, interfaces=interfaces, devices=devices, nccl_env=tuple(env.items()),
                      nccl_network=nccl_network(env["NCCL_NET"]))
