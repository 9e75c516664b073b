"""What only the Alibaba Cloud account can say, asked at deploy time: the newest system image for `image: auto`,
whether each candidate's type has stock in its zone (docs/cloud-facts.md#capacity-look-ups), and where the cluster's
instances run now (docs/cloud-facts.md#where-a-cluster-runs)."""

from __future__ import annotations

import pulumi_alicloud as alicloud

from components.realizers.stock import runs_on, sold_out
from plan.candidates import Availability, Candidate, running_on
from plan.facts import DeployFacts, Lookups
from plan.identity import CLUSTER_TAG
from spec.errors import Problem, SpecError
from spec.stackfile import CLUSTER_KEY

IMAGES = "alicloud:ecs/getImages:getImages"
TYPES = "alicloud:ecs/getInstanceTypes:getInstanceTypes"
INSTANCES = "alicloud:ecs/getInstances:getInstances"


def _types_stand_in(asked: dict) -> dict:
    """The asked type in the asked zone, unless the sold-out switch names it (the provider then drops it)."""
    zone, kind = asked.get("availabilityZone", ""), asked.get("instanceType", "")
    found = [] if sold_out(zone, kind) else [{"id": kind, "availabilityZones": [zone]}]
    return {"id": "standin", "ids": [t["id"] for t in found], "instanceTypes": found}


def _instances_stand_in(asked: dict) -> dict:
    """A running instance per place the runs-on switch names."""
    found = [{"id": f"i-standin{index}", "availabilityZone": zone, "instanceType": kind, "status": "Running"}
             for index, (zone, kind) in enumerate(runs_on())]
    return {"id": "standin", "ids": [i["id"] for i in found], "names": [], "instances": found, "totalCount": len(found)}


# What the preview's mocks answer in place of the cloud (fleet/preview.py).
STAND_INS = {IMAGES: {"images": [{"id": "ubuntu_22_04_x64_20G_alibase_standin.vhd"}]}, TYPES: _types_stand_in,
             INSTANCES: _instances_stand_in}


def _availability(candidate: Candidate) -> Availability:
    """Whether the type has stock in the zone for the candidate's market: the provider asks DescribeAvailableResource
    and drops a type or zone whose status is SoldOut (docs/cloud-facts.md#capacity-look-ups)."""
    try:
        found = alicloud.ecs.get_instance_types(availability_zone=candidate.zone, instance_type=candidate.instance_type,
                                                instance_charge_type="PostPaid",
                                                spot_strategy="NoSpot" if candidate.on_demand else "SpotAsPriceGo")
    # The runtime raises a plain Exception for a failed invoke; the provider fails on a sold-out zone.
    except Exception as error:
        return Availability(candidate, False, str(error))
    if any(row.id == candidate.instance_type for row in found.instance_types):
        return Availability(candidate, True)
    return Availability(candidate, False, f"{candidate.instance_type} is sold out in {candidate.zone} "
                        "(DescribeAvailableResource)")


def _image(wanted: Lookups) -> str:
    """The newest system image of the wanted OS that the instance type can boot (ecs.get_images, most_recent)."""
    query = wanted.image
    name = f"^{query.os}_{query.version.replace('.', '_')}_x64"
    found = alicloud.ecs.get_images(owners="system", name_regex=name, most_recent=True, os_type="linux",
                                    architecture="x86_64", instance_type=wanted.instance_type)
    if not found.images:
        raise SpecError([Problem(f"{CLUSTER_KEY}.image", f"`auto` found no {query.os} {query.version} system image "
                                 f"for {wanted.instance_type} in this region.",
                                 "set image to an image id the type can boot.")])
    return found.images[0].id


def _places(cluster: str) -> set[tuple[str, str]]:
    """The zone and type of each of the cluster's instances, by its tag (the head, eRDMA workers and those ESS
    launched carry it); the data source lists every status but released, each of which holds its place."""
    found = alicloud.ecs.get_instances(tags={CLUSTER_TAG: cluster})
    return {(instance.availability_zone, instance.instance_type) for instance in found.instances}


def look_up(wanted: Lookups) -> DeployFacts:
    capacity = tuple(_availability(candidate) for candidate in wanted.candidates)
    places = _places(wanted.cluster) if wanted.cluster and capacity else set()
    return DeployFacts(image_id=_image(wanted) if wanted.image else None, capacity=running_on(capacity, places))
