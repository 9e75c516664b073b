"""Storage rules: every bucket encrypted at rest, and spot capacity never without a checkpoint bucket."""

from __future__ import annotations

from collections.abc import Iterable

from policy import types as t
from policy.base import Inputs, Resource, known, mapping, of_type

ALI_SSE = ("AES256", "KMS", "SM4")
TC_SSE = ("AES256", "KMS", "SM4", "cos/kms")


def encrypted_bucket(kind: str, inputs: Inputs) -> Iterable[str]:
    """OSS and COS buckets carry their encryption inline (S3 is judged by `encrypted_s3_buckets`)."""
    if kind == t.ALI_BUCKET:
        algorithm = mapping(inputs.get("serverSideEncryptionRule")).get("sseAlgorithm")
        if algorithm not in ALI_SSE and algorithm != "[unknown]":
            yield "the bucket is not encrypted (serverSideEncryptionRule.sseAlgorithm: KMS or AES256)."
    elif kind == t.TC_BUCKET:
        algorithm = inputs.get("encryptionAlgorithm")
        if algorithm not in TC_SSE and algorithm != "[unknown]":
            yield "the bucket is not encrypted (encryptionAlgorithm: KMS or AES256)."


def encrypted_s3_buckets(resources: list[Resource]) -> Iterable[tuple[str, str]]:
    """S3 encryption is a resource of its own, tied to its bucket by an id unknown before apply: so the rule asks
    for one encryption configuration per bucket that has none inline."""
    bare = [r for r in of_type(resources, *t.AWS_BUCKETS) if not r["inputs"].get("serverSideEncryptionConfiguration")]
    for bucket in bare[len(of_type(resources, t.AWS_BUCKET_SSE)):]:
        yield bucket["name"], "the bucket has no server-side encryption configuration."


def _uses_spot(resource: Resource) -> bool:
    kind, inputs = resource["type"], resource["inputs"]
    if kind == t.AWS_ASG:
        distribution = mapping(mapping(inputs.get("mixedInstancesPolicy")).get("instancesDistribution"))
        above_base = distribution.get("onDemandPercentageAboveBaseCapacity", 100)
        return bool(distribution) and known(above_base) and int(above_base) < 100
    if kind in (t.AWS_LAUNCH_TEMPLATE, t.AWS_INSTANCE):
        return mapping(inputs.get("instanceMarketOptions")).get("marketType") == "spot"
    if kind in (t.ALI_INSTANCE, t.ALI_LAUNCH_TEMPLATE, t.ALI_SCALING_CONFIG):
        return inputs.get("spotStrategy") in ("SpotAsPriceGo", "SpotWithPriceLimit")
    if kind in (t.TC_INSTANCE, t.TC_SCALING_CONFIG):
        return inputs.get("instanceChargeType") == "SPOTPAID"
    return False


def spot_resources(resources: list[Resource]) -> list[Resource]:
    """Every resource that launches spot capacity, on any cloud."""
    return [r for r in resources if _uses_spot(r)]


def spot_has_checkpoint_bucket(resources: list[Resource]) -> Iterable[tuple[str, str]]:
    """Spot nodes vanish with two minutes' notice: without a bucket their training is lost."""
    if of_type(resources, *t.BUCKETS):
        return
    for resource in spot_resources(resources):
        yield resource["name"], "spot capacity without a checkpoint bucket in the stack; add storage for checkpoints."
