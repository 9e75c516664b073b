"""VPC, the nodes' vSwitch in the plan's zone, and an enhanced NAT gateway (EIP + SNAT) in its own vSwitch."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from plan.model import NetworkPlan

# The NAT address's cap in Mbit/s: the most a pay-by-traffic EIP takes (billed per GB, so the cap costs nothing);
# unset, it is 5 Mbit/s for the whole cluster's images, drivers and packages (docs/cloud-facts.md#alibaba-nat).
NAT_BANDWIDTH_MBPS = 200


class AliNetwork(pulumi.ComponentResource):
    """The cluster's network in one zone; nodes have no public address and leave through NAT."""

    def __init__(self, name: str, *, net: NetworkPlan, zone: str, tags: dict[str, str],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:alicloud:Network", f"{name}-network", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # The VPC.
        self.vpc = alicloud.vpc.Network(f"{name}-vpc", vpc_name=f"{name}-vpc", cidr_block=net.vpc_cidr, tags=tags,
                                        opts=child)
        # Nodes live in one vSwitch in the plan's zone (eRDMA and the deployment set stay in one zone).
        self.private = alicloud.vpc.Switch(f"{name}-private", vpc_id=self.vpc.id, cidr_block=net.private.cidr,
                                           zone_id=zone, vswitch_name=f"{name}-private", tags=tags, opts=child)
        # The NAT gateway's own vSwitch.
        public = alicloud.vpc.Switch(f"{name}-public", vpc_id=self.vpc.id, cidr_block=net.public.cidr,
                                     zone_id=zone, vswitch_name=f"{name}-public", tags=tags, opts=child)
        # Enhanced NAT gateway: outbound only (packages, drivers, OSS over the internet endpoint).
        nat = alicloud.vpc.NatGateway(f"{name}-nat", vpc_id=self.vpc.id, vswitch_id=public.id, nat_type="Enhanced",
                                      payment_type="PayAsYouGo", nat_gateway_name=f"{name}-nat", tags=tags,
                                      opts=child)
        # The NAT gateway's public address.
        eip = alicloud.ecs.EipAddress(f"{name}-nat-eip", address_name=f"{name}-nat", payment_type="PayAsYouGo",
                                      internet_charge_type="PayByTraffic", bandwidth=str(NAT_BANDWIDTH_MBPS),
                                      tags=tags, opts=child)
        # The address bound to the gateway.
        bound = alicloud.ecs.EipAssociation(f"{name}-nat-eip-binding", allocation_id=eip.id, instance_id=nat.id,
                                            instance_type="Nat", opts=child)
        # SNAT: the nodes' vSwitch leaves through the gateway's address.
        alicloud.vpc.SnatEntry(f"{name}-snat", snat_table_id=nat.snat_table_ids, source_vswitch_id=self.private.id,
                               snat_ip=eip.ip_address, snat_entry_name=f"{name}-snat",
                               opts=pulumi.ResourceOptions(parent=self, depends_on=[bound]))
        self.register_outputs({"vpcId": self.vpc.id, "vswitchId": self.private.id})
