"""What a spec asks the cloud before it is planned (plan/facts.py `capacity_lookups`): a named Capacity Block is
looked up by its id, an On-Demand Capacity Reservation is not a block, and where the cluster runs is asked by its
identity in the project given."""

from __future__ import annotations

from clouds.rules import validate
from plan.facts import capacity_lookups
from plan.identity import cluster_identity
from plan.paths import PROJECT_ROOT
from spec.stackfile import CLUSTER_KEY, load_stack_file

STACK = load_stack_file(PROJECT_ROOT / "stacks" / "Pulumi.aws-p4d-capacity-block.yaml")


def spec(**market):
    cluster = STACK.config[CLUSTER_KEY]
    written = {**cluster, "market": {**cluster["market"], **market}}
    return validate(written, STACK.config["aws:region"], STACK.name)


def test_a_named_block_is_looked_up_by_its_id_and_a_reservation_is_no_block():
    named = capacity_lookups(spec(reservationId="cr-0a1b2c3d4e5f60718"), STACK.name)
    assert named.named_block == "cr-0a1b2c3d4e5f60718" and named.capacity_block_nodes == 0
    found = capacity_lookups(spec(), STACK.name)
    assert found.named_block == "" and found.capacity_block_nodes == spec().counts.max
    odcr = capacity_lookups(spec(capacityBlock=False, reservationId="cr-0a1b2c3d4e5f60718"), STACK.name)
    assert odcr.named_block == "" and odcr.capacity_block_nodes == 0


def test_where_the_cluster_runs_is_asked_by_its_identity_in_the_project_given():
    the_spec = spec()
    asked = capacity_lookups(the_spec, STACK.name, "another-project")
    assert asked.cluster == cluster_identity(the_spec.name, "another-project", STACK.name, "us-east-1")
    assert asked.cluster != capacity_lookups(the_spec, STACK.name).cluster
