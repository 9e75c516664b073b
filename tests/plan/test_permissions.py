"""The call list's building blocks, run at test time (the clouds' profiles build their lists at import, before any
test could see a change in them)."""

from __future__ import annotations

import pytest

from plan import permissions
from plan.permissions import ANY, BUCKET, OBJECTS, OWN_INSTANCES, STORE, STORE_OPERATIONS, Call

COS = {op: f"name/cos:{op}" for op, _ in STORE_OPERATIONS}


def test_store_calls_are_every_operation_in_order_each_with_its_scope_and_the_clouds_action():
    calls = permissions.store_calls(**COS)
    assert [(c.api, c.operation, c.scope, c.action) for c in calls] == [
        (STORE, op, scope, f"name/cos:{op}") for op, scope in STORE_OPERATIONS]
    assert [c.operation for c in calls if c.documented_only] == [permissions.STORE_CLEANUP]
    assert not any(c.grouped for c in calls)
    assert dict(STORE_OPERATIONS)["ListObjectsV2"] == BUCKET
    assert {scope for op, scope in STORE_OPERATIONS if op != "ListObjectsV2"} == {OBJECTS}


@pytest.mark.parametrize("change", ["missing", "extra"])
def test_a_store_list_that_does_not_name_each_operation_once_is_refused(change):
    actions = dict(COS)
    if change == "missing":
        del actions["UploadPart"]
    else:
        actions["DeleteObject"] = "name/cos:DeleteObject"
    with pytest.raises(ValueError, match="store actions for"):
        permissions.store_calls(**actions)


def test_an_api_call_is_named_as_its_action_with_tencents_prefix_dropped():
    assert permissions.api_call("ec2:DescribeInstances", ANY) == Call("ec2", "DescribeInstances", ANY,
                                                                     "ec2:DescribeInstances", False, False)
    tencent = permissions.api_call("name/cvm:DescribeInstances", OWN_INSTANCES, documented_only=True, grouped=True)
    assert tencent == Call("cvm", "DescribeInstances", OWN_INSTANCES, "name/cvm:DescribeInstances", True, True)


def test_action_finds_the_calls_action_and_none_for_a_call_not_listed():
    calls = [*permissions.store_calls(**COS), permissions.api_call("name/cvm:DescribeInstances", ANY)]
    assert permissions.action(calls, STORE, "UploadPart") == "name/cos:UploadPart"
    assert permissions.action(calls, "cvm", "DescribeInstances") == "name/cvm:DescribeInstances"
    assert permissions.action(calls, "cvm", "UploadPart") is None
    assert permissions.action(calls, STORE, "DescribeInstances") is None


def test_actions_per_scope_once_in_order_and_grouped_calls_only_with_groups():
    calls = [permissions.api_call("ecs:DescribeInstances", ANY),
             permissions.api_call("ess:RemoveInstances", ANY, grouped=True),
             permissions.api_call("ecs:DescribeInstances", ANY),
             permissions.api_call("ecs:TagResources", OWN_INSTANCES)]
    assert permissions.actions(calls, ANY) == ["ecs:DescribeInstances", "ess:RemoveInstances"]
    assert permissions.actions(calls, ANY, groups=False) == ["ecs:DescribeInstances"]
    assert permissions.actions(calls, OWN_INSTANCES) == ["ecs:TagResources"]
    assert permissions.actions(calls, BUCKET) == []
