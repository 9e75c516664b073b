"""The Pulumi program of a bake stack, which `fleet image build` runs as a program of its own (Pulumi's Automation API,
an inline program), never through `__main__.py`: phase `instance` declares the bake's one-node cluster with the
cloud's own realizer, its head booting the bake user-data; phase `image` also makes the image from the head, once the
bake powered it off (plan/bake.py)."""

from __future__ import annotations

import importlib

import pulumi

from clouds import CLOUDS
from clouds.plans import bake_for
from clouds.rules import validate
from components.program import InvalidStack, cluster_config
from components.realizers import look_up, realize
from plan.model import ClusterPlan
from spec.errors import Problem, SpecError

# The bake's two `pulumi up`s: the machine boots and bakes (and powers off), then the image is made from it.
MACHINE_PHASE, IMAGE_PHASE = "instance", "image"


def image_module(cloud: str):
    """The cloud's `image` module beside its realizer (image_from_instance)."""
    return importlib.import_module(f"{CLOUDS[cloud].realizer.rsplit('.', 1)[0]}.image")


def bake(phase: str) -> ClusterPlan:
    """Declare the bake's one-node cluster and, in phase `image`, the image made from it; returns the bake's plan."""
    try:
        raw, region = cluster_config()
        spec = validate(raw, region, pulumi.get_stack())
        if CLOUDS[spec.cloud].runs_here:
            raise SpecError([Problem("gpufleet:cluster.cloud", "is the local cloud, which runs on this machine's "
                                     "software: there is no image to bake.", "bake a cloud's stack.")])
        spec, facts = look_up(spec, pulumi.get_stack(), pulumi.get_project())
        baking = bake_for(spec, pulumi.get_stack(), facts)
    except SpecError as error:
        raise InvalidStack(error) from None
    images = image_module(spec.cloud)
    if phase == IMAGE_PHASE:  # the bake powered its machine off: the image is made from it stopped, never restarted
        pulumi.runtime.register_stack_transformation(lambda args: _left_off(args, images))
    outputs = realize(baking.cluster)
    pulumi.export("bakeInstanceId", outputs["headInstanceId"])
    pulumi.export("imageMatrix", dict(baking.matrix))
    pulumi.export("imageMatrixDigest", baking.digest)
    if phase == IMAGE_PHASE:
        pulumi.export("bakedImage", images.image_from_instance(baking, outputs["headInstanceId"]))
    return baking.cluster


def _left_off(args: pulumi.ResourceTransformationArgs, images) -> pulumi.ResourceTransformationResult | None:
    """The cloud's instance with its power inputs ignored, so this `pulumi up` leaves the stopped machine stopped."""
    if args.type_ != images.INSTANCE or not images.POWER_INPUTS:
        return None
    ignored = [*(args.opts.ignore_changes or []), *images.POWER_INPUTS]
    return pulumi.ResourceTransformationResult(args.props, pulumi.ResourceOptions.merge(
        args.opts, pulumi.ResourceOptions(ignore_changes=ignored)))
