"""What a spec asks the cloud before it is planned (plan/facts.py): a named Capacity Block is looked up by its id, an
On-Demand Capacity Reservation is not a block, where the cluster runs is asked by its identity in the project given,
and a stack that names its image and needs no account id in its bucket's name asks nothing else."""

from __future__ import annotations

from spec_cases import shipped_spec

from clouds import profile
from plan.facts import Lookups, capacity_lookups, lookups
from plan.identity import cluster_identity

STACK = "aws-p4d-capacity-block"  # the shipped stack, and the stack name the look-ups are asked under


def spec(**market):
    return shipped_spec(STACK, market=market)


def test_a_named_block_is_looked_up_by_its_id_and_a_reservation_is_no_block():
    named = capacity_lookups(spec(reservationId="cr-0a1b2c3d4e5f60718"), STACK)
    assert named.named_block == "cr-0a1b2c3d4e5f60718" and named.capacity_block_nodes == 0
    found = capacity_lookups(spec(), STACK)
    assert found.named_block == "" and found.capacity_block_nodes == spec().counts.max
    odcr = capacity_lookups(spec(capacityBlock=False, reservationId="cr-0a1b2c3d4e5f60718"), STACK)
    assert odcr.named_block == "" and odcr.capacity_block_nodes == 0


def test_where_the_cluster_runs_is_asked_by_its_identity_in_the_project_given():
    the_spec = spec()
    asked = capacity_lookups(the_spec, STACK, "another-project")
    assert asked.cluster == cluster_identity(the_spec.name, "another-project", STACK, "us-east-1")
    assert asked.cluster != capacity_lookups(the_spec, STACK).cluster


def test_a_stack_naming_its_image_asks_no_image_and_no_instance_type():
    named = shipped_spec("ali-spot")
    assert lookups(named, profile(named.cloud)) == Lookups()
