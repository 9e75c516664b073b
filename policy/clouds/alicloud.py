"""How Alibaba Cloud resources read for the rules (type tokens as pulumi_alicloud 4 declares them), and the rule only
Alibaba needs: no spot instance in a deployment set."""

from __future__ import annotations

from collections.abc import Iterable

from plan.catalog import lookup
from policy.base import (
    ADVISORY,
    Ingress,
    Inputs,
    Reader,
    Resource,
    ResourceRule,
    items,
    known,
    mapping,
    of_type,
    present,
)

INSTANCE = "alicloud:ecs/instance:Instance"
LAUNCH_TEMPLATE = "alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate"
NIC = "alicloud:ecs/ecsNetworkInterface:EcsNetworkInterface"
SCALING_CONFIG = "alicloud:ess/scalingConfiguration:ScalingConfiguration"
SCALING_GROUP = "alicloud:ess/scalingGroup:ScalingGroup"
DEPLOYMENT_SET = "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet"
SG = "alicloud:ecs/securityGroup:SecurityGroup"
SG_RULE = "alicloud:ecs/securityGroupRule:SecurityGroupRule"
BUCKET = "alicloud:oss/bucket:Bucket"
RAM_POLICY = "alicloud:ram/policy:Policy"
NODES = (INSTANCE, LAUNCH_TEMPLATE, SCALING_CONFIG)
ERDMA_MODE = "HighPerformance"
SPOT_STRATEGIES = ("SpotAsPriceGo", "SpotWithPriceLimit")
SSE = ("AES256", "KMS", "SM4")


class AliReader(Reader):
    storage_actions = ("oss:",)

    def ingress(self, kind: str, inputs: Inputs) -> Iterable[Ingress]:
        if kind == SG_RULE and inputs.get("type") == "ingress" and inputs.get("policy", "accept") == "accept":
            for cidr in (inputs.get("cidrIp"), inputs.get("ipv6CidrIp")):
                yield Ingress(inputs.get("ipProtocol"), str(inputs.get("portRange")), cidr, inputs.get("description"))

    def policy_documents(self, kind: str, inputs: Inputs) -> Iterable[object]:
        return [inputs.get("policyDocument")] if kind == RAM_POLICY else []

    def bucket_of(self, resource: str) -> str | None:
        """acs:oss:REGION:ACCOUNT:BUCKET/KEY."""
        parts = resource.split(":")
        if resource.startswith("acs:oss:") and len(parts) >= 5:
            return ":".join(parts[4:]).split("/", 1)[0]
        return None

    def metadata(self, kind: str, inputs: Inputs) -> Iterable[str]:
        """Security-hardened mode or metadata off; ESS configurations have no such setting in the SDK (judged through
        their launch template where they use one; docs/gitops.md lists the gap)."""
        if (kind in (INSTANCE, LAUNCH_TEMPLATE) and not inputs.get("launchTemplateId")
                and inputs.get("httpTokens") != "required" and inputs.get("httpEndpoint") != "disabled"):
            yield "instance metadata must run in security-hardened mode (httpTokens: required)."

    def disks(self, kind: str, inputs: Inputs) -> Iterable[tuple[str, object]]:
        if kind in (INSTANCE, SCALING_CONFIG) and not inputs.get("launchTemplateId"):
            yield "the system disk", inputs.get("systemDiskEncrypted")
        if kind == LAUNCH_TEMPLATE:
            yield "the system disk", mapping(inputs.get("systemDisk")).get("encrypted")
        if kind in NODES:
            for disk in items(inputs.get("dataDisks")):
                yield disk.get("name") or disk.get("device") or "a data disk", disk.get("encrypted")

    def bucket_encryption(self, kind: str, inputs: Inputs) -> Iterable[str]:
        if kind == BUCKET:
            algorithm = mapping(inputs.get("serverSideEncryptionRule")).get("sseAlgorithm")
            if algorithm not in SSE and algorithm != "[unknown]":
                yield "the bucket is not encrypted (serverSideEncryptionRule.sseAlgorithm: KMS or AES256)."

    def user_data(self, kind: str) -> tuple[tuple[str, bool | None], ...]:
        return (("userData", None),) if kind in NODES else ()

    def public_ip(self, kind: str, inputs: Inputs) -> Iterable[str]:
        """A public address cannot go with secondary interfaces (eRDMA nodes follow EC2's rule here)."""
        if kind in NODES and items(inputs.get("networkInterfaces")) and int(inputs.get("internetMaxBandwidthOut") or 0):
            yield ("a public IP (internetMaxBandwidthOut > 0) cannot go with secondary interfaces; "
                   "leave through the NAT gateway.")

    def fabric_layout(self, kind: str, inputs: Inputs) -> Iterable[str]:
        """Elastic RDMA interfaces (traffic mode HighPerformance), as many as the type's ERI count."""
        row = lookup(self.cloud, inputs["instanceType"]) if kind in NODES else None
        if row is None:
            return
        devices = row.fabric_devices if row.fabric == "erdma" else 0
        eris = [n for n in items(inputs.get("networkInterfaces")) if n.get("networkInterfaceTrafficMode") == ERDMA_MODE]
        if eris and len(eris) != devices:
            yield f"the type has {devices} eRDMA interfaces (ERIs); the node asks for {len(eris)}."

    def spot(self, resource: Resource) -> bool:
        return resource["type"] in NODES and resource["inputs"].get("spotStrategy") in SPOT_STRATEGIES

    def buckets(self) -> tuple[str, ...]:
        return (BUCKET,)

    def self_traffic(self, resources: list[Resource]) -> Iterable[tuple[str, str]]:
        """eRDMA needs the group open to itself: innerAccessPolicy Accept, or rules for all protocols both ways."""
        nics = [n for r in of_type(resources, *NODES) for n in items(r["inputs"].get("networkInterfaces"))]
        standalone = [r["inputs"] for r in of_type(resources, NIC)]
        if not any(n.get("networkInterfaceTrafficMode") == ERDMA_MODE for n in nics + standalone):
            return
        if any(str(g["inputs"].get("innerAccessPolicy", "")).lower() == "accept" for g in of_type(resources, SG)):
            return
        rules = of_type(resources, SG_RULE)
        for direction in ("ingress", "egress"):
            if not any(r["inputs"].get("type") == direction and r["inputs"].get("ipProtocol") == "all"
                       and present(r["inputs"].get("sourceSecurityGroupId")) for r in rules):
                yield "security group", (f"eRDMA needs the group open to itself: innerAccessPolicy Accept, or an "
                                         f"{direction} rule for all protocols with sourceSecurityGroupId = the group.")

    def placement(self, resources: list[Resource]) -> Iterable[tuple[str, str]]:
        if not of_type(resources, DEPLOYMENT_SET):
            return
        nodes = of_type(resources, INSTANCE)
        switches = {v for v in [r["inputs"].get("vswitchId") for r in nodes] + [
            s for r in of_type(resources, SCALING_GROUP) for s in items(r["inputs"].get("vswitchIds"))] if known(v)}
        if len(switches) > 1:
            yield "deployment set", f"nodes use {len(switches)} vSwitches; a LowLatency deployment set needs one."
        if len(zones := {z for z in (r["inputs"].get("availabilityZone") for r in nodes) if known(z)}) > 1:
            yield "deployment set", f"nodes span zones {sorted(zones)}; use one."


def spot_outside_deployment_set(kind: str, inputs: Inputs) -> Iterable[str]:
    """Alibaba documents that spot instances cannot be created in a deployment set (the doc may be old: advisory)."""
    spot = kind in (INSTANCE, LAUNCH_TEMPLATE) and inputs.get("spotStrategy") in SPOT_STRATEGIES
    if spot and present(inputs.get("deploymentSetId")):
        yield "spot instances may fail to launch inside a deployment set; use on-demand or drop the set."


READER = AliReader("alicloud")
RULES = (ResourceRule("spot-outside-deployment-set", "No spot instance inside an Alibaba deployment set.", ADVISORY,
                      spot_outside_deployment_set),)
