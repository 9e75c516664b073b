"""A spec's plan and its deploy-time look-ups on its cloud's profile: the registry's lookups, so that the plan
(plan/) is handed a profile and never imports the clouds."""

from __future__ import annotations

from clouds import booted_profile, profile
from plan.bake import BakePlan, plan_bake
from plan.facts import DeployFacts, Lookups, lookups
from plan.model import ClusterPlan
from plan.planner import plan
from plan.profile import CloudProfile
from spec.cluster import ClusterSpec


def _profile_of(spec: ClusterSpec, booted: bool) -> CloudProfile:
    """The spec's cloud profile; `booted`: the one for the boot harness's machines (clouds.booted_profile)."""
    return booted_profile(spec.cloud) if booted else profile(spec.cloud)


def plan_for(spec: ClusterSpec, stack: str, facts: DeployFacts | None = None, *, booted: bool = False,
             project: str | None = None) -> ClusterPlan:
    """The plan of a validated spec on its cloud's profile; `booted`: for the boot harness's machines
    (`fleet up --boot`); `project`: the Pulumi project (default: this one's)."""
    return plan(spec, stack, _profile_of(spec, booted), facts, project=project)


def lookups_for(spec: ClusterSpec) -> Lookups:
    """What the spec's cloud needs looked up before it can be planned (plan.facts.lookups on its profile)."""
    return lookups(spec, profile(spec.cloud))


def bake_for(spec: ClusterSpec, stack: str, facts: DeployFacts | None = None, *, booted: bool = False) -> BakePlan:
    """The bake of a validated spec's matrix on its cloud's profile; `booted`: for the boot harness's machines."""
    return plan_bake(spec, stack, _profile_of(spec, booted), facts)
