"""AWS facts (FACTS.md): EFA, IMDSv2 spot notices, MTU 9001 in a VPC, S3."""

from types import MappingProxyType

from components.clouds.base import CloudProfile

AWS = CloudProfile(
    name="aws",
    region_key="aws:region",
    fabrics=frozenset({"efa", "tcp"}),
    mtu=MappingProxyType({"efa": 9001, "tcp": 9001}),
    bucket_scheme="s3",
    spot_notice_url="http://169.254.169.254/latest/meta-data/spot/instance-action",
    metadata_url="http://169.254.169.254/latest/meta-data",
    imds_token_url="http://169.254.169.254/latest/api/token",
    imds_token_header="X-aws-ec2-metadata-token",
    # Cost assumptions, documented in the README and overridable: typical spot and 1-year reservation savings.
    spot_discount=0.60,
    reserved_discount=0.35,
    spot_strategies=MappingProxyType({
        "price-capacity-optimized": "price-capacity-optimized",
        "capacity-optimized": "capacity-optimized",
        "lowest-price": "lowest-price",
    }),
    pulumi_provider="pulumi_aws",
)
