"""What only the Tencent Cloud account can say, asked at deploy time: the newest public image for `image: auto` and
the account's APPID, which the default COS bucket's name ends in; and whether each candidate's type is on sale in its
zone (docs/cloud-facts.md#capacity-look-ups), and where the cluster's instances run now
(docs/cloud-facts.md#where-a-cluster-runs)."""

from __future__ import annotations

import tencentcloud_iac_pulumi as tencentcloud

from components.realizers.stock import runs_on, sold_out
from plan.candidates import Availability, Candidate, running_on
from plan.facts import DeployFacts, Lookups
from plan.identity import CLUSTER_TAG
from spec.errors import Problem, SpecError
from spec.stackfile import CLUSTER_KEY

IMAGES = "tencentcloud:Images/getInstance:getInstance"
USER = "tencentcloud:User/getInfo:getInfo"
TYPES = "tencentcloud:Instance/getTypes:getTypes"
INSTANCES = "tencentcloud:Instances/getInstance:getInstance"
ON_SALE = "SELL"  # a zone instance config's status: SELL or SOLD_OUT
# An instance's states that no longer hold its place: failed to launch, to be terminated, terminating
# (docs/cloud-facts.md#where-a-cluster-runs).
GONE = frozenset({"LAUNCH_FAILED", "SHUTDOWN", "TERMINATING"})


def _types_stand_in(asked: dict) -> dict:
    """The asked type in the asked zone, SOLD_OUT where the sold-out switch names it."""
    filters = {f["name"]: f["values"] for f in asked.get("filters", [])}
    rows = [{"instanceType": kind, "availabilityZone": zone, "status": "SOLD_OUT" if sold_out(zone, kind) else ON_SALE}
            for kind in filters.get("instance-type", []) for zone in filters.get("zone", [])]
    return {"id": "standin", "instanceTypes": rows}


def _instances_stand_in(asked: dict) -> dict:
    """A running instance per place the runs-on switch names."""
    return {"id": "standin", "instanceLists": [
        {"instanceId": f"ins-standin{index}", "availabilityZone": zone, "instanceType": kind, "status": "RUNNING"}
        for index, (zone, kind) in enumerate(runs_on())]}


# What the preview's mocks answer in place of the cloud (fleet/preview.py); 1250000000 is COS's documented example.
STAND_INS = {IMAGES: {"images": [{"imageId": "img-standin0"}]}, USER: {"appId": "1250000000"}, TYPES: _types_stand_in,
             INSTANCES: _instances_stand_in}


def _availability(candidate: Candidate) -> Availability:
    """Whether the type is on sale in the zone for the candidate's market (DescribeZoneInstanceConfigInfos' status;
    docs/cloud-facts.md#capacity-look-ups)."""
    found = tencentcloud.instance.get_types(filters=[
        {"name": "zone", "values": [candidate.zone]},
        {"name": "instance-type", "values": [candidate.instance_type]},
        {"name": "instance-charge-type", "values": ["POSTPAID_BY_HOUR" if candidate.on_demand else "SPOTPAID"]},
    ])
    if any(row.status == ON_SALE for row in found.instance_types):
        return Availability(candidate, True)
    return Availability(candidate, False, f"{candidate.instance_type} is sold out in {candidate.zone} "
                        "(zone instance configs: SOLD_OUT)")


def _image(wanted: Lookups) -> str:
    """The newest public image whose OS name holds "<os> server <version>" and that the type can boot; the provider
    lists images newest first (docs/cloud-facts.md#tencent-images)."""
    query = wanted.image
    found = tencentcloud.images.get_instance(image_types=["PUBLIC_IMAGE"], os_name=f"{query.os} server {query.version}",
                                             instance_type=wanted.instance_type)
    if not found.images:
        raise SpecError([Problem(f"{CLUSTER_KEY}.image", f"`auto` found no {query.os} {query.version} public image "
                                 f"for {wanted.instance_type} in this region.",
                                 "set image to an image id the type can boot.")])
    return found.images[0].image_id


def _places(cluster: str) -> set[tuple[str, str]]:
    """The zone and type of each of the cluster's instances that holds its place, by its tag (the head, HCC workers
    and those AS launched carry it)."""
    found = tencentcloud.instances.get_instance(tags={CLUSTER_TAG: cluster})
    return {(row.availability_zone, row.instance_type) for row in found.instance_lists if row.status not in GONE}


def look_up(wanted: Lookups) -> DeployFacts:
    capacity = tuple(_availability(candidate) for candidate in wanted.candidates)
    places = _places(wanted.cluster) if wanted.cluster and capacity else set()
    return DeployFacts(image_id=_image(wanted) if wanted.image else None,
                       account_id=tencentcloud.user.get_info().app_id if wanted.account_id else None,
                       capacity=running_on(capacity, places))
