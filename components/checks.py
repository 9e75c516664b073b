"""The stack checks of names, locations, networks, ports and limits, in the order they report (each module holds
the reasons and sources; components.rules runs them after its own rules)."""

from __future__ import annotations

from components.cloudcaps import firewall_rules, root_volume
from components.locations import region_and_zone
from components.names import bucket, reservation, tags
from components.networks import node_bounds, ssh_sources, vpc
from components.ports import ports

CHECKS = (region_and_zone, bucket, tags, reservation, vpc, node_bounds, ssh_sources, firewall_rules, ports, root_volume)
