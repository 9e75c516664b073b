"""Candidates: the ordered places a cluster may come up (the stack's own zone, type and market, then its
`candidates`), their availability as the cloud's look-ups report it, and the one the cluster is planned on.

The planner never asks the cloud: the look-ups answer `Availability` per candidate (components/<cloud>/lookups.py),
including whether the cluster already has instances there, and `choose` turns the candidate a running cluster runs
on, or else the first available one, into the spec the plan is made from, or refuses the stack before any resource
exists, naming every candidate tried and why it was not taken. A running cluster keeps its place whatever the
capacity there now: looking again at each `pulumi up` must neither refuse an update nor move (and so replace) every
node; the look-ups choose only for nodes that do not exist yet.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from datetime import datetime

from spec.cluster import ClusterSpec
from spec.errors import Problem, SpecError
from spec.stackfile import CLUSTER_KEY

ON_DEMAND = "on-demand"


@dataclass(frozen=True)
class Candidate:
    """One place to come up: a zone, an instance type, and whether every node runs on demand."""

    zone: str
    instance_type: str
    on_demand: bool

    @property
    def label(self) -> str:
        return f"{self.instance_type} in {self.zone}{' on demand' if self.on_demand else ''}"


@dataclass(frozen=True)
class Availability:
    """What the cloud said of one candidate: available or not, and why not; the reservation that holds it where its
    capacity is one the account bought (an AWS Capacity Block) and when that reservation ends (plan/blocks.py);
    whether the cluster has instances there now."""

    candidate: Candidate
    available: bool
    reason: str = ""
    reservation_id: str | None = None
    running: bool = False
    ends: datetime | None = None


def running_on(capacity: tuple[Availability, ...], places: Collection[tuple[str, str]]) -> tuple[Availability, ...]:
    """The answers, each marked running where the cluster has instances of its type in its zone (`places`: the
    (zone, instance type) of each instance the cloud holds for the cluster now)."""
    return tuple(replace(answer, running=(answer.candidate.zone, answer.candidate.instance_type) in places)
                 for answer in capacity)


def chosen(capacity: tuple[Availability, ...]) -> Availability | None:
    """The candidate the cluster is planned on: the first it runs on, whatever its capacity now; else, for a cluster
    that runs on none of them (new, or moved off its place by an edit of the stack), the first available; None when
    neither."""
    return next((a for a in capacity if a.running), None) or next((a for a in capacity if a.available), None)


def _filled(spec: ClusterSpec, written) -> Candidate:
    """A written candidate with the stack's zone, type and market where it leaves them out."""
    return Candidate(written.zone or spec.zone, written.instance_type or spec.instance_type,
                     on_demand=written.market == ON_DEMAND or spec.market.spot_percent == 0)


def candidates(spec: ClusterSpec) -> tuple[Candidate, ...]:
    """The stack's own zone, type and market first, then each of its `candidates` (each place once)."""
    own = Candidate(spec.zone, spec.instance_type, on_demand=spec.market.spot_percent == 0)
    return tuple(dict.fromkeys((own, *(_filled(spec, written) for written in spec.candidates))))


def applied(spec: ClusterSpec, candidate: Candidate) -> ClusterSpec:
    """The spec as it is on this candidate: its zone and type, on demand throughout where the candidate says so. A
    reservation the stack names (an ODCR or a Capacity Block: `market.reservationId`) holds the stack's own type in
    its own zone and nothing else (docs/cloud-facts.md#aws-capacity): on a candidate of another type or zone the nodes
    launch without it, or every launch there would fail. A Capacity Block the stack names none of is the look-up's,
    found for each candidate in its own zone and type."""
    market = spec.market
    if candidate.on_demand:
        market = market.model_copy(update={"spot_percent": 0, "max_spot_price": None})
    if market.reservation_id and (candidate.zone, candidate.instance_type) != (spec.zone, spec.instance_type):
        market = market.model_copy(update={"reservation_id": None, "capacity_block": False})
    return spec.model_copy(update={"zone": candidate.zone, "instance_type": candidate.instance_type,
                                   "market": market, "candidates": []})


def candidate_problems(spec: ClusterSpec, problems_of) -> Iterable[Problem]:
    """What the rules say of the stack on each of its `candidates`, under that candidate's path: a candidate the
    cloud cannot build (a type off the catalog, a fabric the type lacks) is refused like the stack itself."""
    for index, written in enumerate(spec.candidates):
        candidate = _filled(spec, written)
        for problem in problems_of(applied(spec, candidate)):
            yield Problem(f"{CLUSTER_KEY}.candidates[{index}]", f"on {candidate.label}: {problem.path} "
                          f"{problem.message}", problem.fix)


def choose(spec: ClusterSpec, capacity: tuple[Availability, ...]) -> tuple[ClusterSpec, Availability]:
    """The spec on the chosen candidate (`chosen`), and that candidate's answer; a SpecError naming each candidate and
    why when there is none: nothing runs and nothing is available."""
    if answer := chosen(capacity):
        return applied(spec, answer.candidate), answer
    tried = "; ".join(f"{a.candidate.label}: {a.reason}" for a in capacity)
    field = "candidates" if spec.candidates else "instanceType"
    raise SpecError([Problem(f"{CLUSTER_KEY}.{field}", f"no candidate has capacity now, so nothing was created "
                             f"(tried {tried}).", "add candidates in other zones, types or markets, or try again "
                             "later.")])
