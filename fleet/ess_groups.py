"""The ESS calls `fleet roll` makes on an Alibaba stack's worker groups (plan/group_roll.py decides), with the
pipeline's own key (the environment variables the alicloud Pulumi provider reads): the group's members
(DescribeScalingInstances), the user-data tag each instance carries (ECS DescribeInstances), the group's expected and
largest number of instances (ModifyScalingGroup: ESS launches from the current configuration to keep the expected
number) and a member removed with the expected number lowered (RemoveInstances, DecreaseDesiredCapacity;
docs/cloud-facts.md#rollout-alibaba). `Groups` is what the roll needs of them, so that tests hand it a stand-in."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Protocol

from clouds.alicloud import ALICLOUD
from plan.group_roll import HeldGroup, Member, Size
from plan.rollout import USER_DATA_TAG

# The stack's resources that hold a group and its configuration (pulumi_alicloud's types).
GROUP_TYPE = f"{ALICLOUD.pulumi_package}:ess/scalingGroup:ScalingGroup"
CONFIGURATION_TYPE = f"{ALICLOUD.pulumi_package}:ess/scalingConfiguration:ScalingConfiguration"
# The most instances one describe call answers (DescribeScalingInstances PageSize, ECS DescribeInstances PageSize).
PAGE = 100


class EssFailed(Exception):
    """An ESS or ECS call that did not succeed: the call and the cloud's message."""


class Groups(Protocol):
    def members(self, group_id: str) -> list[Member]: ...

    def resize(self, group_id: str, size: Size) -> None: ...

    def remove(self, group_id: str, instance_id: str) -> None: ...


def groups_in(deployment: dict) -> list[HeldGroup]:
    """Each scaling group the stack holds, with the USER_DATA_TAG its configuration carries now and the size the stack
    gave it, in the state's order."""
    tag_of = {r.get("inputs", {}).get("scalingGroupId"): (r.get("inputs", {}).get("tags") or {}).get(USER_DATA_TAG)
              for r in deployment.get("resources", []) if r.get("type") == CONFIGURATION_TYPE and not r.get("delete")}
    return [HeldGroup(r["urn"].rsplit("::", 1)[-1], r["id"], tag_of[r["id"]], int(r["inputs"]["desiredCapacity"]),
                      int(r["inputs"]["maxSize"]))
            for r in deployment.get("resources", [])
            if r.get("type") == GROUP_TYPE and not r.get("delete") and tag_of.get(r.get("id"))]


class AlibabaGroups:
    """ESS and ECS clients in the stack's region, with ALICLOUD_ACCESS_KEY, ALICLOUD_SECRET_KEY and, where set,
    ALICLOUD_SECURITY_TOKEN (as the provider and fleet/node_marks.py read them)."""

    def __init__(self, region: str, environ: Mapping[str, str] = os.environ) -> None:
        from alibabacloud_ecs20140526.client import Client as Ecs
        from alibabacloud_ess20220222.client import Client as Ess
        from alibabacloud_tea_openapi.models import Config

        def config() -> Config:
            return Config(access_key_id=environ.get("ALICLOUD_ACCESS_KEY"),
                          access_key_secret=environ.get("ALICLOUD_SECRET_KEY"),
                          security_token=environ.get("ALICLOUD_SECURITY_TOKEN"), region_id=region)

        self.region, self.ess, self.ecs = region, Ess(config()), Ecs(config())

    def members(self, group_id: str) -> list[Member]:
        from alibabacloud_ess20220222.models import DescribeScalingInstancesRequest

        found, page = [], 1
        while True:
            body = _call("ESS DescribeScalingInstances", self.ess.describe_scaling_instances,
                         DescribeScalingInstancesRequest(region_id=self.region, scaling_group_id=group_id,
                                                         page_number=page, page_size=PAGE))
            found += body.scaling_instances or []
            if len(found) >= (body.total_count or 0) or not body.scaling_instances:
                break
            page += 1
        tags = self._tags([i.instance_id for i in found])
        return [Member(i.instance_id, i.lifecycle_state, i.created_time or i.creation_time or "",
                       tags.get(i.instance_id)) for i in found]

    def _tags(self, instance_ids: list[str]) -> dict[str, str]:
        """Each instance's USER_DATA_TAG, where it carries one."""
        from alibabacloud_ecs20140526.models import DescribeInstancesRequest

        tags = {}
        for start in range(0, len(instance_ids), PAGE):
            body = _call("ECS DescribeInstances", self.ecs.describe_instances,
                         DescribeInstancesRequest(region_id=self.region, page_size=PAGE,
                                                  instance_ids=json.dumps(instance_ids[start:start + PAGE])))
            for instance in body.instances.instance if body.instances else []:
                for tag in instance.tags.tag if instance.tags else []:
                    if tag.tag_key == USER_DATA_TAG:
                        tags[instance.instance_id] = tag.tag_value
        return tags

    def resize(self, group_id: str, size: Size) -> None:
        """The group's expected and largest number of instances: ESS launches or removes members to keep the expected
        one (ModifyScalingGroup DesiredCapacity, SDK `_modify_scaling_group_request.py`)."""
        from alibabacloud_ess20220222.models import ModifyScalingGroupRequest

        _call("ESS ModifyScalingGroup", self.ess.modify_scaling_group,
              ModifyScalingGroupRequest(scaling_group_id=group_id,
                                        desired_capacity=size.desired, max_size=size.max_size))

    def remove(self, group_id: str, instance_id: str) -> None:
        """One member out of the group, the expected number lowered by one (DecreaseDesiredCapacity, so ESS launches
        nothing in its place); ESS stops and releases an instance it created."""
        from alibabacloud_ess20220222.models import RemoveInstancesRequest

        _call("ESS RemoveInstances", self.ess.remove_instances,
              RemoveInstancesRequest(region_id=self.region, scaling_group_id=group_id, instance_ids=[instance_id],
                                     decrease_desired_capacity=True))


def _call(name: str, method, request):
    from Tea.exceptions import TeaException

    try:
        return method(request).body
    except TeaException as error:
        raise EssFailed(f"{name} failed: {getattr(error, 'message', error)}") from None
