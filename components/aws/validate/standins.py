"""Known stand-ins, in the provider's own formats, for the ids and ARNs the preview's mocks make up.

The provider's validators skip a value that is unknown at plan time, so a reference left as `${aws_x.y.id}` would hide
exactly the errors the check exists for. Each resource the preview registered gets an id and an ARN shaped as AWS
shapes them (`sg-` and 17 hex digits, `arn:aws:iam::ACCOUNT:role/NAME`), stable for its name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

ACCOUNT = "123456789012"
# Resources whose id is an EC2-style "prefix-" plus 17 hex digits, and the ARN kind EC2 gives them.
EC2_IDS = {
    "aws_vpc": ("vpc", "vpc"), "aws_subnet": ("subnet", "subnet"), "aws_security_group": ("sg", "security-group"),
    "aws_internet_gateway": ("igw", "internet-gateway"), "aws_nat_gateway": ("nat", "natgateway"),
    "aws_eip": ("eipalloc", "elastic-ip"), "aws_route_table": ("rtb", "route-table"),
    "aws_route_table_association": ("rtbassoc", None), "aws_launch_template": ("lt", "launch-template"),
    "aws_instance": ("i", "instance"), "aws_vpc_endpoint": ("vpce", "vpc-endpoint"),
    "aws_vpc_security_group_ingress_rule": ("sgr", "security-group-rule"),
    "aws_vpc_security_group_egress_rule": ("sgr", "security-group-rule"),
}
# Resources whose id is their name (or another input), and how their ARN is built from it.
NAMED_IDS = {
    "aws_iam_role": ("name", "arn:aws:iam::{account}:role/{id}"),
    "aws_iam_instance_profile": ("name", "arn:aws:iam::{account}:instance-profile/{id}"),
    "aws_iam_role_policy": ("name", None),
    "aws_iam_role_policy_attachment": ("name", None),
    "aws_placement_group": ("name", "arn:aws:ec2:{region}:{account}:placement-group/{id}"),
    "aws_autoscaling_group": ("name", "arn:aws:autoscaling:{region}:{account}:autoScalingGroup:"
                                      "00000000-0000-0000-0000-000000000000:autoScalingGroupName/{id}"),
    "aws_autoscaling_policy": ("name", None), "aws_autoscaling_lifecycle_hook": ("name", None),
    "aws_s3_bucket": ("bucket", "arn:aws:s3:::{id}"),
    "aws_s3_bucket_versioning": ("bucket", None), "aws_s3_bucket_public_access_block": ("bucket", None),
    "aws_s3_bucket_server_side_encryption_configuration": ("bucket", None),
    "aws_s3_object": ("key", None), "aws_iam_policy": ("name", "arn:aws:iam::{account}:policy/{id}"),
}


class MissingStandIn(Exception):
    """A preview value refers to a resource whose id format this module does not know yet."""


def mock_id(name: str) -> str:
    """The id fleet.preview's mocks give a resource."""
    return f"{name}-id"


def mock_arn(token: str, name: str) -> str:
    """The ARN fleet.preview's mocks give a resource."""
    return f"arn:mock:{token}:{name}"


def _hex(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:17]


def _ids(tf_type: str, name: str, inputs: dict[str, Any], region: str) -> tuple[str, str | None]:
    if tf_type in EC2_IDS:
        prefix, kind = EC2_IDS[tf_type]
        known = f"{prefix}-{_hex(name)}"
        return known, kind and f"arn:aws:ec2:{region}:{ACCOUNT}:{kind}/{known}"
    if tf_type in NAMED_IDS:
        field, arn = NAMED_IDS[tf_type]
        known = str(inputs.get(field) or name)
        return known, arn and arn.format(account=ACCOUNT, region=region, id=known)
    raise MissingStandIn(tf_type)


def standins(resources: Iterable[tuple[str, str, str, dict[str, Any]]], region: str) -> dict[str, str]:
    """Mock value -> provider-format value, for (token, terraform type, name, inputs) of every custom resource.

    A type missing from the tables is left out here; `unresolved` then names it if anything refers to it.
    """
    table: dict[str, str] = {}
    for token, tf_type, name, inputs in resources:
        try:
            known_id, known_arn = _ids(tf_type, name, inputs, region)
        except MissingStandIn:
            continue
        table[mock_id(name)] = known_id
        if known_arn:
            table[mock_arn(token, name)] = known_arn
    return table
