"""VPC, a private subnet for nodes, a public subnet with a NAT gateway, and an S3 gateway endpoint."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from plan.model import NetworkPlan


class AwsNetwork(pulumi.ComponentResource):
    """The cluster's network in one zone; nodes have no public address and leave through NAT."""

    def __init__(self, name: str, *, net: NetworkPlan, zone: str, region: str, tags: dict[str, str],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:Network", f"{name}-network", None, opts)
        child = pulumi.ResourceOptions(parent=self)

        # The VPC, with DNS so nodes resolve each other and AWS endpoints.
        self.vpc = aws.ec2.Vpc(f"{name}-vpc", cidr_block=net.vpc_cidr, enable_dns_hostnames=True,
                               enable_dns_support=True, tags={**tags, "Name": f"{name}-vpc"}, opts=child)
        # Nodes live in one private subnet in the plan's zone (EFA and placement groups need one AZ).
        self.private = aws.ec2.Subnet(f"{name}-private", vpc_id=self.vpc.id, cidr_block=net.private.cidr,
                                      availability_zone=zone, map_public_ip_on_launch=False,
                                      tags={**tags, "Name": f"{name}-private"}, opts=child)
        # The public subnet only holds the NAT gateway.
        self.public = aws.ec2.Subnet(f"{name}-public", vpc_id=self.vpc.id, cidr_block=net.public.cidr,
                                     availability_zone=zone, map_public_ip_on_launch=False,
                                     tags={**tags, "Name": f"{name}-public"}, opts=child)
        # Internet gateway and NAT for outbound traffic (packages, drivers); nothing comes in through them.
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=self.vpc.id, tags=tags, opts=child)
        eip = aws.ec2.Eip(f"{name}-nat-eip", domain="vpc", tags=tags, opts=child)
        nat = aws.ec2.NatGateway(f"{name}-nat", subnet_id=self.public.id, allocation_id=eip.id, tags=tags,
                                 opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]))
        # Routes: public subnet to the internet gateway, private subnet to NAT.
        public_rt = aws.ec2.RouteTable(f"{name}-public-rt", vpc_id=self.vpc.id, tags=tags, opts=child,
                                       routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0",
                                                                           gateway_id=igw.id)])
        private_rt = aws.ec2.RouteTable(f"{name}-private-rt", vpc_id=self.vpc.id, tags=tags, opts=child,
                                        routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0",
                                                                            nat_gateway_id=nat.id)])
        aws.ec2.RouteTableAssociation(f"{name}-public-rta", subnet_id=self.public.id, route_table_id=public_rt.id,
                                      opts=child)
        aws.ec2.RouteTableAssociation(f"{name}-private-rta", subnet_id=self.private.id,
                                      route_table_id=private_rt.id, opts=child)
        # Checkpoints go to S3 through a gateway endpoint: no NAT charges, no internet path.
        aws.ec2.VpcEndpoint(f"{name}-s3", vpc_id=self.vpc.id, service_name=f"com.amazonaws.{region}.s3",
                            vpc_endpoint_type="Gateway", route_table_ids=[private_rt.id], tags=tags, opts=child)
        self.register_outputs({"vpcId": self.vpc.id, "privateSubnetId": self.private.id})
