"""What only the Alibaba Cloud account can say, asked at deploy time: the newest system image for `image: auto`."""

from __future__ import annotations

import pulumi_alicloud as alicloud

from plan.facts import DeployFacts, Lookups
from spec.errors import Problem, SpecError
from spec.stackfile import CLUSTER_KEY

IMAGES = "alicloud:ecs/getImages:getImages"
# What the preview's mocks answer in place of the cloud (fleet/preview.py).
STAND_INS = {IMAGES: {"images": [{"id": "ubuntu_22_04_x64_20G_alibase_standin.vhd"}]}}


def look_up(wanted: Lookups) -> DeployFacts:
    """The newest system image of the wanted OS that the instance type can boot (ecs.get_images, most_recent)."""
    query = wanted.image
    name = f"^{query.os}_{query.version.replace('.', '_')}_x64"
    found = alicloud.ecs.get_images(owners="system", name_regex=name, most_recent=True, os_type="linux",
                                    architecture="x86_64", instance_type=wanted.instance_type)
    if not found.images:
        raise SpecError([Problem(f"{CLUSTER_KEY}.image", f"`auto` found no {query.os} {query.version} system image "
                                 f"for {wanted.instance_type} in this region.",
                                 "set image to an image id the type can boot.")])
    return DeployFacts(image_id=found.images[0].id)
