"""The checkpoint bucket (encrypted, versioned, private) and the training code uploaded under its hash."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from components.alicloud.upload import upload_provider
from plan.bundle import write_bundle
from plan.model import StoragePlan
from plan.paths import BUNDLE_DIR

SSE_OSS = "AES256"


class AliStorage(pulumi.ComponentResource):
    """Checkpoints survive the nodes: they are synced here and pulled back on resume."""

    def __init__(self, name: str, *, storage: StoragePlan, region: str, tags: dict[str, str],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:alicloud:Storage", f"{name}-storage", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        if storage.existing:
            # The stack's `existingBucket`, read as it is: never created, configured or deleted by this stack.
            self.bucket = alicloud.oss.Bucket.get(f"{name}-checkpoints", storage.bucket, opts=child)
        else:
            self._create(name, storage, tags, child)
        # The bucket's name, read off its resource: whatever names it through this waits for the bucket to exist.
        self.bucket_name: pulumi.Output[str] = self.bucket.id if storage.existing else self.bucket.bucket
        # The training code, under its content hash: a new hash is new user-data, and the nodes roll. Kept when a
        # new bundle replaces it: a node still running it, or one booted from its user-data, fetches it by that
        # name (docs/design.md#the-day-two-model).
        self.code = alicloud.oss.BucketObject(
            f"{name}-code", bucket=self.bucket.id, key=storage.code_key,
            source=str(write_bundle(BUNDLE_DIR, storage.code_sha256)),
            opts=pulumi.ResourceOptions.merge(self._upload_options(name, storage, region),
                                              pulumi.ResourceOptions(retain_on_delete=True)))
        self.register_outputs({"bucket": self.bucket.id})

    def _create(self, name: str, storage: StoragePlan, tags: dict[str, str], child: pulumi.ResourceOptions) -> None:
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

    def _upload_options(self, name: str, storage: StoragePlan, region: str) -> pulumi.ResourceOptions:
        """The default provider, or the endpoint the plan names for the upload: the bucket's domain when the stack
        has one, bound here (its HTTPS certificate is the user's, attached in the console: left alone), else the
        internal endpoint (docs/cloud-facts.md#alibaba-oss-public-endpoint)."""
        upload = storage.code_upload
        if not upload.endpoint:
            return pulumi.ResourceOptions(parent=self)
        # What the account needs for it, in `pulumi preview` too.
        pulumi.log.warn(upload.needs, resource=self)
        binding = [alicloud.oss.BucketCname(
            f"{name}-code-domain", bucket=self.bucket.id, domain=upload.bound_domain,
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["certificate"]))] if upload.bound_domain else []
        return pulumi.ResourceOptions(parent=self, depends_on=binding, provider=upload_provider(
            name, region=region, endpoint=upload.endpoint, parent=self))
