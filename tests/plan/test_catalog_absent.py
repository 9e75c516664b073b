"""A cloud without a catalog yet (a profile registered before its rows): every catalog reading answers "nothing
known" instead of failing, the cost comparison offers nothing there, and a cost line names no price date or source."""

from __future__ import annotations

import dataclasses

from clouds import CLOUDS
from plan.catalog import catalog, lookup, regions, type_names
from plan.cost import plan_cost, same_gpus
from plan.model import MarketPlan, ScalingPlan
from plan.prices import ListPrice

NO_ROWS = "nocatalog"


def test_a_cloud_without_rows_knows_no_type_region_or_zone():
    assert catalog(NO_ROWS) is None
    assert lookup(NO_ROWS, "p5.48xlarge") is None
    assert type_names(NO_ROWS) == []
    assert dict(regions(NO_ROWS)) == {}
    assert "p5.48xlarge" in type_names("aws"), "a cloud with rows lists them"


def test_the_cost_comparison_skips_a_cloud_without_rows():
    without = dataclasses.replace(CLOUDS["aws"], name=NO_ROWS)
    with_rows = same_gpus("A100", 8, 0.0, [CLOUDS["aws"]], {})
    assert with_rows and {o.cloud for o in with_rows} == {"aws"}
    assert same_gpus("A100", 8, 0.0, [without, CLOUDS["aws"]], {}) == with_rows


def test_a_cost_line_without_rows_names_no_price_date_or_source():
    without = dataclasses.replace(CLOUDS["aws"], name=NO_ROWS)
    cost = plan_cost(without, ListPrice("USD", None), MarketPlan(0, 0, "", None, None, False),
                     ScalingPlan(1, 1, 1, None))
    assert (cost.price_date, cost.price_source, cost.expected_hourly) == ("", "", None)
