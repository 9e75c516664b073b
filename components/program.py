"""The Pulumi program's body, kept out of __main__.py so `pulumi up` and `fleet plan` run the same code."""

from __future__ import annotations

import json

import pulumi

from components.clouds import CLOUDS
from components.errors import SpecError
from components.plan.model import ClusterPlan
from components.plan.planner import plan
from components.plan.software import FAILURE_BUDGET, PERMANENT_FAILURES, failure_records
from components.realizers import look_up, realize
from components.rules import validate
from components.spec import ClusterSpec
from components.stackfile import CLUSTER_KEY


def region_key(raw: object) -> str | None:
    """The provider key holding the region (`aws:region`, ...), where Pulumi users already set it."""
    cloud = CLOUDS.get(raw.get("cloud")) if isinstance(raw, dict) else None
    return cloud.region_key if cloud else None


def load(raw: object, region: str, stack: str) -> tuple[ClusterSpec, ClusterPlan]:
    """The cluster object and region -> spec -> the cloud's deploy-time facts -> plan, or a SpecError listing every
    problem. Look-ups go through the Pulumi runtime: the engine's providers, or the preview's mocks."""
    spec = validate(raw, region, stack)
    return spec, plan(spec, stack, look_up(spec))


def plan_from_config() -> ClusterPlan:
    """The plan of the stack the Pulumi runtime is running, from its config."""
    raw = pulumi.Config("gpufleet").get_object("cluster")
    region = ""
    if key := region_key(raw):
        namespace, name = key.split(":")
        region = pulumi.Config(namespace).get(name) or ""
    return load(raw, region, pulumi.get_stack())[1]


def software_outputs(cluster: ClusterPlan) -> dict[str, object]:
    """Every cloud's stack says which software matrix its nodes hold to and where a stopped replacement loop shows:
    the failure records in the bucket and the node metric gpufleet-report sets."""
    return {"software": json.loads(cluster.software.to_json()),
            "failureBudget": {"nodes": FAILURE_BUDGET, "permanentReasons": list(PERMANENT_FAILURES),
                              "records": failure_records(cluster.storage.checkpoint_uri),
                              "metric": "gpufleet_replacement_stopped"}}


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
    outputs = realize(cluster) | software_outputs(cluster)
    for key, value in outputs.items():
        pulumi.export(key, value)
