"""AWS facts (FACTS.md): EFA, IMDSv2 spot notices, MTU 9001 in a VPC, S3."""

from types import MappingProxyType

from components.clouds.base import AutoImage, CloudProfile

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
    # The Deep Learning AMI through its SSM parameter: driver, CUDA, EFA and aws-ofi-nccl preinstalled, resolved by
    # EC2 at every launch (docs/cloud-facts.md, AWS).
    auto_image=AutoImage(
        alias="resolve:ssm:/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id",
        has_drivers=True),
)
