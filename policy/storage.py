"""Storage rules: buckets encrypted at rest, and spot capacity never without a checkpoint bucket."""

from __future__ import annotations

from collections.abc import Iterable

from policy.access import written_buckets
from policy.base import Inputs, Resource, of_type
from policy.readers import reader_for, readers


def encrypted_bucket(kind: str, inputs: Inputs) -> Iterable[str]:
    """Buckets that carry their encryption inline (S3's is a resource of its own: policy/clouds/aws.py)."""
    reader = reader_for(kind)
    return reader.bucket_encryption(kind, inputs) if reader else ()


def spot_resources(resources: list[Resource]) -> list[Resource]:
    """Every resource that launches spot capacity, on any cloud."""
    return [r for r in resources if (reader := reader_for(r["type"])) is not None and reader.spot(r)]


def spot_has_checkpoint_bucket(resources: list[Resource]) -> Iterable[tuple[str, str]]:
    """Spot nodes vanish with two minutes' notice: without a bucket their training is lost. The bucket is the stack's
    own, or one it uses as it finds it (`existingBucket`: no resource of the stack) that the nodes may write into."""
    if of_type(resources, *(kind for reader in readers() for kind in reader.buckets())) or written_buckets(resources):
        return
    for resource in spot_resources(resources):
        yield resource["name"], "spot capacity without a checkpoint bucket in the stack; add storage for checkpoints."
