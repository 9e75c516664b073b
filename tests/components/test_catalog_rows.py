"""The catalog is data: every row is complete, sourced, and consistent with its fabric."""

from __future__ import annotations

import pytest

from components import catalog
from components.clouds import CLOUDS

CLOUDS_WITH_ROWS = [name for name in CLOUDS if catalog.catalog(name)]


@pytest.mark.parametrize("cloud", CLOUDS_WITH_ROWS)
def test_rows_are_consistent(cloud):
    table = catalog.catalog(cloud)
    assert table.price_date and table.price_source
    for name, row in table.types.items():
        assert row.name == name
        assert row.fabric in CLOUDS[cloud].fabrics, f"{name}: {row.fabric} is not a fabric of {cloud}"
        assert (row.fabric == "tcp") == (row.fabric_devices == 0), name
        assert row.gpus == 0 or row.peak_tflops_bf16 > 0, name
        assert (row.busbw_baseline_gbs is None) == (row.gpus < 2), name


def test_aws_rows_of_facts_md():
    p5 = catalog.lookup("aws", "p5.48xlarge")
    assert (p5.gpus, p5.fabric_devices, p5.network_cards, p5.price_usd_per_hour) == (8, 32, 32, 55.04)
    assert catalog.lookup("aws", "p5en.48xlarge").fabric_devices == 16
    assert catalog.lookup("aws", "g4dn.xlarge").fabric == "tcp"
    assert catalog.lookup("aws", "p5e.48xlarge").price_usd_per_hour is None
