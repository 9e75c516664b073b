"""The `fleet cost` document for one stack: the plan's nodes and spot mix priced by plan.cost.

Kept apart from the command so the PR comment and tests build the same document without argparse or a terminal.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from clouds import CLOUDS, profile
from plan.catalog import catalog
from plan.cost import (
    HOURS_PER_MONTH,
    MAX_PRICE_AGE_DAYS,
    Assumptions,
    Estimate,
    Option,
    estimate,
    is_stale,
    price_age_days,
    same_gpus,
    spot_nodes,
)
from plan.model import ClusterPlan

PRICED_CLOUDS = tuple(name for name, cloud in CLOUDS.items() if not cloud.runs_here)


@dataclass(frozen=True)
class Overrides:
    """What the user changed on the command line; None keeps the cloud's documented default."""

    spot_discount: float | None = None
    reserved_discount: float | None = None
    region_factor: float | None = None
    max_price_age_days: int = MAX_PRICE_AGE_DAYS

    def discounts(self) -> dict[str, float | None]:
        return {"spot_discount": self.spot_discount, "reserved_discount": self.reserved_discount,
                "region_factor": self.region_factor}


def _money(found: Estimate) -> dict[str, Any]:
    hourly = {"onDemand": found.on_demand, "spotMix": found.spot_mix, "reserved": found.reserved}
    return {"hourly": hourly, "monthly": {key: found.monthly(value) for key, value in hourly.items()}}


def _warnings(cloud: str, price: float | None, price_date: str, today: date, overrides: Overrides) -> list[str]:
    warnings = []
    if price is None:
        warnings.append(f"{cloud}: no public price in the catalog; "
                        f"set priceUsdPerHour in plan/catalog/{cloud}.yaml.")
    if price is not None and is_stale(price_date, today, overrides.max_price_age_days):
        age = price_age_days(price_date, today)
        warnings.append(f"{cloud}: prices of {price_date or 'an unknown date'} are "
                        f"{'undated' if age is None else f'{age} days old'} (limit {overrides.max_price_age_days}); "
                        "refresh the catalog or raise --max-price-age.")
    return warnings


def _option(option: Option) -> dict[str, Any]:
    return {"cloud": option.cloud, "instanceType": option.instance.name, "gpuModel": option.instance.gpu_model,
            "gpusPerNode": option.instance.gpus, "nodes": option.nodes, "spotNodes": option.spot,
            "priceUsdPerHour": option.estimate.price, "priceDate": option.price_date,
            "priceSource": option.price_source, **_money(option.estimate)}


def cost_document(plan: ClusterPlan, today: date, overrides: Overrides, compare: bool = False) -> dict[str, Any]:
    """The stack's cost three ways, its assumptions, the price's date and source, warnings, and optionally the same
    GPUs on every cloud."""
    cloud = profile(plan.cloud)
    table = catalog(plan.cloud)
    price_date, source = (table.price_date, table.price_source) if table else ("", "")
    assumptions = Assumptions.of(cloud).override(**overrides.discounts())
    nodes, spot = plan.scaling.nodes_desired, spot_nodes(plan.market, plan.scaling)
    found = estimate(plan.instance.price_usd_per_hour, nodes, spot, assumptions)
    document: dict[str, Any] = {
        "stack": plan.stack, "cloud": plan.cloud, "region": plan.region, "instanceType": plan.instance.name,
        "gpuModel": plan.instance.gpu_model, "gpus": nodes * plan.instance.gpus, "nodes": nodes, "spotNodes": spot,
        "currency": "USD",
        "price": {"perNodeHourly": plan.instance.price_usd_per_hour, "date": price_date, "source": source,
                  "ageDays": price_age_days(price_date, today),
                  "stale": is_stale(price_date, today, overrides.max_price_age_days)},
        "assumptions": {"spotDiscount": assumptions.spot_discount, "reservedDiscount": assumptions.reserved_discount,
                        "regionFactor": assumptions.region_factor, "hoursPerMonth": HOURS_PER_MONTH},
        **_money(found),
        "warnings": _warnings(plan.cloud, plan.instance.price_usd_per_hour, price_date, today, overrides),
    }
    if compare:
        clouds = [CLOUDS[name] for name in PRICED_CLOUDS]
        options = same_gpus(plan.instance.gpu_model, document["gpus"], spot / nodes, clouds, overrides.discounts())
        document["compare"] = [_option(option) for option in options]
        document["compareMissing"] = sorted(set(PRICED_CLOUDS) - {o.cloud for o in options})
    return document
