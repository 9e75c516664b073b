"""The day-two model replaces what terraform-provider-aws replaces: each shipped AWS stack deployed as Terraform state
(components/aws/validate/replacements.py), then a change a user makes planned by the pinned provider offline, and
the same change run through the engine model (tests/day_two_cases.py). New code stands for every change of the nodes'
user-data (a mirror, the disk size do the same to the launch templates); the node count changes only the group's
size; another instance type changes the templates' type as well."""

from __future__ import annotations

import pytest
from day_two_cases import Deployment, new_code, preview_of, settings, stack_file

from components.aws.validate.replacements import ChangePlanner

CHANGES = ("new code", "node count", "instance type")


@pytest.fixture(scope="module")
def planned(toolchain, tmp_path_factory):
    """stack -> (its planner, its state as deployed), made once per stack."""
    made = {}

    def of(stack: str) -> tuple[ChangePlanner, dict]:
        if stack not in made:
            planner = ChangePlanner(tmp_path_factory.mktemp(stack), stack_file(stack).config["aws:region"],
                                    toolchain)
            made[stack] = planner, planner.deploy(preview_of(stack_file(stack)).resources)
        return made[stack]

    return of


def changed(stack: str, change: str):
    if change == "new code":
        with new_code():
            return preview_of(stack_file(stack))
    return preview_of(stack_file(stack, **settings(stack)[change]))


@pytest.mark.parametrize("change", CHANGES)
def test_terraform_replaces_what_the_model_replaces(aws_stack, change, planned):
    planner, state = planned(aws_stack)
    after = changed(aws_stack, change)
    terraform = planner.plan(state, after.resources)
    deployment = Deployment.of(stack_file(aws_stack))
    model = deployment.up(after)
    replaced = {name for name, plan in terraform.items() if plan.replaced}
    assert replaced == set(model.ops("replace")), {name: terraform[name].replace_paths for name in replaced}
    assert deployment.problems == []
