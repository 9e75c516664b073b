"""The baked image on Alibaba Cloud: a custom ECS image made from the stopped bake machine
(docs/cloud-facts.md#baked-images). Kept when the bake stack is destroyed: it is what the bake was for."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from plan.bake import BakePlan

# How `fleet image build` sees the bake finished: the machine powered itself off (docs/cloud-facts.md#baked-images).
INSTANCE = "alicloud:ecs/instance:Instance"
STATE = ("status", "Stopped")
# `status` defaults to Running, and the provider starts a stopped instance to match it on the next `pulumi up`.
POWER_INPUTS = ("status",)

# The provider waits 10 minutes for CreateImage by default; a GPU node's disk with the driver and torch takes longer.
CREATE_TIMEOUT = "60m"


def image_from_instance(bake: BakePlan, instance_id: pulumi.Input[str]) -> pulumi.Output[str]:
    image = alicloud.ecs.Image(f"{bake.cluster.name}-image", image_name=bake.image_name, instance_id=instance_id,
                               tags=dict(bake.tags), opts=pulumi.ResourceOptions(
                                   retain_on_delete=True, custom_timeouts=pulumi.CustomTimeouts(create=CREATE_TIMEOUT)))
    return image.id
