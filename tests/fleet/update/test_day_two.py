"""Day two checked as the engine runs it: every shipped cloud stack, deployed, then each change a user makes (a first
`pulumi up`, new code, a changed setting, a node lost, `fleet heal`, `fleet roll`), carried out step by step by the
engine model, with every invariant of the cloud model checked after every step (day_two_cases.py)."""

from __future__ import annotations

import boto3
import pytest
from day_two_cases import STACKS, Deployment, fleet, names_of, new_code, preview_of, settings, stack_file
from moto import mock_aws

from plan.model import HEAD, ROLE_TAG


def fixed_nodes(stack: str) -> list[str]:
    """The stack's nodes no group holds (the head, fixed workers): what `fleet heal` replaces."""
    return names_of(preview_of(stack_file(stack)), "node")


EACH_FIXED_NODE = [(stack, node) for stack in STACKS for node in fixed_nodes(stack)]


@pytest.fixture(scope="module")
def bucket_store():
    with mock_aws():
        yield boto3.client("s3", region_name="us-east-1")


@pytest.fixture
def deployed(bucket_store):
    """stack -> the stack deployed, its nodes in service, marks in an empty bucket."""

    def deploy(stack: str) -> Deployment:
        bucket = preview_of(stack_file(stack)).outputs["checkpointUri"].split("://", 1)[1].split("/")[0]
        bucket_store.create_bucket(Bucket=bucket)
        for item in bucket_store.list_objects_v2(Bucket=bucket).get("Contents", []):
            bucket_store.delete_object(Bucket=bucket, Key=item["Key"])
        return Deployment.of(stack_file(stack), bucket_store)

    return deploy


@pytest.mark.parametrize("stack", STACKS)
def test_a_first_up_makes_the_cluster_the_plan_says(stack):
    deployment = Deployment.empty(stack_file(stack))
    deployment.up(preview_of(stack_file(stack)))
    assert deployment.problems == []


@pytest.mark.parametrize("stack", STACKS)
def test_new_code_by_pulumi_up(stack):
    deployment = Deployment.of(stack_file(stack))
    with new_code():
        outcome = deployment.up(preview_of(stack_file(stack)))
    assert deployment.problems == []
    assert set(fixed_nodes(stack)) <= set(outcome.ops("replace")), "new code replaces every node outside groups"


@pytest.mark.parametrize(("stack", "change"), [(stack, change) for stack in STACKS for change in settings(stack)])
def test_a_changed_setting(stack, change):
    deployment = Deployment.of(stack_file(stack))
    deployment.up(preview_of(stack_file(stack, **settings(stack)[change])))
    assert deployment.problems == []


@pytest.mark.parametrize(("stack", "node"), EACH_FIXED_NODE)
def test_a_lost_node_is_made_anew_by_pulumi_up(stack, node):
    deployment = Deployment.of(stack_file(stack))
    deployment.lose(node)
    deployment.refresh({deployment.key(node)})
    outcome = deployment.up(preview_of(stack_file(stack)))
    assert deployment.problems == []
    assert outcome.ops("create") == [node]


@pytest.mark.parametrize(("stack", "node"), EACH_FIXED_NODE)
def test_fleet_heal_makes_a_lost_node_anew(stack, node, deployed, monkeypatch):
    deployment = deployed(stack)
    deployment.lose(node)
    assert fleet("heal", deployment, monkeypatch) == 0
    assert deployment.problems == []
    assert [outcome.ops("create") for outcome in deployment.outcomes] == [[node]]


@pytest.mark.parametrize(("stack", "node"), EACH_FIXED_NODE)
def test_fleet_heal_replaces_a_failed_node(stack, node, deployed, monkeypatch):
    deployment = deployed(stack)
    deployment.mark(node, "failed:nccl:allreduce")
    assert fleet("heal", deployment, monkeypatch) == 0
    assert deployment.problems == []
    assert [outcome.ops("replace")[0] for outcome in deployment.outcomes] == [node]


@pytest.mark.parametrize(("stack", "node"), EACH_FIXED_NODE)
def test_fleet_heal_with_code_not_deployed_yet_replaces_nothing(stack, node, deployed, monkeypatch):
    """main moved on (new code, not deployed): a failed node's replacement would boot a bundle never uploaded (and
    fail, and be replaced again at the next heal); it waits for the deploy, which replaces it with the new code."""
    deployment = deployed(stack)
    deployment.mark(node, "failed:nccl:allreduce")
    with new_code():
        healed = fleet("heal", deployment, monkeypatch)
        again = fleet("heal", deployment, monkeypatch)
    assert deployment.problems == []
    takes_template = rule_kind_template(stack, node)
    assert (healed, again) == ((0, 0) if takes_template else (1, 1))
    assert [o.ops("replace")[:1] for o in deployment.outcomes] == ([[node]] if takes_template else [])


def rule_kind_template(stack: str, node: str) -> bool:
    """The node takes its user-data from a launch template (AWS): a targeted replacement keeps the deployed one."""
    from fleet.update.forcing import rule

    record = next(r for r in preview_of(stack_file(stack)).resources if r["name"] == node and r["options"]["custom"])
    return "template" in rule(record["type"]).model


@pytest.mark.parametrize("stack", STACKS)
def test_new_code_by_fleet_roll(stack, deployed, monkeypatch):
    deployment = deployed(stack)
    with new_code():
        assert fleet("roll", deployment, monkeypatch, "--timeout", "0") == 0
    assert deployment.problems == []
    assert {n for outcome in deployment.outcomes for n in outcome.ops("replace")} >= set(fixed_nodes(stack))


@pytest.mark.parametrize("stack", STACKS)
def test_a_create_first_head_breaks_the_model(stack):
    """The head holds the fixed address: replaced create-first, its successor asks for the address it still holds."""
    deployment = Deployment.of(stack_file(stack))
    with new_code():
        preview = preview_of(stack_file(stack))
    head = next(record for record in preview.resources if record["options"]["custom"]
                and record["name"] in names_of(preview, "node")
                and record["inputs"]["tags"].get(ROLE_TAG) == HEAD)
    flipped = {**head, "options": {**head["options"], "deleteBeforeReplace": False}}
    changed = type(preview)(**{**vars(preview), "resources": [flipped if r is head else r
                                                               for r in preview.resources]})
    deployment.up(changed)
    assert any("fixed address" in problem for problem in deployment.problems), deployment.problems


POLICY_SIZED = [stack for stack in STACKS if preview_of(stack_file(stack)).plan.scaling.policy_sized]


@pytest.mark.parametrize("stack", POLICY_SIZED)
def test_pulumi_up_leaves_a_group_its_policy_grew(stack):
    """A GPU-bound job made the scale-out-only policy grow the group to its max; a later `pulumi up` (one more node
    desired) must not put the group back to the stack's desired size: that would take ranks from the running job."""
    deployment = Deployment.of(stack_file(stack))
    for group in (thing for thing in deployment.cloud.things.values() if thing.model.get("kind") == "group"):
        group.size = group.said.maximum
    deployment.up(preview_of(stack_file(stack, **settings(stack)["node count"])))
    assert deployment.problems == []
