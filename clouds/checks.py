"""The stack checks of names, locations, networks, ports and limits, in the order they report (each module holds
the reasons and sources; clouds.rules runs them after its own rules)."""

from __future__ import annotations

from clouds.caps import firewall_rules, root_volume
from clouds.locations import region_and_zone
from clouds.names import bucket, reservation, tags
from clouds.networks import node_bounds, ssh_sources, vpc
from clouds.ports import ports

CHECKS = (region_and_zone, bucket, tags, reservation, vpc, node_bounds, ssh_sources, firewall_rules, ports, root_volume)
