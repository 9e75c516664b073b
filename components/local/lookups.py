"""The local cloud's capacity: its nodes are this machine's namespaces, so every candidate has it but one the sold-out
switch names (components/realizers/stock.py): the stock-out drill, where `fleet up` comes up on the next candidate.
The local cloud has no provider, so the program asks nothing and the preview's mocks have nothing to answer."""

from __future__ import annotations

from typing import Any

from components.realizers.stock import SOLD_OUT, sold_out
from plan.candidates import Availability, Candidate
from plan.facts import DeployFacts, Lookups

STAND_INS: dict[str, Any] = {}


def _availability(candidate: Candidate) -> Availability:
    if sold_out(candidate.zone, candidate.instance_type):
        return Availability(candidate, False, f"{candidate.instance_type} is sold out in {candidate.zone} ({SOLD_OUT})")
    return Availability(candidate, True)


def look_up(wanted: Lookups) -> DeployFacts:
    return DeployFacts(capacity=tuple(_availability(candidate) for candidate in wanted.candidates))
