"""The local cloud's look-ups: its nodes are this machine's namespaces, so every candidate has capacity but one the
sold-out switch names (components/realizers/stock.py), the stock-out drill where `fleet up` comes up on the next
candidate; and a cluster that is up runs where `fleet up` recorded it (`record`, `forget`: here/local/cluster.py), as
a cloud lists a cluster's instances by its tag. The local cloud has no provider, so the program asks nothing and the
preview's mocks have nothing to answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from components.realizers.stock import SOLD_OUT, sold_out
from plan.candidates import Availability, Candidate, running_on
from plan.facts import DeployFacts, Lookups

STAND_INS: dict[str, Any] = {}
# One file per local cluster that is up, named by its identity, holding `<zone>/<instance type>`.
RUNNING = Path("/tmp/gpufleet.running")  # a dot: no local cluster directory (/tmp/gpufleet-<identity>) is named so


def record(cluster: str, zone: str, instance_type: str) -> None:
    """The cluster (its identity) is up, its nodes of this type in this zone."""
    RUNNING.mkdir(parents=True, exist_ok=True)
    (RUNNING / cluster).write_text(f"{zone}/{instance_type}\n")


def forget(cluster: str) -> None:
    """The cluster is no longer up."""
    (RUNNING / cluster).unlink(missing_ok=True)


def _places(cluster: str) -> set[tuple[str, str]]:
    try:
        zone, _, kind = (RUNNING / cluster).read_text().strip().partition("/")
    except FileNotFoundError:
        return set()
    return {(zone, kind)}


def _availability(candidate: Candidate) -> Availability:
    if sold_out(candidate.zone, candidate.instance_type):
        return Availability(candidate, False, f"{candidate.instance_type} is sold out in {candidate.zone} ({SOLD_OUT})")
    return Availability(candidate, True)


def look_up(wanted: Lookups) -> DeployFacts:
    capacity = tuple(_availability(candidate) for candidate in wanted.candidates)
    return DeployFacts(capacity=running_on(capacity, _places(wanted.cluster) if wanted.cluster else set()))
