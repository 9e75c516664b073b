"""The provider the code bundle's upload goes through where the plan names an endpoint other than OSS's default
(CodeUpload; docs/cloud-facts.md#alibaba-oss-public-endpoint): the stack's own credentials, that one OSS endpoint."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

# The default provider's credential settings (stack config `alicloud:<key>`), which an explicit provider does not
# inherit; each maps to the provider's argument. Unset ones leave the provider its environment (ALICLOUD_ACCESS_KEY...).
SECRET_SETTINGS = {"accessKey": "access_key", "secretKey": "secret_key", "securityToken": "security_token"}
PLAIN_SETTINGS = {"profile": "profile", "sharedCredentialsFile": "shared_credentials_file",
                  "ecsRoleName": "ecs_role_name"}


def stack_credentials() -> dict[str, object]:
    """The credential settings the stack's config sets for the default provider, as provider arguments."""
    config = pulumi.Config("alicloud")
    found: dict[str, object] = {arg: config.get_secret(key) for key, arg in SECRET_SETTINGS.items()}
    found |= {arg: config.get(key) for key, arg in PLAIN_SETTINGS.items()}
    if (assume_role := config.get_object("assumeRole")) is not None:
        found["assume_role"] = assume_role
    return {arg: value for arg, value in found.items() if value is not None}


def upload_provider(name: str, *, region: str, endpoint: str, parent: pulumi.Resource) -> alicloud.Provider:
    """Only the bundle's object goes through this provider: the bucket's own settings stay on the default one."""
    return alicloud.Provider(f"{name}-code-upload", region=region, endpoints=[{"oss": endpoint}],
                             **stack_credentials(), opts=pulumi.ResourceOptions(parent=parent))
