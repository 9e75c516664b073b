"""The default checkpoint bucket's name: `gpufleet-<cluster name>-<digest>`, which for the longest cluster name a stack
can have (spec/names.py CLUSTER_NAME_MAX) still fits the 63 characters every cloud's store allows."""

from __future__ import annotations

from spec_cases import shipped_spec

from clouds.plans import plan_for
from plan.identity import DIGEST_CHARS
from spec.names import CLUSTER_NAME_MAX


def test_the_longest_cluster_name_gives_a_bucket_within_63_characters():
    name = "n" * CLUSTER_NAME_MAX
    plan = plan_for(shipped_spec("aws-g5-spot", name=name), "longest")
    assert plan.storage.bucket.startswith(f"gpufleet-{name}-")
    assert len(plan.storage.bucket) == len("gpufleet-") + CLUSTER_NAME_MAX + 1 + DIGEST_CHARS <= 63
