"""Registry of the clouds gpufleet targets: one module each, declaring facts and what the cloud cannot do."""

from __future__ import annotations

from clouds.alicloud import ALICLOUD
from clouds.aws import AWS
from clouds.local import LOCAL, LOCAL_MACHINES
from clouds.tencentcloud import TENCENTCLOUD
from plan.facts import DeployFacts, Lookups, lookups
from plan.model import ClusterPlan
from plan.planner import plan
from plan.profile import CloudProfile
from spec.cluster import ClusterSpec

CLOUDS: dict[str, CloudProfile] = {c.name: c for c in (AWS, ALICLOUD, TENCENTCLOUD, LOCAL)}


def profile(cloud: str) -> CloudProfile:
    """The profile of a cloud the spec has already accepted."""
    return CLOUDS[cloud]


def booted_profile(cloud: str) -> CloudProfile:
    """The profile of the cloud's nodes as machines the boot harness boots (`fleet up --boot`): a cloud's nodes are
    machines already; the local cloud's, processes on this machine otherwise, become machines."""
    return LOCAL_MACHINES if cloud == LOCAL.name else CLOUDS[cloud]


def plan_for(spec: ClusterSpec, stack: str, facts: DeployFacts | None = None, *, booted: bool = False) -> ClusterPlan:
    """The plan of a validated spec on its cloud's profile; `booted`: for the boot harness's machines
    (`fleet up --boot`)."""
    return plan(spec, stack, booted_profile(spec.cloud) if booted else profile(spec.cloud), facts)


def lookups_for(spec: ClusterSpec) -> Lookups:
    """What the spec's cloud needs looked up before it can be planned (plan.facts.lookups on its profile)."""
    return lookups(spec, profile(spec.cloud))
