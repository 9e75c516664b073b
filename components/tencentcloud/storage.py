"""The checkpoint bucket (encrypted, versioned, private) and the training code uploaded under its hash."""

from __future__ import annotations

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from plan.bundle import write_bundle
from plan.model import StoragePlan
from plan.paths import BUNDLE_DIR


class TcStorage(pulumi.ComponentResource):
    """Checkpoints survive the nodes: they are synced here and pulled back on resume."""

    def __init__(self, name: str, *, storage: StoragePlan, tags: dict[str, str], object_tags: dict[str, str],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:tencentcloud:Storage", f"{name}-storage", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # The bucket (<name>-<APPID>, from the stack): private, encrypted at rest, every write kept as a version.
        if storage.existing:
            # The stack's `existingBucket`, read as it is: never created, configured or deleted by this stack.
            self.bucket = tencentcloud.cos.Bucket.get(f"{name}-checkpoints", storage.bucket, opts=child)
        else:
            self.bucket = tencentcloud.cos.Bucket(f"{name}-checkpoints", bucket=storage.bucket, acl="private",
                                                  encryption_algorithm="AES256", versioning_enable=True,
                                                  tags=tags, opts=child)
        # The bucket's name, read off its resource: whatever names it through this waits for the bucket to exist.
        self.bucket_name: pulumi.Output[str] = self.bucket.id if storage.existing else self.bucket.bucket
        # The training code, under its content hash: a new hash is new user-data, and the nodes roll. Kept when a
        # new bundle replaces it: a node still running it, or one booted from its user-data, fetches it by that
        # name (docs/design.md#the-day-two-model).
        self.code = tencentcloud.cos.BucketObject(
            f"{name}-code", bucket=self.bucket_name, key=storage.code_key,
            source=str(write_bundle(BUNDLE_DIR, storage.code_sha256)), acl="private", tags=object_tags,
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True))
        self.register_outputs({"bucket": self.bucket.bucket})
