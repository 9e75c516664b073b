"""Every shipped AWS stack, run through the real program under mocks, meets the invariants
docs/cloud-facts.md#aws states."""

from __future__ import annotations

import base64
import gzip
from pathlib import Path

import pytest
from stack_preview import preview_stack

from plan import catalog

STACKS = sorted(Path(__file__).resolve().parents[2].joinpath("stacks").glob("Pulumi.aws-*.yaml"))
# The stacks that pin NCCL's ports, read from the stack files themselves.
PINNED_PORTS = [p for p in STACKS if "ncclPortRange:" in p.read_text()]


@pytest.fixture(scope="module", params=STACKS, ids=lambda p: p.stem.removeprefix("Pulumi."))
def stack(request):
    spec, plan, preview = preview_stack(request.param)
    return spec, plan, preview.resources, preview.outputs


def of_type(resources, suffix):
    return [r for r in resources if r["type"].endswith(suffix)]


def test_shipped_aws_stacks_exist():
    assert {p.stem for p in STACKS} >= {"Pulumi.aws-p5", "Pulumi.aws-p4d-capacity-block", "Pulumi.aws-g5-spot",
                                        "Pulumi.aws-g4dn-dev"}


def test_efa_interfaces_match_the_catalog(stack):
    spec, plan, resources, _ = stack
    row = catalog.lookup("aws", spec.instance_type)
    for template in of_type(resources, "LaunchTemplate"):
        nics = template["inputs"]["networkInterfaces"]
        pairs = [(n["networkCardIndex"], n["deviceIndex"]) for n in nics]
        assert len(set(pairs)) == len(pairs), "each (card, device) once"
        assert sorted(n["networkCardIndex"] for n in nics) == list(range(len(nics))), "cards 0..N-1, no gaps"
        primary = next(n for n in nics if n["networkCardIndex"] == 0 and n["deviceIndex"] == 0)
        assert primary.get("interfaceType") != "efa-only"
        if plan.fabric.kind == "efa":
            assert len(nics) == row.fabric_devices
            assert all(n.get("interfaceType") in ("efa", "efa-only") for n in nics)
        else:
            assert all("interfaceType" not in n for n in nics)
        assert all(n["securityGroups"] for n in nics), "security groups on every interface"
        assert "vpcSecurityGroupIds" not in template["inputs"]


def test_no_public_ip_and_a_nat_path(stack):
    _, _, resources, _ = stack
    for template in of_type(resources, "LaunchTemplate"):
        nics = template["inputs"]["networkInterfaces"]
        assert all(n.get("associatePublicIpAddress") in (None, "false") for n in nics)
    assert len(of_type(resources, "NatGateway")) == 1
    private = next(r for r in of_type(resources, "ec2/subnet:Subnet") if r["name"].endswith("private"))
    assert private["inputs"]["mapPublicIpOnLaunch"] is False


def test_security_group_both_directions_for_efa(stack):
    _, plan, resources, _ = stack
    sg_id = of_type(resources, "SecurityGroup")[0]["name"] + "-id"
    ingress = of_type(resources, "SecurityGroupIngressRule")
    egress = of_type(resources, "SecurityGroupEgressRule")
    self_all = [r for r in ingress + egress
                if r["inputs"].get("referencedSecurityGroupId") == sg_id and r["inputs"]["ipProtocol"] == "-1"]
    if plan.fabric.kind == "efa":
        assert {r["type"] for r in self_all} == {ingress[0]["type"], egress[0]["type"]}
    assert all(r["inputs"].get("cidrIpv4") != "0.0.0.0/0" for r in ingress), "nothing open to the internet"


@pytest.mark.parametrize("stack", PINNED_PORTS, ids=lambda p: p.stem.removeprefix("Pulumi."), indirect=True)
def test_port_range_opens_only_range_and_rendezvous(stack):
    spec, _, resources, _ = stack
    assert spec.network.port_range is not None, "the stack file pins ncclPortRange"
    low, high = spec.network.port_range
    ingress = [r["inputs"] for r in of_type(resources, "SecurityGroupIngressRule")
               if "referencedSecurityGroupId" in r["inputs"]]
    assert all(r["ipProtocol"] == "tcp" for r in ingress)
    assert {(r["fromPort"], r["toPort"]) for r in ingress} >= {(low, high), (29400, 29400)}
    assert all(r["toPort"] - r["fromPort"] <= high - low for r in ingress)


def test_ssh_only_from_the_listed_cidrs(stack):
    spec, _, resources, _ = stack
    ssh = [r["inputs"] for r in of_type(resources, "SecurityGroupIngressRule") if r["inputs"].get("fromPort") == 22]
    assert sorted(r["cidrIpv4"] for r in ssh) == sorted(spec.network.ssh_cidrs)


def test_imdsv2_encrypted_root_and_profile(stack):
    _, plan, resources, _ = stack
    profile = of_type(resources, "iam/instanceProfile:InstanceProfile")[0]
    for template in of_type(resources, "LaunchTemplate"):
        inputs = template["inputs"]
        assert inputs["metadataOptions"]["httpTokens"] == "required"
        assert inputs["metadataOptions"]["httpEndpoint"] == "enabled"
        ebs = inputs["blockDeviceMappings"][0]["ebs"]
        assert ebs["encrypted"] == "true" and ebs["volumeType"] == "gp3"
        # The mocks name every ARN after its resource: this is the nodes' own profile, not some other ARN.
        assert inputs["iamInstanceProfile"]["arn"] == f"arn:mock:{profile['type']}:{profile['name']}"
        role = plan.head if template["name"].endswith("head-lt") else plan.worker
        assert gzip.decompress(base64.b64decode(inputs["userData"])).decode() == role.user_data


def test_one_subnet_one_zone_for_the_placement_group(stack):
    spec, plan, resources, _ = stack
    groups = of_type(resources, "PlacementGroup")
    subnets = of_type(resources, "ec2/subnet:Subnet")
    assert {s["inputs"]["availabilityZone"] for s in subnets} == {spec.zone}
    if plan.market.capacity_block:
        assert not groups, "a Capacity Block cluster gets no placement group"
        return
    assert [g["inputs"]["strategy"] for g in groups] == ["cluster"]
    for template in of_type(resources, "LaunchTemplate"):
        assert {n["subnetId"] for n in template["inputs"]["networkInterfaces"]} == {f"{spec.name}-private-id"}
    asg = of_type(resources, "autoscaling/group:Group")
    assert all(g["inputs"]["vpcZoneIdentifiers"] == [f"{spec.name}-private-id"] for g in asg)


def test_head_is_on_demand_at_the_fixed_address(stack):
    _, plan, resources, outputs = stack
    head_template = next(r for r in of_type(resources, "LaunchTemplate") if r["name"].endswith("head-lt"))
    primary = head_template["inputs"]["networkInterfaces"][0]
    assert primary["privateIpAddress"] == plan.network.head_address == outputs["headAddress"]
    assert "instanceMarketOptions" not in head_template["inputs"] or plan.market.capacity_block
    assert plan.network.head_address in gzip.decompress(base64.b64decode(head_template["inputs"]["userData"])).decode()


def test_worker_group_bounds_and_market(stack):
    spec, plan, resources, _ = stack
    made = of_type(resources, "autoscaling/group:Group")[0]
    group = made["inputs"]
    counts = spec.counts
    # Every group is made at the desired size; one the GPU-utilisation policy sizes after that has it ignored, so
    # `pulumi up` never puts back what the policy moved.
    assert (group["minSize"], group["desiredCapacity"], group["maxSize"]) == (counts.min - 1, counts.desired - 1,
                                                                              counts.max - 1)
    policy_sized = spec.autoscaling.gpu_util_target is not None
    assert ("desiredCapacity" in made["options"].get("ignoreChanges", [])) == policy_sized
    if spec.market.spot_percent:
        distribution = group["mixedInstancesPolicy"]["instancesDistribution"]
        assert distribution["onDemandPercentageAboveBaseCapacity"] == 100 - spec.market.spot_percent
        assert distribution["onDemandBaseCapacity"] == spec.market.on_demand_base - 1
        assert distribution["spotAllocationStrategy"] == "price-capacity-optimized"
        price = spec.market.max_spot_price
        assert distribution["spotMaxPrice"] == ("" if price is None else f"{price:.4f}"), "empty: the on-demand price"
        assert group["capacityRebalance"] is True
        assert "launchTemplate" not in group
    else:
        assert "mixedInstancesPolicy" not in group
    worker_template = next(r for r in of_type(resources, "LaunchTemplate") if r["name"].endswith("worker-lt"))
    assert (worker_template["inputs"].get("instanceMarketOptions") or {}).get("marketType") != "spot"


def test_reservation_and_capacity_block_targeting(stack):
    spec, plan, resources, _ = stack
    for template in of_type(resources, "LaunchTemplate"):
        inputs = template["inputs"]
        if plan.market.reservation_id:
            target = inputs["capacityReservationSpecification"]["capacityReservationTarget"]
            assert target["capacityReservationId"] == plan.market.reservation_id
        else:
            assert "capacityReservationSpecification" not in inputs
        if spec.market.capacity_block:
            assert inputs["instanceMarketOptions"]["marketType"] == "capacity-block"


def test_autoscaling_policy_and_warm_pool(stack):
    spec, _, resources, _ = stack
    policies = of_type(resources, "autoscaling/policy:Policy")
    group = of_type(resources, "autoscaling/group:Group")[0]["inputs"]
    if spec.autoscaling.gpu_util_target is None:
        assert not policies
    else:
        config = policies[0]["inputs"]["targetTrackingConfiguration"]
        assert config["targetValue"] == spec.autoscaling.gpu_util_target
        assert config["customizedMetricSpecification"]["metricName"] == "GPUUtilization"
    assert group.get("warmPool", {}).get("minSize", 0) == spec.autoscaling.standby


def test_bucket_encrypted_versioned_private(stack):
    _, plan, resources, outputs = stack
    bucket = of_type(resources, "s3/bucket:Bucket")[0]["inputs"]
    assert bucket["bucket"] == plan.storage.bucket == outputs["bucket"]
    assert of_type(resources, "BucketVersioning")[0]["inputs"]["versioningConfiguration"]["status"] == "Enabled"
    rule = of_type(resources, "BucketServerSideEncryptionConfiguration")[0]["inputs"]["rules"][0]
    assert rule["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "aws:kms"
    block = of_type(resources, "BucketPublicAccessBlock")[0]["inputs"]
    assert all(block[key] for key in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls",
                                      "restrictPublicBuckets"))
    code = of_type(resources, "BucketObjectv2")[0]["inputs"]
    assert code["key"] == f"code/{plan.storage.code_sha256}.tar.gz"


def test_role_may_use_only_its_bucket(stack):
    import json

    _, plan, resources, _ = stack
    policy = json.loads(of_type(resources, "RolePolicy")[0]["inputs"]["policy"])
    s3 = [s for s in policy["Statement"] if any(a.startswith("s3:") for a in s["Action"])]
    assert {res for s in s3 for res in s["Resource"]} == {f"arn:aws:s3:::{plan.storage.bucket}",
                                                         f"arn:aws:s3:::{plan.storage.bucket}/*"}
    assert all("*" not in a for s in policy["Statement"] for a in s["Action"])


def test_spot_price_cap_reaches_the_group():
    resources = preview_stack(next(p for p in STACKS if p.name == "Pulumi.aws-g5-spot.yaml"))[2].resources
    group = of_type(resources, "autoscaling/group:Group")[0]["inputs"]
    assert group["mixedInstancesPolicy"]["instancesDistribution"]["spotMaxPrice"] == "10.0000"


def test_every_node_carries_its_roles_tags(stack):
    _, plan, resources, _ = stack
    for template in of_type(resources, "LaunchTemplate"):
        role = plan.head if template["name"].endswith("head-lt") else plan.worker
        assert template["inputs"]["tags"]["gpufleet:role"] == role.role
        assert template["inputs"]["tags"] == role.tag_map
        assert {t["resourceType"]: t["tags"] for t in template["inputs"]["tagSpecifications"]} == {
            kind: role.tag_map for kind in ("instance", "volume", "network-interface")}
    head = of_type(resources, "ec2/instance:Instance")[0]["inputs"]
    assert head["tags"] == {**plan.head.tag_map, "Name": f"{plan.name}-head"}
    for group in of_type(resources, "autoscaling/group:Group"):
        assert {t["key"]: t["value"] for t in group["inputs"]["tags"]} == plan.worker.tag_map
        assert {t["propagateAtLaunch"] for t in group["inputs"]["tags"]} == {True}


def test_tags_on_everything_taggable(stack):
    _, plan, resources, _ = stack
    for resource in resources:
        tags = resource["inputs"].get("tags")
        if isinstance(tags, dict):
            assert tags.get("gpufleet:cluster") == plan.identity, resource["name"]
        elif isinstance(tags, list):
            assert {"key": "gpufleet:cluster", "value": plan.identity, "propagateAtLaunch": True} in tags


def test_outputs(stack):
    """The worker groups by their Auto Scaling group's name (the preview's mocks name a resource as it is named)."""
    _, plan, resources, outputs = stack
    groups = [r["name"] for r in resources if r["type"] == "aws:autoscaling/group:Group"]
    assert [g["id"] for g in outputs["workerGroups"]] == groups
    assert outputs["hourlyCostUsd"] == plan.cost.expected_hourly
