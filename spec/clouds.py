"""The clouds a stack may name, each with the Pulumi config key that holds its region (None: the local cloud has no
region key) and its provider's config keys a stack file may not hold (spec/configkeys.py): the stack file's own
vocabulary. Each cloud's facts are its profile's (clouds/), which reads its key here."""

from spec.configkeys import ProviderKeys

REGION_KEYS: dict[str, str | None] = {
    "aws": "aws:region",
    "alicloud": "alicloud:region",
    "tencentcloud": "tencentcloud:region",
    "local": None,
}
CLOUDS = tuple(REGION_KEYS)

# Each provider's keys, by its config namespace, from the pinned packages' config/vars.py
# (docs/cloud-facts.md#provider-config-keys).
PROVIDER_KEYS = {
    "aws": ProviderKeys(credentials=("accessKey", "secretKey", "token"), endpoints=("endpoints",),
                        environment="AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)", insecure="insecure"),
    "alicloud": ProviderKeys(credentials=("accessKey", "secretKey", "securityToken"),
                             endpoints=("endpoints", "logEndpoint", "mnsEndpoint"),
                             environment="ALICLOUD_ACCESS_KEY, ALICLOUD_SECRET_KEY", protocol="protocol"),
    "tencentcloud": ProviderKeys(credentials=("secretId", "secretKey", "securityToken"),
                                 endpoints=("domain", "cosDomain"),
                                 environment="TENCENTCLOUD_SECRET_ID, TENCENTCLOUD_SECRET_KEY", protocol="protocol"),
}
