"""Reading the marks nodes write in the cluster's bucket (plan/heal.py), and keeping `fleet heal`'s record of the
nodes it saw without one, with the pipeline's own credentials, through each store's S3 API: S3 itself, OSS and COS
through theirs, at the endpoint the plan's pipeline names (PipelinePlan.store; docs/cloud-facts.md#heal-marks).
Nodes write their marks with the permissions they already hold (the bucket's objects); nothing here needs more."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from plan.model import StoreApi


@dataclass(frozen=True)
class Bucket:
    """Where the marks are: the bucket and the key prefix of a `<scheme>://bucket/prefix` URI."""

    name: str
    prefix: str

    @classmethod
    def of(cls, uri: str) -> Bucket:
        parts = urlsplit(uri)
        return cls(parts.netloc, parts.path.strip("/"))


def s3_client(api: StoreApi, region: str, environ: Mapping[str, str] = os.environ):
    """An S3 client on the cloud's store, where the plan's pipeline reaches it (PipelinePlan.store): virtual-hosted
    addressing (OSS refuses path-style requests), checksums only where an operation requires them (OSS and COS do
    not take the AWS SDK's newer default trailers), the pipeline's key from the environment variables it names."""
    import boto3
    from botocore.config import Config

    names = ("aws_access_key_id", "aws_secret_access_key", "aws_session_token")
    keys = {name: environ.get(variable) for name, variable in zip(names, api.credentials, strict=False)}
    config = Config(s3={"addressing_style": "virtual"}, request_checksum_calculation="when_required",
                    response_checksum_validation="when_required")
    return boto3.client("s3", region_name=region, endpoint_url=api.endpoint, config=config, **keys)


def marks_reader(client, marks_uri: str) -> Callable[[str], str | None]:
    """Reads one instance's mark (its object's text, stripped); None where it wrote none."""
    bucket = Bucket.of(marks_uri)

    def read(instance_id: str) -> str | None:
        try:
            body = client.get_object(Bucket=bucket.name, Key=f"{bucket.prefix}/{instance_id}")["Body"]
        except client.exceptions.NoSuchKey:
            return None
        return body.read().decode().strip()

    return read


@dataclass(frozen=True)
class UnmarkedRecords:
    """When `fleet heal` first saw each running node without a mark (plan/heal.py unmarked_records): one object per
    instance id holding that moment (ISO 8601 UTC), written, read and removed with the pipeline's credentials."""

    client: object
    bucket: Bucket

    @classmethod
    def at(cls, client, uri: str) -> UnmarkedRecords:
        return cls(client, Bucket.of(uri))

    def age(self, instance_id: str, now: datetime) -> float:
        """Seconds since the node was first seen without a mark; 0 where this is the first time (then recorded)."""
        key = f"{self.bucket.prefix}/{instance_id}"
        try:
            body = self.client.get_object(Bucket=self.bucket.name, Key=key)["Body"]
        except self.client.exceptions.NoSuchKey:
            self.client.put_object(Bucket=self.bucket.name, Key=key, Body=now.isoformat().encode())
            return 0.0
        return (now - datetime.fromisoformat(body.read().decode().strip())).total_seconds()

    def forget(self, instance_id: str) -> None:
        """The node marked itself, or is replaced: its record goes (removing one that is not there is no error)."""
        self.client.delete_object(Bucket=self.bucket.name, Key=f"{self.bucket.prefix}/{instance_id}")
