"""The baked image on Tencent Cloud: a custom image made from the stopped bake machine
(docs/cloud-facts.md#baked-images). Kept when the bake stack is destroyed: it is what the bake was for."""

from __future__ import annotations

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from plan.bake import BakePlan

# How `fleet image build` sees the bake finished: the machine powered itself off (docs/cloud-facts.md#baked-images).
INSTANCE = "tencentcloud:Instance/instance:Instance"
STATE = ("instanceStatus", "STOPPED")
# `runningFlag` defaults to true, and the provider powers a stopped instance on to match it on the next `pulumi up`.
POWER_INPUTS = ("runningFlag",)


def image_from_instance(bake: BakePlan, instance_id: pulumi.Input[str]) -> pulumi.Output[str]:
    image = tencentcloud.image.Instance(f"{bake.cluster.name}-image", image_name=bake.image_name,
                                        instance_id=instance_id, tags=dict(bake.tags),
                                        opts=pulumi.ResourceOptions(retain_on_delete=True))
    return image.id
