"""Worker groups: the forms a cloud's profile picks from, each group with its market and bounds."""

from __future__ import annotations

from plan.model import (
    INSTANCES,
    MIXED,
    ON_DEMAND,
    SCALING_GROUP,
    SPOT,
    MarketPlan,
    ScalingPlan,
    WorkerGroupPlan,
)


def mixed_group(scaling: ScalingPlan, market: MarketPlan) -> tuple[WorkerGroupPlan, ...]:
    """One scaling group holding the whole market mix (the cloud's group keeps the on-demand base and spot share);
    none when the cluster is the head alone."""
    if scaling.workers_max == 0:
        return ()
    return (WorkerGroupPlan("workers", SCALING_GROUP, MIXED if market.uses_spot else ON_DEMAND, scaling.workers_min,
                            scaling.workers_desired, scaling.workers_max),)


def per_market(scaling: ScalingPlan, market: MarketPlan, form: str) -> tuple[WorkerGroupPlan, ...]:
    """One group per market, each bound the market split of the workers' bound (spot rounded down); a market with
    no worker at the largest size gets no group. Fixed instances number the desired split."""
    bounds = [market.split(count) for count in (scaling.workers_min, scaling.workers_desired, scaling.workers_max)]
    groups = []
    for index, kind in enumerate((ON_DEMAND, SPOT)):
        low, desired, high = (bound[index] for bound in bounds)
        if form == INSTANCES:
            low = high = desired
        if high > 0:
            groups.append(WorkerGroupPlan(kind, form, kind, low, desired, high))
    return tuple(groups)
