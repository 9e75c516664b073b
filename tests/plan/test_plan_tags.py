"""The tags every resource of a cluster carries: its identity (what the nodes' permissions are scoped by), its stack
and who manages it, then the stack's own tags in key order; each node's role is added per role."""

from __future__ import annotations

from spec_cases import shipped_spec

from clouds.plans import plan_for
from plan.identity import CLUSTER_TAG
from plan.model import HEAD


def test_the_cluster_is_tagged_with_its_identity_stack_and_manager_before_the_stacks_tags():
    plan = plan_for(shipped_spec("aws-g5-spot", tags={"team": "ml", "cost-centre": "42"}), "g5")
    assert plan.tags == ((CLUSTER_TAG, plan.identity), ("gpufleet:stack", "g5"), ("managed-by", "gpufleet"),
                         ("cost-centre", "42"), ("team", "ml"))
    assert plan.head.tags == (*plan.tags, ("gpufleet:role", HEAD))
