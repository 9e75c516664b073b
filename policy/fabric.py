"""Fabric layout: each node's EFA or eRDMA interfaces match what the catalog says its type has."""

from __future__ import annotations

from collections.abc import Iterable

from components.catalog import lookup
from policy import types as t
from policy.base import Inputs, items, known

EFA_KINDS = ("efa", "efa-only")
ERDMA_MODE = "HighPerformance"


def _efa_layout(nics: list[dict], devices: int) -> Iterable[str]:
    """FACTS.md's accepted layouts: one EFA-capable interface per card 0..N-1, primary card0/dev0 never efa-only."""
    fabric = [n for n in nics if n.get("interfaceType") in EFA_KINDS]
    if not fabric:
        return
    if devices == 0:
        yield "the type has no EFA, but interfaces ask for it; use a type with EFA or plain interfaces."
        return
    pairs = [(int(n.get("networkCardIndex") or 0), int(n.get("deviceIndex") or 0)) for n in nics]
    if len(set(pairs)) != len(pairs):
        yield "two interfaces share a (network card, device) pair."
    cards = sorted({int(n.get("networkCardIndex") or 0) for n in fabric})
    if len(fabric) != devices or cards != list(range(devices)):
        yield (f"the type has {devices} EFA interfaces, one per network card 0..{devices - 1}; the template has "
               f"{len(fabric)} on cards {cards}.")
    primary = [n for n in nics if (int(n.get("networkCardIndex") or 0), int(n.get("deviceIndex") or 0)) == (0, 0)]
    if not primary or primary[0].get("interfaceType") == "efa-only":
        yield "the primary interface (card 0, device 0) must exist and must not be efa-only."


def _erdma_layout(nics: list[dict], devices: int) -> Iterable[str]:
    """Elastic RDMA interfaces (traffic mode HighPerformance) up to the type's ERI count, as many as it has."""
    eris = [n for n in nics if n.get("networkInterfaceTrafficMode") == ERDMA_MODE]
    if eris and len(eris) != devices:
        yield f"the type has {devices} eRDMA interfaces (ERIs); the node asks for {len(eris)}."


def fabric_layout(kind: str, inputs: Inputs) -> Iterable[str]:
    """Interface count and layout per instance type, from components.catalog (types it lacks are not judged)."""
    instance_type = inputs.get("instanceType")
    if not known(instance_type):
        return
    if kind in (t.AWS_LAUNCH_TEMPLATE, t.AWS_INSTANCE):
        row = lookup("aws", instance_type)
        if row is not None:
            yield from _efa_layout(items(inputs.get("networkInterfaces")), row.fabric_devices if row.fabric == "efa"
                                   else 0)
    elif kind in (t.ALI_INSTANCE, t.ALI_LAUNCH_TEMPLATE, t.ALI_SCALING_CONFIG):
        row = lookup("alicloud", instance_type)
        if row is not None:
            yield from _erdma_layout(items(inputs.get("networkInterfaces")),
                                     row.fabric_devices if row.fabric == "erdma" else 0)
