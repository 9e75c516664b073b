"""The checkpoint bucket (encrypted, versioned, private) and the training code uploaded under its hash."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from plan.bundle import write_bundle
from plan.model import StoragePlan
from plan.paths import BUNDLE_DIR


class AwsStorage(pulumi.ComponentResource):
    """Checkpoints survive the nodes: they are synced here and pulled back on resume."""

    def __init__(self, name: str, *, storage: StoragePlan, tags: dict[str, str], object_tags: dict[str, str],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:Storage", f"{name}-storage", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        if storage.existing:
            # The stack's `existingBucket`, read as it is: never created, configured or deleted by this stack.
            self.bucket = aws.s3.Bucket.get(f"{name}-checkpoints", storage.bucket, opts=child)
        else:
            self._create(name, storage, tags, child)
        # The bucket's name, read off its resource: whatever names it through this waits for the bucket to exist.
        self.bucket_name: pulumi.Output[str] = self.bucket.id if storage.existing else self.bucket.bucket
        # The training code, under its content hash: a new hash is new user-data, and the nodes roll. Kept when a
        # new bundle replaces it (the provider's delete removes every version of the key): a node still running
        # it, or one a group launches from an older template, fetches it by that name
        # (docs/design.md#the-day-two-model).
        bundle = write_bundle(BUNDLE_DIR, storage.code_sha256)
        self.code = aws.s3.BucketObjectv2(f"{name}-code", bucket=self.bucket.id, key=storage.code_key,
                                          source=pulumi.FileAsset(str(bundle)), tags=object_tags,
                                          opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True))
        self.register_outputs({"bucket": self.bucket.id})

    def _create(self, name: str, storage: StoragePlan, tags: dict[str, str], child: pulumi.ResourceOptions) -> None:
        # The bucket, named by the plan so user-data can name it before it exists.
        self.bucket = aws.s3.Bucket(f"{name}-checkpoints", bucket=storage.bucket, tags=tags, opts=child)
        # Every write kept as a version: a bad sync cannot destroy the last good checkpoint.
        aws.s3.BucketVersioning(f"{name}-versioning", bucket=self.bucket.id, opts=child,
                                versioning_configuration={"status": "Enabled"})
        # Encrypted at rest with KMS and a bucket key.
        aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-encryption", bucket=self.bucket.id, opts=child,
            rules=[{"apply_server_side_encryption_by_default": {"sse_algorithm": "aws:kms"},
                    "bucket_key_enabled": True}])
        # No public access, whatever a later policy or ACL says.
        aws.s3.BucketPublicAccessBlock(f"{name}-public-access", bucket=self.bucket.id, block_public_acls=True,
                                       block_public_policy=True, ignore_public_acls=True,
                                       restrict_public_buckets=True, opts=child)
