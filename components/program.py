"""The Pulumi program's body, kept out of __main__.py so `pulumi up` and `fleet plan` run the same code."""

from __future__ import annotations

import pulumi

from clouds import CLOUDS
from clouds.plans import plan_for
from clouds.rules import validate
from components.realizers import look_up, realize
from plan.model import ClusterPlan
from spec.cluster import ClusterSpec
from spec.errors import SpecError
from spec.stackfile import CLUSTER_KEY


def region_key(raw: object) -> str | None:
    """The provider key holding the region (`aws:region`, ...), where Pulumi users already set it."""
    written = raw.get("cloud") if isinstance(raw, dict) else None
    cloud = CLOUDS.get(written) if isinstance(written, str) else None  # `cloud: [aws]` is the spec's to refuse
    return cloud.region_key if cloud else None


def load(raw: object, region: str, stack: str) -> tuple[ClusterSpec, ClusterPlan]:
    """The cluster object and region -> spec -> the cloud's deploy-time facts -> plan, or a SpecError listing every
    problem. Look-ups go through the Pulumi runtime: the engine's providers, or the preview's mocks."""
    spec, facts = look_up(validate(raw, region, stack), stack, pulumi.get_project())
    return spec, plan_for(spec, stack, facts, project=pulumi.get_project())


def cluster_config() -> tuple[object, str]:
    """The stack's cluster object and its region, from the config of the stack the Pulumi runtime is running."""
    raw = pulumi.Config("gpufleet").get_object("cluster")
    region = ""
    if key := region_key(raw):
        namespace, name = key.split(":")
        region = pulumi.Config(namespace).get(name) or ""
    return raw, region


def plan_from_config() -> ClusterPlan:
    """The plan of the stack the Pulumi runtime is running, from its config."""
    return load(*cluster_config(), pulumi.get_stack())[1]


def monitoring_advice(cluster: ClusterPlan) -> list[str]:
    """What the plan leaves to the stack for monitoring: a Docker Hub mirror where the cloud has none for every
    account (CloudProfile.hub_mirror_advice). Training never waits on the monitor, so this is a warning."""
    cloud = CLOUDS[cluster.cloud]
    advice = cloud.hub_mirror_advice(cluster.region)
    if not advice or cluster.network.registry_mirror:
        return []
    return [f"monitoring needs network.registryMirror in {cluster.region}: {cloud.title} has no Docker Hub mirror "
            f"there for every account; {advice}. Without one, Prometheus and Grafana may not pull: the monitor then "
            "fails in its own status, and training does not wait on it. The DCGM exporter comes from nvcr.io, which "
            "no cloud here mirrors."]


class InvalidStack(pulumi.RunError):
    """What `pulumi up` shows for a bad stack: the engine prints a RunError's message without a traceback."""

    def __init__(self, error: SpecError) -> None:
        self.spec_error = error
        super().__init__(f"{error.render()}\n(config key: {CLUSTER_KEY})")


def main() -> None:
    try:
        cluster = plan_from_config()
    except SpecError as error:
        raise InvalidStack(error) from None
    for advice in monitoring_advice(cluster):
        pulumi.log.warn(advice)
    for key, value in realize(cluster).items():
        pulumi.export(key, value)
