"""The clouds a stack may name, each with the Pulumi config key that holds its region (None: the local cloud has no
region key): the stack file's own vocabulary. Each cloud's facts are its profile's (clouds/), which reads its key
here."""

REGION_KEYS: dict[str, str | None] = {
    "aws": "aws:region",
    "alicloud": "alicloud:region",
    "tencentcloud": "tencentcloud:region",
    "local": None,
}
CLOUDS = tuple(REGION_KEYS)
