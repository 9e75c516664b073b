"""AWS facts (docs/cloud-facts.md): EFA, IMDSv2 spot notices, MTU 9001 in a VPC, S3, Session Manager access."""

from collections.abc import Iterable
from types import MappingProxyType

from components.clouds.base import CloudProfile
from components.errors import Problem
from components.spec import ClusterSpec
from components.stackfile import CLUSTER_KEY


def no_ssh(spec: ClusterSpec, cloud: CloudProfile) -> Iterable[Problem]:
    """AWS nodes have no public address and no key pair: an SSH rule would open a port nobody can log in through.

    Session Manager reaches the nodes through the agent's own outbound HTTPS connection, so no port is opened at all.
    """
    if spec.network.ssh_cidrs:
        yield Problem(f"{CLUSTER_KEY}.network.sshCidrs", "AWS nodes have no public address and no key pair, so no "
                      "network can log in over SSH; they are reached through SSM Session Manager instead.",
                      "remove sshCidrs; log in with `aws ssm start-session --target INSTANCE_ID` (the nodes' role "
                      "allows Session Manager, no port is needed).")

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
    rules=(no_ssh,),
)
