"""The switch for a stock-out: candidates named in GPUFLEET_SOLD_OUT are sold out to every stand-in look-up of the
preview (components/<cloud>/lookups.py) and to the local cloud's own (components/local/lookups.py), so a drill or a
test can make the first candidate fail without a cloud.

The value is a comma-separated list of `<zone>/<instance type>` or `<instance type>` (sold out in every zone)."""

from __future__ import annotations

import os

SOLD_OUT = "GPUFLEET_SOLD_OUT"


def sold_out(zone: str, instance_type: str) -> bool:
    """Whether the switch makes this type sold out in this zone."""
    named = {item.strip() for item in os.environ.get(SOLD_OUT, "").split(",") if item.strip()}
    return instance_type in named or f"{zone}/{instance_type}" in named
