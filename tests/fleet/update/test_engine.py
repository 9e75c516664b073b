"""The engine model on small programs of real resource types, each rule against what pulumi/pulumi's step generator
does (docs/cloud-facts.md#day-two-model): the order of a replacement, a delete-first chain, ignoreChanges, a
replacement trigger, targets and excludes, and a refusal to guess an input no table has looked up."""

from __future__ import annotations

import pytest

from fleet.update.engine import Declared, Up, deployed, key_of, mock_id, update
from fleet.update.forcing import Unmodelled

NODE, ENI = "alicloud:ecs/instance:Instance", "alicloud:ecs/ecsNetworkInterface:EcsNetworkInterface"
ATTACH = "alicloud:ecs/ecsNetworkInterfaceAttachment:EcsNetworkInterfaceAttachment"
ROLE = "alicloud:ecs/ramRoleAttachment:RamRoleAttachment"


def node(name: str, user_data: str = "v1", **options) -> Declared:
    return Declared(key_of(NODE, name), name, NODE, None, True, {"userData": user_data, "instanceType": "x"},
                    replace_on_changes=("userData",), **options)


def attachment(name: str, instance: str, eni: str) -> Declared:
    return Declared(key_of(ATTACH, name), name, ATTACH, None, True,
                    {"instanceId": mock_id(instance), "networkInterfaceId": mock_id(eni)},
                    dependencies=(key_of(NODE, instance), key_of(ENI, eni)),
                    property_dependencies={"instanceId": (key_of(NODE, instance),),
                                           "networkInterfaceId": (key_of(ENI, eni),)})


def eni(name: str, instance: str | None = None) -> Declared:
    return Declared(key_of(ENI, name), name, ENI, None, True, {"vswitchId": "vsw"},
                    dependencies=(key_of(NODE, instance),) if instance else (),
                    replacement_trigger=mock_id(instance) if instance else None)


def role(name: str, instance: str) -> Declared:
    return Declared(key_of(ROLE, name), name, ROLE, None, True, {"instanceId": mock_id(instance), "ramRoleName": "r"},
                    dependencies=(key_of(NODE, instance),),
                    property_dependencies={"instanceId": (key_of(NODE, instance),)})


def steps(outcome) -> list[str]:
    return [str(step) for step in outcome.steps]


def test_a_replacement_is_created_first_its_dependents_follow_and_the_old_go_last_dependents_first():
    before = [node("w"), eni("e"), attachment("a", "w", "e"), role("r", "w")]
    after = [node("w", "v2"), eni("e"), attachment("a", "w", "e"), role("r", "w")]
    assert steps(update(deployed(before), after)) == [
        "replace w#1 (userData)", "replace a#1 (instanceId)", "replace r#1 (instanceId)",
        "delete-replaced r#0", "delete-replaced a#0", "delete-replaced w#0"]


def test_delete_first_deletes_the_dependents_its_replacement_would_replace_first():
    before = [node("h", delete_before_replace=True), eni("e"), attachment("a", "h", "e")]
    after = [node("h", "v2", delete_before_replace=True), eni("e"), attachment("a", "h", "e")]
    assert steps(update(deployed(before), after)) == [
        "delete-replaced a#0 (instanceId)", "delete-replaced h#0 (userData)", "replace h#1 (userData)",
        "replace a#1 (instanceId)"]


def test_a_trigger_naming_a_replaced_resource_replaces_and_one_set_anew_does_not():
    before = [node("w"), eni("e", "w"), attachment("a", "w", "e")]
    after = [node("w", "v2"), eni("e", "w"), attachment("a", "w", "e")]
    assert "replace e#1 (replacementTrigger)" in steps(update(deployed(before), after))
    untriggered = [node("w"), eni("e"), attachment("a", "w", "e")]
    assert steps(update(deployed(untriggered), [node("w"), eni("e", "w"), attachment("a", "w", "e")])) == []


def test_an_ignored_input_is_no_change_but_a_replacement_takes_the_programs_value():
    ignored = node("w", "v2", ignore_changes=("userData",))
    assert steps(update(deployed([node("w")]), [ignored])) == []
    outcome = update(deployed([node("w")]), [ignored], Up(targets=frozenset({ignored.key}),
                                                          replace=frozenset({ignored.key})))
    assert steps(outcome) == ["replace w#1 (--replace)", "delete-replaced w#0"]
    assert outcome.state[0].resource.inputs["userData"] == "v2"


def test_a_targeted_up_leaves_the_rest_as_deployed_names_it_stale_and_creates_nothing_new():
    before = [node("h"), node("w")]
    after = [node("h", "v2"), node("w", "v2"), node("new")]
    outcome = update(deployed(before), after, Up(targets=frozenset({key_of(NODE, "w")})))
    assert steps(outcome) == ["replace w#1 (userData)", "delete-replaced w#0"]
    assert (outcome.stale, outcome.skipped) == ((key_of(NODE, "h"),), (key_of(NODE, "new"),))
    assert {held.name: held.resource.inputs["userData"] for held in outcome.state} == {"h": "v1", "w": "v2"}


def test_target_dependents_and_exclude_dependents_follow_the_dependency_edges():
    before = [node("w"), eni("e", "w"), attachment("a", "w", "e")]
    after = [node("w", "v2"), eni("e", "w"), attachment("a", "w", "e")]
    target = Up(targets=frozenset({key_of(NODE, "w")}), replace=frozenset(), target_dependents=True)
    assert [s.split()[1] for s in steps(update(deployed(before), after, target))] == [
        "w#1", "e#1", "a#1", "a#0", "e#0", "w#0"]
    alone = Up(targets=frozenset({key_of(NODE, "w")}))
    assert update(deployed(before), after, alone).stale == (key_of(ENI, "e"), key_of(ATTACH, "a"))
    excluded = Up(excludes=frozenset({key_of(NODE, "w")}), exclude_dependents=True)
    assert steps(update(deployed(before), after, excluded)) == []


def test_an_input_no_table_has_looked_up_stops_the_model():
    odd = Declared(key_of(NODE, "w"), "w", NODE, None, True, {"userData": "v1", "somethingNew": 1})
    with pytest.raises(Unmodelled, match="somethingNew"):
        update(deployed([odd]), [Declared(odd.key, "w", NODE, None, True, {"userData": "v1", "somethingNew": 2})])
