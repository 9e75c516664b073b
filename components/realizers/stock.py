"""The switches the preview's stand-in look-ups answer by (components/<cloud>/lookups.py), so a drill or a test can
make a candidate sold out, or say the cluster already runs somewhere, without a cloud.

GPUFLEET_SOLD_OUT: candidates sold out to every stand-in capacity look-up and to the local cloud's own
(components/local/lookups.py); a comma-separated list of `<zone>/<instance type>` or `<instance type>` (sold out in
every zone). GPUFLEET_RUNS_ON: where the cluster's instances run now, as the stand-ins of the clouds' instance look-ups
answer; a comma-separated list of `<zone>/<instance type>`, one instance each. GPUFLEET_BLOCK_ENDS_IN: in how many
hours the stand-in AWS Capacity Blocks end; a comma-separated list of `<zone>/<instance type>=<hours>`,
`<instance type>=<hours>` or `<reservation id>=<hours>` (a negative number: ended that long ago); a block it does not
name ends in two weeks."""

from __future__ import annotations

import os
from datetime import datetime, timedelta

SOLD_OUT = "GPUFLEET_SOLD_OUT"
RUNS_ON = "GPUFLEET_RUNS_ON"
BLOCK_ENDS_IN = "GPUFLEET_BLOCK_ENDS_IN"


def _named(switch: str) -> list[str]:
    return [item.strip() for item in os.environ.get(switch, "").split(",") if item.strip()]


def sold_out(zone: str, instance_type: str) -> bool:
    """Whether the switch makes this type sold out in this zone."""
    named = set(_named(SOLD_OUT))
    return instance_type in named or f"{zone}/{instance_type}" in named


def runs_on() -> list[tuple[str, str]]:
    """The (zone, instance type) of each instance the switch says the cluster runs now; [] where it says none."""
    return [(zone, kind) for zone, _, kind in (item.partition("/") for item in _named(RUNS_ON))]


def block_ends(now: datetime, *names: str) -> datetime:
    """When the switch says the stand-in Capacity Block known by any of these names ends, seen from `now`."""
    listed = dict(item.partition("=")[::2] for item in _named(BLOCK_ENDS_IN))
    hours = next((listed[name] for name in names if name in listed), 14 * 24)
    return now + timedelta(hours=float(hours))
