"""How AWS resources read for the rules (type tokens as pulumi_aws 7 declares them), and the rules only AWS needs:
S3 encryption as its own resource, and Capacity Blocks alone."""

from __future__ import annotations

from collections.abc import Iterable

from plan.catalog import lookup
from policy.base import (
    MANDATORY,
    Ingress,
    Inputs,
    Reader,
    Resource,
    StackRule,
    items,
    known,
    mapping,
    of_type,
    present,
    truthy,
)

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE = "aws:ec2/instance:Instance"
EBS_VOLUME = "aws:ebs/volume:Volume"
ASG = "aws:autoscaling/group:Group"
PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
SG = "aws:ec2/securityGroup:SecurityGroup"
SG_INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
SG_EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
BUCKETS = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
BUCKET_SSE = "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
POLICY = "aws:iam/policy:Policy"
# S3 ARNs in every partition: arn:PARTITION:s3:::BUCKET/KEY.
S3_ARNS = ("arn:aws:s3:::", "arn:aws-cn:s3:::", "arn:aws-us-gov:s3:::")
EFA_KINDS = ("efa", "efa-only")
# Fields holding user-data per type: (field, already base64?).
USER_DATA = {LAUNCH_TEMPLATE: (("userData", True),), INSTANCE: (("userData", False), ("userDataBase64", True))}


def _card_device(nic: dict) -> tuple[int, int]:
    return int(nic.get("networkCardIndex") or 0), int(nic.get("deviceIndex") or 0)


def _efa_layout(nics: list[dict], devices: int) -> Iterable[str]:
    """The accepted layouts (docs/cloud-facts.md#aws-efa): one EFA-capable interface per card 0..N-1, the primary
    (card 0, device 0) never efa-only."""
    fabric = [n for n in nics if n.get("interfaceType") in EFA_KINDS]
    if not fabric:
        return
    if devices == 0:
        yield "the type has no EFA, but interfaces ask for it; use a type with EFA or plain interfaces."
        return
    pairs = [_card_device(n) for n in nics]
    if len(set(pairs)) != len(pairs):
        yield "two interfaces share a (network card, device) pair."
    cards = sorted({_card_device(n)[0] for n in fabric})
    if len(fabric) != devices or cards != list(range(devices)):
        yield (f"the type has {devices} EFA interfaces, one per network card 0..{devices - 1}; the template has "
               f"{len(fabric)} on cards {cards}.")
    primary = [n for n in nics if _card_device(n) == (0, 0)]
    if not primary or primary[0].get("interfaceType") == "efa-only":
        yield "the primary interface (card 0, device 0) must exist and must not be efa-only."


def _subnets(resources: list[Resource]) -> set:
    nics = [n for r in of_type(resources, LAUNCH_TEMPLATE, INSTANCE)
            for n in items(r["inputs"].get("networkInterfaces"))]
    direct = [r["inputs"].get("subnetId") for r in of_type(resources, INSTANCE)]
    groups = [s for r in of_type(resources, ASG) for s in items(r["inputs"].get("vpcZoneIdentifiers"))]
    return {v for v in [n.get("subnetId") for n in nics] + direct + groups if known(v)}


def encrypted_s3_buckets(resources: list[Resource]) -> Iterable[tuple[str, str]]:
    """S3 encryption is a resource of its own, tied to its bucket by an id unknown before apply: so the rule asks
    for one encryption configuration per bucket that has none inline."""
    bare = [r for r in of_type(resources, *BUCKETS) if not r["inputs"].get("serverSideEncryptionConfiguration")]
    for bucket in bare[len(of_type(resources, BUCKET_SSE)):]:
        yield bucket["name"], "the bucket has no server-side encryption configuration."


class AwsReader(Reader):
    storage_actions = ("s3:",)

    def ingress(self, kind: str, inputs: Inputs) -> Iterable[Ingress]:
        if kind == SG_INGRESS:
            for cidr in (inputs.get("cidrIpv4"), inputs.get("cidrIpv6")):
                yield Ingress(inputs.get("ipProtocol"),
                              f"{inputs.get('fromPort', 'all')}-{inputs.get('toPort', 'all')}", cidr,
                              inputs.get("description"))
        elif kind == SG_RULE and inputs.get("type") == "ingress":
            for cidr in items(inputs.get("cidrBlocks")) + items(inputs.get("ipv6CidrBlocks")):
                yield Ingress(inputs.get("protocol"), f"{inputs.get('fromPort')}-{inputs.get('toPort')}", cidr,
                              inputs.get("description"))
        elif kind == SG:
            # Inline rules of the group itself.
            for entry in items(inputs.get("ingress")):
                for cidr in items(entry.get("cidrBlocks")) + items(entry.get("ipv6CidrBlocks")):
                    yield Ingress(entry.get("protocol"), f"{entry.get('fromPort')}-{entry.get('toPort')}", cidr,
                                  entry.get("description"))

    def policy_documents(self, kind: str, inputs: Inputs) -> Iterable[object]:
        if kind == ROLE:
            return [policy.get("policy") for policy in items(inputs.get("inlinePolicies"))]
        return [inputs.get("policy")] if kind in (ROLE_POLICY, POLICY) else []

    def bucket_of(self, resource: str) -> str | None:
        if resource.startswith(S3_ARNS):
            return resource.split(":::", 1)[1].split("/", 1)[0]
        return None

    def metadata(self, kind: str, inputs: Inputs) -> Iterable[str]:
        if kind == LAUNCH_TEMPLATE or (kind == INSTANCE and not inputs.get("launchTemplate")):
            options = mapping(inputs.get("metadataOptions"))
            if options.get("httpTokens") != "required" and options.get("httpEndpoint") != "disabled":
                yield "instance metadata must require IMDSv2 tokens (metadataOptions.httpTokens: required)."

    def disks(self, kind: str, inputs: Inputs) -> Iterable[tuple[str, object]]:
        if kind == LAUNCH_TEMPLATE:
            for m in items(inputs.get("blockDeviceMappings")):
                if m.get("ebs") is not None or not m.get("virtualName"):
                    yield m.get("deviceName", "a volume"), mapping(m.get("ebs")).get("encrypted")
        elif kind == INSTANCE and not inputs.get("launchTemplate"):
            yield "the root volume", mapping(inputs.get("rootBlockDevice")).get("encrypted")
            for disk in items(inputs.get("ebsBlockDevices")):
                yield disk.get("deviceName", "a volume"), disk.get("encrypted")
        elif kind == EBS_VOLUME:
            yield "the volume", inputs.get("encrypted")

    def user_data(self, kind: str) -> tuple[tuple[str, bool | None], ...]:
        return USER_DATA.get(kind, ())

    def public_ip(self, kind: str, inputs: Inputs) -> Iterable[str]:
        """EC2 rejects a public IP when a node has more than one interface."""
        if kind in (LAUNCH_TEMPLATE, INSTANCE):
            nics = items(inputs.get("networkInterfaces"))
            public = truthy(inputs.get("associatePublicIpAddress")) or any(
                truthy(n.get("associatePublicIpAddress")) for n in nics)
            if len(nics) > 1 and public:
                yield "a public IP cannot go with several interfaces (EC2 rejects it); use the NAT gateway."

    def fabric_layout(self, kind: str, inputs: Inputs) -> Iterable[str]:
        row = lookup(self.cloud, inputs["instanceType"]) if kind in (LAUNCH_TEMPLATE, INSTANCE) else None
        if row is not None:
            yield from _efa_layout(items(inputs.get("networkInterfaces")),
                                   row.fabric_devices if row.fabric == "efa" else 0)

    def spot(self, resource: Resource) -> bool:
        kind, inputs = resource["type"], resource["inputs"]
        if kind == ASG:
            distribution = mapping(mapping(inputs.get("mixedInstancesPolicy")).get("instancesDistribution"))
            above_base = distribution.get("onDemandPercentageAboveBaseCapacity", 100)
            return bool(distribution) and known(above_base) and int(above_base) < 100
        if kind in (LAUNCH_TEMPLATE, INSTANCE):
            return mapping(inputs.get("instanceMarketOptions")).get("marketType") == "spot"
        return False

    def buckets(self) -> tuple[str, ...]:
        return BUCKETS

    def self_traffic(self, resources: list[Resource]) -> Iterable[tuple[str, str]]:
        """EFA needs all traffic from and to the group itself (ingress-only fails with "Unresponsive receiver")."""
        efa = any(n.get("interfaceType") in EFA_KINDS for r in of_type(resources, LAUNCH_TEMPLATE, INSTANCE)
                  for n in items(r["inputs"].get("networkInterfaces")))
        if not efa:
            return
        for direction, kind in (("ingress", SG_INGRESS), ("egress", SG_EGRESS)):
            if not any(r["inputs"].get("ipProtocol") == "-1" and present(r["inputs"].get("referencedSecurityGroupId"))
                       for r in of_type(resources, kind)):
                yield "security group", (f"EFA needs an all-traffic {direction} rule referencing the group itself "
                                         "(ingress-only fails with 'Unresponsive receiver').")

    def placement(self, resources: list[Resource]) -> Iterable[tuple[str, str]]:
        if not of_type(resources, PLACEMENT_GROUP):
            return
        if len(subnets := _subnets(resources)) > 1:
            yield "placement group", f"nodes use {len(subnets)} subnets; a placement group needs one."
        zones = {z for r in of_type(resources, ASG) for z in items(r["inputs"].get("availabilityZones")) if known(z)}
        if len(zones) > 1:
            yield "placement group", f"the worker group spans zones {sorted(zones)}; use one."


READER = AwsReader("aws")


def capacity_block_alone(resources: list[Resource]) -> Iterable[tuple[str, str]]:
    """A Capacity Block places its own nodes: no placement group (ParallelCluster forbids it) and no spot mix."""
    blocks = [r for r in of_type(resources, LAUNCH_TEMPLATE, INSTANCE)
              if mapping(r["inputs"].get("instanceMarketOptions")).get("marketType") == "capacity-block"]
    for block in blocks:
        grouped = present(mapping(block["inputs"].get("placement")).get("groupName"))
        if grouped or of_type(resources, PLACEMENT_GROUP):
            yield block["name"], "a Capacity Block cannot be combined with a placement group; remove the group."
        if any(READER.spot(r) for r in resources):
            yield block["name"], "a Capacity Block cannot be mixed with spot capacity; set spotPercent to 0."


RULES = (StackRule("encrypted-s3-buckets", "Every S3 bucket has server-side encryption.", MANDATORY,
                   encrypted_s3_buckets),
         StackRule("capacity-block-alone", "A Capacity Block has no placement group and no spot mix.", MANDATORY,
                   capacity_block_alone))
