"""Tencent prices: a spot stack without market.maxSpotPrice bids the type's China-site list price, the preview's cost is
in CNY for the priced rows, and only a type with no published price is refused (docs/cloud-facts.md#list-prices)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from stack_preview import preview_stack

from fleet.plan_command import cost_of
from fleet.stacks import spec_and_plan
from plan import catalog
from spec.errors import SpecError
from spec.stackfile import load_stack_file

SPOT_STACK = Path(__file__).resolve().parents[2] / "stacks" / "Pulumi.tencent-spot.yaml"
SPOT_PRICE = "spotMaxPrice"


def _without_max_price(write_stack, instance_type: str):
    """The shipped spot stack with its maxSpotPrice removed, on the given type."""
    config = yaml.safe_load(SPOT_STACK.read_text())["config"]
    cluster = config.pop("gpufleet:cluster")
    del cluster["market"]["maxSpotPrice"]
    cluster["instanceType"] = instance_type
    return write_stack(cluster, region=None, extra=config)


def test_spot_without_a_max_price_bids_the_list_price(write_stack):
    path = _without_max_price(write_stack, "GN7.2XLARGE32")
    _, plan, preview = preview_stack(path)
    listed = catalog.lookup("tencentcloud", "GN7.2XLARGE32").price_cny_per_hour
    assert listed is not None and plan.market.max_spot_price == listed
    bids = {r["inputs"][SPOT_PRICE] for r in preview.resources if SPOT_PRICE in r["inputs"]}
    assert bids == {f"{listed:.2f}"}, "every spot node and AS config bids the on-demand list price"


def test_a_stated_max_price_wins():
    _, plan, _ = preview_stack(SPOT_STACK)
    assert plan.market.max_spot_price == 2.5


def test_the_preview_costs_a_priced_row_in_cny():
    _, plan, _ = preview_stack(SPOT_STACK)
    cost = cost_of(plan)
    on_demand = catalog.lookup("tencentcloud", plan.instance.name).price_cny_per_hour * plan.scaling.nodes_desired
    assert cost["currency"] == "CNY" and cost["onDemandHourly"] == pytest.approx(on_demand)
    assert cost["hourly"] < cost["onDemandHourly"], "spot nodes at the spot discount"


def test_a_type_without_a_published_price_is_refused_naming_the_fix(write_stack):
    path = _without_max_price(write_stack, "PNV4.7XLARGE116")
    with pytest.raises(SpecError) as caught:
        spec_and_plan(load_stack_file(path))
    (problem,) = [p for p in caught.value.problems if p.path.endswith("market.maxSpotPrice")]
    assert "no published CNY list price" in problem.message and "set market.maxSpotPrice" in problem.fix


@pytest.mark.parametrize("row", catalog.catalog("tencentcloud").types.values(), ids=lambda r: r.name)
def test_every_row_has_a_cny_price_or_says_why(row):
    """A row that cites the price overview has its price; a row without one says why."""
    cites = "tencent-gpu-prices" in row.sources
    assert (row.price_cny_per_hour is not None) == cites
    assert cites or "priceCnyPerHour" in row.unknown
