"""The baked image on AWS: an AMI made from the stopped bake machine (docs/cloud-facts.md#baked-images). Kept when the
bake stack is destroyed: it is what the bake was for."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from plan.bake import BakePlan

# How `fleet image build` sees the bake finished: the machine powered itself off (docs/cloud-facts.md#baked-images).
INSTANCE = "aws:ec2/instance:Instance"
STATE = ("instanceState", "stopped")
# Inputs a later `pulumi up` would use to power the stopped machine on again: none on AWS.
POWER_INPUTS: tuple[str, ...] = ()


def image_from_instance(bake: BakePlan, instance_id: pulumi.Input[str]) -> pulumi.Output[str]:
    ami = aws.ec2.AmiFromInstance(f"{bake.cluster.name}-image", name=bake.image_name, source_instance_id=instance_id,
                                  tags=dict(bake.tags), opts=pulumi.ResourceOptions(retain_on_delete=True))
    return ami.id
