"""Fallback at launch: the instance types a worker scaling group may launch, in order, when the planned type runs out
of stock after the plan was made (docs/cloud-facts.md#launch-fallback).

The look-ups pick the first candidate with capacity before anything exists (plan/candidates.py); a
scaling group keeps launching long after, so it also gets the later candidates' types, highest priority first. Only
types a group can launch from the same launch template and user-data qualify: the same zone (the cluster's one
subnet and, with EFA, eRDMA or HCC, its one placement group), the same market, and nodes alike in everything the
node plan and the fabric's interfaces read off the catalog row.
"""

from __future__ import annotations

from plan import catalog
from plan.candidates import Availability
from spec.cluster import ClusterSpec


def _node_shape(row: catalog.InstanceType) -> tuple:
    """What a node's user-data, health gate and network interfaces depend on in its catalog row."""
    return (row.gpus, row.gpu_model, row.gpu_memory_gib, row.nvswitch, row.fabric, row.fabric_devices,
            row.network_cards)


def launch_types(spec: ClusterSpec, capacity: tuple[Availability, ...]) -> tuple[str, ...]:
    """The planned type, then each later available candidate's type a group can launch in its place; the planned type
    alone where there is none, where the workers launch into a reservation (it holds one type only), or where they
    have a warm pool (EC2 Auto Scaling puts none on a group with several types: docs/cloud-facts.md#launch-fallback)."""
    planned = catalog.lookup(spec.cloud, spec.instance_type)
    if spec.market.reservation_id or spec.market.capacity_block or spec.autoscaling.standby or planned is None:
        return (spec.instance_type,)
    on_demand = spec.market.spot_percent == 0
    types = [spec.instance_type]
    for answer in capacity:
        candidate = answer.candidate
        row = catalog.lookup(spec.cloud, candidate.instance_type)
        if (answer.available and candidate.zone == spec.zone and candidate.on_demand == on_demand
                and row is not None and _node_shape(row) == _node_shape(planned)):
            types.append(candidate.instance_type)
    return tuple(dict.fromkeys(types))



def launch_fallback(grouped: bool, types: tuple[str, ...]) -> tuple[str, ...]:
    """What a launch that finds the planned type sold out does, for the workers (`grouped`: in the cloud's scaling
    groups; `types`: what those launch, highest priority first) and for the head. Instances in no group have none:
    the head everywhere, and eRDMA and HCC workers, which neither ESS nor Tencent AS can launch
    (docs/cloud-facts.md#launch-fallback); the candidate the look-ups chose at deploy time is their fallback."""
    head = "head: none (one instance: the candidate chosen at deploy time is the fallback it has)"
    if not grouped:
        workers = (f"workers: none (instances in no scaling group: a launch that finds {types[0]} sold out fails; the "
                   "candidate chosen at deploy time is the fallback they have)")
    elif len(types) > 1:
        workers = f"workers: their scaling groups launch {', then '.join(types)}, in that order"
    else:
        workers = (f"workers: none (their scaling groups launch {types[0]} only: no later available candidate of the "
                   "same zone, market and node shape, or a warm pool or reservation holds them to one type)")
    return workers, head
