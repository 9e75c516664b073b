"""The Pulumi program's body, kept out of __main__.py so `pulumi up` and `fleet plan` run the same code."""

from __future__ import annotations

import pulumi

from components.clouds import CLOUDS
from components.errors import SpecError
from components.plan.model import ClusterPlan
from components.plan.planner import plan
from components.realizers import realize
from components.rules import check
from components.spec import ClusterSpec, parse_spec
from components.stackfile import CLUSTER_KEY


def _region(raw: object) -> str:
    """The region from the cloud's provider key (`aws:region`, ...), where Pulumi users already set it."""
    cloud = CLOUDS.get(raw.get("cloud")) if isinstance(raw, dict) else None
    if cloud is None or cloud.region_key is None:
        return ""
    namespace, key = cloud.region_key.split(":")
    return pulumi.Config(namespace).get(key) or ""


def load(stack: str) -> tuple[ClusterSpec, ClusterPlan]:
    """Config -> spec -> plan, or a SpecError listing every problem."""
    raw = pulumi.Config("gpufleet").get_object("cluster")
    spec = check(parse_spec(raw, _region(raw), stack))
    return spec, plan(spec, stack)


class InvalidStack(pulumi.RunError):
    """What `pulumi up` shows for a bad stack: the engine prints a RunError's message without a traceback."""

    def __init__(self, error: SpecError) -> None:
        self.spec_error = error
        super().__init__(f"{error.render()}\n(config key: {CLUSTER_KEY})")


def main() -> None:
    try:
        _, cluster = load(pulumi.get_stack())
    except SpecError as error:
        raise InvalidStack(error) from None
    outputs = realize(cluster)
    for key, value in outputs.items():
        pulumi.export(key, value)
