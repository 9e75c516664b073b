"""plan.cost: the arithmetic, price ageing and the cross-cloud comparison, without a CLI."""

from __future__ import annotations

import math
from datetime import date, timedelta

import pytest

from clouds import CLOUDS
from plan.catalog import catalog
from plan.cost import (
    HOURS_PER_MONTH,
    MAX_PRICE_AGE_DAYS,
    Assumptions,
    Estimate,
    estimate,
    is_stale,
    price_age_days,
    same_gpus,
)


def test_three_ways_of_paying():
    found = estimate(10.0, nodes=4, spot=2, assumptions=Assumptions(spot_discount=0.6, reserved_discount=0.3))
    assert found.on_demand == pytest.approx(40.0)
    assert found.spot_mix == pytest.approx(2 * 10 + 2 * 4)
    assert found.reserved == pytest.approx(2 * 7 + 2 * 4)
    assert found.monthly(found.on_demand) == pytest.approx(40.0 * HOURS_PER_MONTH)


def test_figures_are_to_a_hundredth_of_a_cent():
    found = estimate(98.32, nodes=2, spot=1, assumptions=Assumptions(0.6, 0.3, region_factor=1.23456))
    # A node at 98.32 x 1.23456 = 121.3819392; on spot at 40% of it, 48.55277568; reserved at 70%, 84.96735744.
    assert (found.price, found.on_demand, found.spot_mix, found.reserved) == (121.3819, 242.7639, 169.9347, 133.5201)


def test_region_factor_scales_every_figure():
    base = Assumptions(0.6, 0.3)
    plain, dear = estimate(10.0, 2, 1, base), estimate(10.0, 2, 1, base.override(region_factor=1.5))
    assert dear.spot_mix == pytest.approx(plain.spot_mix * 1.5) and dear.price == pytest.approx(15.0)


def test_override_keeps_defaults_for_none():
    assert Assumptions(0.6, 0.3).override(spot_discount=None, reserved_discount=0.5) == Assumptions(0.6, 0.5)


def test_missing_price_is_none_everywhere():
    found = estimate(None, 3, 1, Assumptions(0.6, 0.3))
    assert (found.on_demand, found.spot_mix, found.reserved, found.monthly(found.spot_mix)) == (None,) * 4


def test_price_age_and_staleness():
    assert price_age_days("2026-07-20", date(2026, 8, 1)) == 12
    assert not is_stale("2026-07-20", date(2026, 8, 1))
    assert is_stale("2026-07-20", date(2026, 12, 1)) and not is_stale("2026-07-20", date(2026, 12, 1), 200)
    assert price_age_days("", date(2026, 8, 1)) is None and is_stale("", date(2026, 8, 1))
    read = date(2026, 8, 1)
    assert not is_stale(read.isoformat(), read + timedelta(days=MAX_PRICE_AGE_DAYS)), "the last day still counts"
    assert is_stale(read.isoformat(), read + timedelta(days=MAX_PRICE_AGE_DAYS + 1))


def test_a_month_is_in_whole_cents():
    assert Estimate(1.0, 0.123456, None, None).monthly(0.123456) == 90.12


def test_same_gpus_sizes_each_type_and_puts_unpriced_last():
    options = same_gpus("A100", 32, 0.0, [CLOUDS[c] for c in ("aws", "alicloud", "tencentcloud")], {})
    assert all(o.instance.gpu_model == "A100" and o.nodes * o.instance.gpus >= 32 for o in options)
    priced = [o.estimate.spot_mix is not None for o in options]
    assert priced == sorted(priced, reverse=True) and priced[0]
    assert options[0].instance.name == "p4d.24xlarge"


def test_same_gpus_offers_every_type_of_the_model_at_its_fewest_nodes_with_its_price_source():
    clouds = [CLOUDS[c] for c in ("local", "aws", "alicloud", "tencentcloud")]  # local has no catalog: skipped
    options = same_gpus("A100", 32, 0.5, clouds, {})
    expected = {(c.name, row.name) for c in clouds if catalog(c.name) for row in catalog(c.name).types.values()
                if row.gpu_model == "A100" and row.gpus}
    assert {(o.cloud, o.instance.name) for o in options} == expected
    for option in options:
        table = catalog(option.cloud)
        assert option.nodes == math.ceil(32 / option.instance.gpus)
        assert (option.price_date, option.price_source) == (table.price_date, table.price_source)
    costs = [o.estimate.spot_mix for o in options if o.estimate.spot_mix is not None]
    assert costs == sorted(costs) and len(costs) > 1


@pytest.mark.parametrize("model", sorted({row.gpu_model for cloud in CLOUDS if catalog(cloud)
                                          for row in catalog(cloud).types.values() if row.gpus}))
def test_same_gpus_is_cheapest_first_for_every_gpu_model(model):
    """One GPU of each model: every type of it is one node, and they come cheapest first whatever their catalog
    order (g4dn.12xlarge is listed before g4dn.xlarge)."""
    options = same_gpus(model, 1, 0.0, list(CLOUDS.values()), {})
    costs = [o.estimate.spot_mix for o in options if o.estimate.spot_mix is not None]
    assert costs == sorted(costs)
