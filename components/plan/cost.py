"""Hourly cost of a plan from the catalog's list price and the cloud's documented discounts."""

from __future__ import annotations

from components.catalog import catalog
from components.clouds.base import CloudProfile
from components.plan.model import CostPlan, MarketPlan, ScalingPlan


def spot_nodes(market: MarketPlan, workers: int) -> float:
    """Workers on spot: the share above the on-demand base (the head is never spot)."""
    above_base = max(workers - market.on_demand_base, 0)
    return above_base * market.spot_percent / 100


def plan_cost(cloud: CloudProfile, price: float | None, market: MarketPlan, scaling: ScalingPlan) -> CostPlan:
    table = catalog(cloud.name)
    nodes = scaling.nodes_desired
    if price is None:
        on_demand = expected = None
    else:
        on_demand = round(price * nodes, 4)
        discount = cloud.reserved_discount if market.reservation_id and not market.capacity_block else 0.0
        spot = spot_nodes(market, scaling.workers_desired)
        expected = round(price * ((nodes - spot) * (1 - discount) + spot * (1 - cloud.spot_discount)), 4)
    return CostPlan(currency="USD", on_demand_hourly=on_demand, expected_hourly=expected,
                    price_date=table.price_date if table else "", price_source=table.price_source if table else "")
