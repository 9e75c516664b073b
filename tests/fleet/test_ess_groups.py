"""fleet/ess_groups.py against the real ESS and ECS SDK clients with their calls answered here (the SDKs' own response
models, built from the APIs' JSON): members across pages with the user-data tag each instance carries, the group's
size set and a member removed as the ESS API names them, a failed call said by name, and the groups a deployment
holds with the size the stack gave them."""

from __future__ import annotations

import json

import pytest
from alibabacloud_ecs20140526.models import DescribeInstancesResponse
from alibabacloud_ess20220222.models import (
    DescribeScalingInstancesResponse,
    ModifyScalingGroupResponse,
    RemoveInstancesResponse,
)
from Tea.exceptions import TeaException

from fleet.ess_groups import PAGE, AlibabaGroups, EssFailed, groups_in
from plan.group_roll import HeldGroup, Member, Size

ENV = {"ALICLOUD_ACCESS_KEY": "ak", "ALICLOUD_SECRET_KEY": "sk"}


def scaling_instances(request) -> DescribeScalingInstancesResponse:
    """Two pages of a group of PAGE + 1 members."""
    ids = [f"i-{n}" for n in range(PAGE + 1)][(request.page_number - 1) * PAGE:][:request.page_size]
    return DescribeScalingInstancesResponse().from_map({"body": {
        "TotalCount": PAGE + 1, "ScalingInstances": [
            {"InstanceId": i, "LifecycleState": "InService", "CreatedTime": f"2026-12-01T09:00:{n % 60:02}Z"}
            for n, i in enumerate(ids)]}})


def instances(request) -> DescribeInstancesResponse:
    """Each asked instance, the odd ones tagged with an older user-data hash, i-0 with none."""
    ids = json.loads(request.instance_ids)
    assert len(ids) <= PAGE
    return DescribeInstancesResponse().from_map({"body": {"Instances": {"Instance": [
        {"InstanceId": i, "Tags": {"Tag": [{"TagKey": "gpufleet:cluster", "TagValue": "c"}] + (
            [{"TagKey": "gpufleet:user-data", "TagValue": "old" if int(i[2:]) % 2 else "new"}] if i != "i-0" else [])}}
        for i in ids]}}})


def test_members_come_with_their_state_and_user_data_tag_across_pages():
    groups = AlibabaGroups("cn-hangzhou", environ=ENV)
    groups.ess.describe_scaling_instances = scaling_instances
    groups.ecs.describe_instances = instances
    members = groups.members("asg-1")
    assert len(members) == PAGE + 1
    assert members[0] == Member("i-0", "InService", "2026-12-01T09:00:00Z", None)
    assert (members[1].user_data, members[2].user_data, members[PAGE].user_data) == ("old", "new", "new")


def test_the_group_is_resized_and_a_member_removed_lowering_the_expected_number():
    """ModifyScalingGroup with DesiredCapacity and MaxSize (ESS keeps the expected number: it launches a successor);
    RemoveInstances with DecreaseDesiredCapacity true, so ESS launches nothing in the removed one's place (SDK
    alibabacloud-ess20220222 1.13.3 `_modify_scaling_group_request.py`, `_remove_instances_request.py`)."""
    groups = AlibabaGroups("cn-hangzhou", environ=ENV)
    sent = []
    groups.ess.modify_scaling_group = lambda request: sent.append(request.to_map()) or (
        ModifyScalingGroupResponse().from_map({"body": {"RequestId": "r"}}))
    groups.ess.remove_instances = lambda request: sent.append(request.to_map()) or (
        RemoveInstancesResponse().from_map({"body": {"RequestId": "r", "ScalingActivityId": "asa-1"}}))
    groups.resize("asg-1", Size(4, 5))
    groups.remove("asg-1", "i-7")
    assert sent == [{"ScalingGroupId": "asg-1", "DesiredCapacity": 4, "MaxSize": 5, "LaunchTemplateOverrides": []},
                    {"RegionId": "cn-hangzhou", "ScalingGroupId": "asg-1", "InstanceIds": ["i-7"],
                     "DecreaseDesiredCapacity": True}]


def test_a_refused_call_is_said():
    groups = AlibabaGroups("cn-hangzhou", environ=ENV)

    def refused(request):
        raise TeaException({"code": "Forbidden.RAM", "message": "User not authorized to operate on the specified "
                                                                 "resource."})

    groups.ess.describe_scaling_instances = refused
    with pytest.raises(EssFailed, match="ESS DescribeScalingInstances failed: User not authorized"):
        groups.members("asg-1")
    groups.ess.remove_instances = refused
    with pytest.raises(EssFailed, match="ESS RemoveInstances failed"):
        groups.remove("asg-1", "i-7")


def test_the_groups_a_deployment_holds_with_their_configurations_tag():
    group = {"urn": "urn:pulumi:s::gpufleet::gpufleet:alicloud:Workers$alicloud:ess/scalingGroup:ScalingGroup::"
                    "s-workers", "type": "alicloud:ess/scalingGroup:ScalingGroup", "id": "asg-1",
             "inputs": {"minSize": 1, "desiredCapacity": 3, "maxSize": 5}}
    configuration = {"type": "alicloud:ess/scalingConfiguration:ScalingConfiguration", "id": "asc-1",
                     "inputs": {"scalingGroupId": "asg-1", "tags": {"gpufleet:user-data": "new"}}}
    assert groups_in({"resources": [group, configuration]}) == [HeldGroup("s-workers", "asg-1", "new", 3, 5)]
    assert groups_in({"resources": [group, {**configuration, "delete": True}]}) == [], "no configuration: no roll"
