"""What a cluster costs: list price x nodes, the spot mix at the cloud's spot discount, the same with a reservation.

Pure arithmetic over the catalog's price and a cloud's documented discounts (docs/cost.md); every assumption is an
input, so `fleet cost` can override it and the planner can use the defaults. No I/O, no clock: callers pass `today`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import date

from plan.catalog import InstanceType, catalog
from plan.model import CostPlan, MarketPlan, ScalingPlan
from plan.prices import ListPrice
from plan.profile import CloudProfile

HOURS_PER_MONTH = 730
MAX_PRICE_AGE_DAYS = 120


@dataclass(frozen=True)
class Assumptions:
    """Discounts off the list price (0.6 = pay 40%) and a factor for a region priced unlike the catalog's."""

    spot_discount: float
    reserved_discount: float
    region_factor: float = 1.0

    @classmethod
    def of(cls, cloud: CloudProfile) -> Assumptions:
        """The cloud profile's documented defaults."""
        return cls(spot_discount=cloud.spot_discount, reserved_discount=cloud.reserved_discount)

    def override(self, **changes: float | None) -> Assumptions:
        """The same assumptions with the given ones replaced (None keeps the default)."""
        return replace(self, **{key: value for key, value in changes.items() if value is not None})


@dataclass(frozen=True)
class Estimate:
    """Hourly cost of some nodes, some of them on spot, three ways; None where the price is not public."""

    price: float | None
    on_demand: float | None
    spot_mix: float | None
    reserved: float | None

    def monthly(self, hourly: float | None) -> float | None:
        return None if hourly is None else round(hourly * HOURS_PER_MONTH, 2)


def estimate(price: float | None, nodes: int, spot: int, assumptions: Assumptions) -> Estimate:
    """On-demand: every node at list price. Spot mix: spot nodes at the spot discount. Reserved: the spot mix with
    the on-demand nodes at the reserved discount instead (spot is never reserved)."""
    if price is None:
        return Estimate(None, None, None, None)
    unit = price * assumptions.region_factor
    spot_part = spot * unit * (1 - assumptions.spot_discount)
    return Estimate(price=round(unit, 4),
                    on_demand=round(nodes * unit, 4),
                    spot_mix=round((nodes - spot) * unit + spot_part, 4),
                    reserved=round((nodes - spot) * unit * (1 - assumptions.reserved_discount) + spot_part, 4))


def spot_nodes(market: MarketPlan, scaling: ScalingPlan) -> int:
    """Desired nodes on spot: workers above the on-demand base at the spot share (the head is never spot)."""
    return market.split(scaling.workers_desired)[1]


def price_age_days(price_date: str, today: date) -> int | None:
    """Days since the catalog's prices were read; None when the date is missing or not ISO."""
    try:
        return (today - date.fromisoformat(price_date)).days
    except ValueError:
        return None


def is_stale(price_date: str, today: date, max_age_days: int = MAX_PRICE_AGE_DAYS) -> bool:
    """An undated price table counts as stale: a number without a date is not to be trusted silently."""
    age = price_age_days(price_date, today)
    return age is None or age > max_age_days


@dataclass(frozen=True)
class Option:
    """One way to get the same GPUs on some cloud: a catalog type and how many nodes of it."""

    cloud: str
    instance: InstanceType
    nodes: int
    spot: int
    estimate: Estimate
    price_date: str
    price_source: str


def same_gpus(gpu_model: str, gpus: int, spot_share: float, clouds: list[CloudProfile],
              overrides: dict[str, float | None]) -> list[Option]:
    """Every catalog type with this GPU model, on every cloud, sized to at least `gpus` GPUs; cheapest first,
    types without a public price last."""
    options = []
    for cloud in clouds:
        table = catalog(cloud.name)
        for row in (table.types.values() if table else ()):
            if row.gpu_model != gpu_model or row.gpus == 0:
                continue
            nodes = math.ceil(gpus / row.gpus)
            spot = math.floor(nodes * spot_share)
            found = estimate(row.price_usd_per_hour, nodes, spot, Assumptions.of(cloud).override(**overrides))
            options.append(Option(cloud.name, row, nodes, spot, found, table.price_date, table.price_source))
    return sorted(options, key=lambda o: (o.estimate.spot_mix is None, o.estimate.spot_mix or 0.0, o.cloud))


def plan_cost(cloud: CloudProfile, price: ListPrice, market: MarketPlan, scaling: ScalingPlan) -> CostPlan:
    """The plan's cost line, in the list price's currency: expected = the spot mix, reserved where the stack names a
    reservation (not a block); where a scaling policy owns the size, the same at the max it grows to."""
    table = catalog(cloud.name)
    reserved = market.reservation_id and not market.capacity_block

    def expected(at: ScalingPlan) -> Estimate:
        return estimate(price.hourly, at.nodes_desired, spot_nodes(market, at), Assumptions.of(cloud))

    found, ceiling = expected(scaling), expected(replace(scaling, nodes_desired=scaling.nodes_max))
    return CostPlan(currency=price.currency, on_demand_hourly=found.on_demand,
                    expected_hourly=found.reserved if reserved else found.spot_mix,
                    price_date=table.price_date if table else "", price_source=table.price_source if table else "",
                    ceiling_hourly=(ceiling.reserved if reserved else ceiling.spot_mix) if scaling.policy_sized
                    else None)
