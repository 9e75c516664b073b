"""Reading the marks nodes outside groups write in the cluster's bucket (plan/heal.py), with the pipeline's own
credentials, through each store's S3 API: S3 itself, OSS and COS through theirs (the profile's store_api;
docs/cloud-facts.md#heal-marks).
Nodes write them with the permissions they already hold (the bucket's objects); nothing here needs more of them."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from clouds import CLOUDS


@dataclass(frozen=True)
class Bucket:
    """Where the marks are: the bucket and the key prefix of a `<scheme>://bucket/prefix` URI."""

    name: str
    prefix: str

    @classmethod
    def of(cls, uri: str) -> Bucket:
        parts = urlsplit(uri)
        return cls(parts.netloc, parts.path.strip("/"))


def s3_client(cloud: str, region: str, environ: Mapping[str, str] = os.environ):
    """An S3 client on the cloud's store (its profile's StoreApi): virtual-hosted addressing (OSS refuses path-style
    requests), checksums only where an operation requires them (OSS and COS do not take the AWS SDK's newer default
    trailers), the pipeline's key from the environment variables the profile names."""
    import boto3
    from botocore.config import Config

    api = CLOUDS[cloud].store_api(region)
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
