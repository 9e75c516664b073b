"""The Pulumi program's body, kept out of __main__.py so `pulumi up` and `fleet plan` run the same code."""

from __future__ import annotations

from datetime import UTC, datetime

import pulumi

from clouds import CLOUDS
from clouds.plans import plan_for
from clouds.rules import validate
from components.realizers import look_up, realize
from plan.blocks import ending_warning
from plan.mirrors import mirror_advice
from plan.model import ClusterPlan
from spec.cluster import ClusterSpec
from spec.configkeys import BAKE_KEY, bake_key_problem
from spec.errors import SpecError
from spec.stackfile import CLUSTER_KEY, cluster_object


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
    """The stack's cluster object and its region, from the config of the stack the Pulumi runtime is running: the
    engine hands an object as JSON, which is read as the loader reads a cluster written as a JSON string."""
    raw = cluster_object(pulumi.Config("gpufleet").get("cluster"))
    region = ""
    if key := region_key(raw):
        namespace, name = key.split(":")
        region = pulumi.Config(namespace).get(name) or ""
    return raw, region


def plan_from_config() -> ClusterPlan:
    """The plan of the stack the Pulumi runtime is running, from its config."""
    return load(*cluster_config(), pulumi.get_stack())[1]


class InvalidStack(pulumi.RunError):
    """What `pulumi up` shows for a bad stack: the engine prints a RunError's message without a traceback."""

    def __init__(self, error: SpecError) -> None:
        self.spec_error = error
        super().__init__(f"{error.render()}\n(config key: {CLUSTER_KEY})")


def main() -> ClusterPlan:
    """Plan the stack and declare its resources; returns the plan it realized (the preview reads it off). A stack
    holding the bake's key is refused: a bake runs only as `fleet image build`'s own program (components/
    bake_program.py), never as a cluster stack's `pulumi up`, which would replace the cluster with one machine."""
    try:
        if pulumi.Config("gpufleet").get(BAKE_KEY.split(":", 1)[1]) is not None:
            raise SpecError([bake_key_problem()])
        cluster = plan_from_config()
    except SpecError as error:
        raise InvalidStack(error) from None
    for advice in mirror_advice(cluster, CLOUDS[cluster.cloud]):
        pulumi.log.warn(advice)
    if ending := ending_warning(cluster.capacity, datetime.now(UTC)):
        pulumi.log.warn(ending)
    for key, value in realize(cluster).items():
        pulumi.export(key, value)
    return cluster
