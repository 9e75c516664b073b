"""The checkpoint bucket (encrypted, versioned, private) and the training code uploaded under its hash."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from components.bundle import write_bundle
from components.paths import BUNDLE_DIR
from components.plan.model import StoragePlan

SSE_OSS = "AES256"


class AliStorage(pulumi.ComponentResource):
    """Checkpoints survive the nodes: they are synced here and pulled back on resume."""

    def __init__(self, name: str, *, storage: StoragePlan, tags: dict[str, str],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:alicloud:Storage", f"{name}-storage", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # The bucket, named by the plan so user-data can name it before it exists; encrypted at rest with OSS's own
        # keys (SSE-OSS), which the node's role reads and writes through without any KMS grant
        # (docs/cloud-facts.md#alibaba-oss).
        self.bucket = alicloud.oss.Bucket(f"{name}-checkpoints", bucket=storage.bucket, tags=tags,
                                          server_side_encryption_rule={"sse_algorithm": SSE_OSS}, opts=child)
        # Private: no anonymous reads or writes.
        alicloud.oss.BucketAcl(f"{name}-acl", bucket=self.bucket.id, acl="private", opts=child)
        # No public access, whatever a later policy or ACL says.
        alicloud.oss.BucketPublicAccessBlock(f"{name}-public-access", bucket=self.bucket.id,
                                             block_public_access=True, opts=child)
        # Every write kept as a version: a bad sync cannot destroy the last good checkpoint.
        alicloud.oss.BucketVersioning(f"{name}-versioning", bucket=self.bucket.id, status="Enabled", opts=child)
        # The training code, under its content hash: a new hash is new user-data, and the nodes roll.
        alicloud.oss.BucketObject(f"{name}-code", bucket=self.bucket.id, key=storage.code_key,
                                  source=str(write_bundle(BUNDLE_DIR, storage.code_sha256)), opts=child)
        self.register_outputs({"bucket": self.bucket.id})
