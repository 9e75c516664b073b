"""The planner's guards: a spec planned without the deploy-time facts it needs, or one `clouds.rules.validate` would
have refused, stops the planner naming why, never a plan that leaves the part out. Programs validate first (and
`fleet` looks the facts up); these hold the planner to it for a caller that does not."""

from __future__ import annotations

import pytest
from spec_cases import shipped_cluster, shipped_spec

from clouds.plans import plan_for
from plan.facts import DeployFacts
from spec.cluster import ClusterSpec, parse_spec


def unvalidated(stack: str, region: str | None = None, **changes) -> ClusterSpec:
    """A shipped stack's cluster with `changes` (in `region`, else its own), shaped but not checked against its
    cloud's rules."""
    cluster, own_region, name = shipped_cluster(stack, **changes)
    return parse_spec(cluster, region or own_region, name)


def test_a_capacity_block_without_the_look_ups_reservation_is_refused_naming_the_look_up():
    spec = shipped_spec("aws-p4d-capacity-block")
    with pytest.raises(ValueError) as refused:
        plan_for(spec, "cb", DeployFacts())
    assert str(refused.value) == ("a Capacity Block without reservationId needs the deploy-time look-up "
                                  "(plan.facts)")
    assert plan_for(spec, "cb", DeployFacts(reservation_id="cr-0123456789abcdef0")).market.reservation_id == \
        "cr-0123456789abcdef0"


def test_a_bundle_domain_where_the_default_endpoint_takes_the_upload_is_refused_with_the_clouds_reason():
    # Outside the mainland OSS's public endpoint takes the upload (docs/cloud-facts.md#alibaba-oss-public-endpoint).
    spec = unvalidated("ali-erdma", "ap-southeast-1", zone="ap-southeast-1a", storage={"bundleDomain": "example.com"})
    with pytest.raises(ValueError) as refused:
        plan_for(spec, "bd", DeployFacts())
    assert str(refused.value).startswith("storage.bundleDomain reached the planner where it does not apply: "), \
        refused.value


def test_an_ask_the_cloud_cannot_place_is_refused_with_the_clouds_reason():
    spec = unvalidated("ali-erdma", network={"antiAffinity": True})
    with pytest.raises(ValueError) as refused:
        plan_for(spec, "aa", DeployFacts())
    assert str(refused.value) == ("unplaceable spec reached the planner: it spreads no nodes over hosts: its "
                                  "deployment sets here are LowLatency, which packs them.")
