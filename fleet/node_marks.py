"""Reading the marks nodes outside groups write in the cluster's bucket (plan/heal.py), with the pipeline's own
credentials, through each store's S3 API: S3 itself, OSS and COS through theirs (docs/cloud-facts.md#heal-marks).
Nodes write them with the permissions they already hold (the bucket's objects); nothing here needs more of them."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from clouds.alicloud import in_mainland

# The pipeline's credentials per cloud, as the workflows' cloud-credentials action exports them (the providers'
# own variable names): access key id, secret, optional session token. AWS: boto3's own chain (role or keys).
CREDENTIALS = {
    "alicloud": ("ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY", "ALICLOUD_SECURITY_TOKEN"),
    "tencentcloud": ("TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY", "TENCENTCLOUD_SESSION_TOKEN"),
}


def endpoint(cloud: str, region: str) -> str | None:
    """The store's S3 API endpoint for the pipeline (None: boto3's S3 default). A mainland Alibaba bucket refuses
    data calls on OSS's public endpoint to accounts newer than 2025-03-20, so there the pipeline reads through the
    internal one, from inside the region, as it writes the code bundle (clouds/alicloud.py code_upload)."""
    if cloud == "alicloud":
        internal = "-internal" if in_mainland(region) else ""
        return f"https://s3.oss-{region}{internal}.aliyuncs.com"
    if cloud == "tencentcloud":
        return f"https://cos.{region}.myqcloud.com"
    return None


@dataclass(frozen=True)
class Bucket:
    """Where the marks are: the bucket and the key prefix of a `<scheme>://bucket/prefix` URI."""

    name: str
    prefix: str

    @classmethod
    def of(cls, uri: str) -> Bucket:
        parts = urlsplit(uri)
        return cls(parts.netloc, parts.path.strip("/"))


def s3_client(cloud: str, region: str, endpoint_url: str | None = None,
              environ: Mapping[str, str] = os.environ):
    """An S3 client on the cloud's store: virtual-hosted addressing (OSS refuses path-style requests), checksums
    only where an operation requires them (OSS and COS do not take the AWS SDK's newer default trailers)."""
    import boto3
    from botocore.config import Config

    keys = {}
    if cloud in CREDENTIALS:
        key, secret, token = CREDENTIALS[cloud]
        keys = {"aws_access_key_id": environ.get(key), "aws_secret_access_key": environ.get(secret),
                "aws_session_token": environ.get(token)}
    config = Config(s3={"addressing_style": "virtual"}, request_checksum_calculation="when_required",
                    response_checksum_validation="when_required")
    return boto3.client("s3", region_name=region, endpoint_url=endpoint_url or endpoint(cloud, region),
                        config=config, **keys)


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
