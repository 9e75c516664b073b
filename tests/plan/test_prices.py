"""The list price a plan's cost is in (plan/prices.py `list_price`): USD where the catalog has it, else CNY (Tencent's
China site), else an unknown price in USD - Alibaba's rows carry none (docs/cloud-facts.md; issue 34)."""

from __future__ import annotations

from plan import catalog
from plan.prices import ListPrice, list_price


def test_each_clouds_rows_are_priced_in_the_currency_their_catalog_has():
    assert list_price(catalog.lookup("aws", "g4dn.xlarge")) == ListPrice("USD", 0.526)
    assert list_price(catalog.lookup("tencentcloud", "GN7.2XLARGE32")) == ListPrice("CNY", 8.68)
    assert list_price(catalog.lookup("alicloud", "ecs.gn6v-c8g1.2xlarge")) == ListPrice("USD", None)
