"""VPC, the nodes' subnet in the plan's zone, and a NAT gateway (+EIP) the subnet's default route points at."""

from __future__ import annotations

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from plan.model import NetworkPlan

ANYWHERE = "0.0.0.0/0"


class TcNetwork(pulumi.ComponentResource):
    """The cluster's network in one zone; nodes have no public address and leave through NAT."""

    def __init__(self, name: str, *, net: NetworkPlan, zone: str, tags: dict[str, str],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:tencentcloud:Network", f"{name}-network", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # The VPC.
        self.vpc = tencentcloud.vpc.Instance(f"{name}-vpc", name=f"{name}-vpc", cidr_block=net.vpc_cidr, tags=tags,
                                             opts=child)
        # The NAT gateway's public address.
        eip = tencentcloud.eip.Instance(f"{name}-nat-eip", name=f"{name}-nat", tags=tags, opts=child)
        # NAT gateway: outbound only (packages, drivers, COS over the internet endpoint).
        nat = tencentcloud.nat.Gateway(f"{name}-nat", name=f"{name}-nat", vpc_id=self.vpc.id,
                                       assigned_eip_sets=[eip.public_ip], zone=zone, tags=tags, opts=child)
        # The nodes' route table: everything outside the VPC goes to NAT.
        table = tencentcloud.route.Table(f"{name}-private-rt", name=f"{name}-private", vpc_id=self.vpc.id, tags=tags,
                                         opts=child)
        tencentcloud.route.TableEntry(f"{name}-default-route", route_table_id=table.id, destination_cidr_block=ANYWHERE,
                                      next_type="NAT", next_hub=nat.id, description="egress through NAT", opts=child)
        # Nodes live in one subnet in the plan's zone (HCC RDMA and the HPC cluster stay in one zone).
        self.private = tencentcloud.subnet.Instance(f"{name}-private", name=f"{name}-private", vpc_id=self.vpc.id,
                                                    cidr_block=net.private.cidr, availability_zone=zone,
                                                    route_table_id=table.id, tags=tags, opts=child)
        self.register_outputs({"vpcId": self.vpc.id, "subnetId": self.private.id})
