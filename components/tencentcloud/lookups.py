"""What only the Tencent Cloud account can say, asked at deploy time: the newest public image for `image: auto` and
the account's APPID, which the default COS bucket's name ends in."""

from __future__ import annotations

import tencentcloud_iac_pulumi as tencentcloud

from plan.facts import DeployFacts, Lookups
from spec.errors import Problem, SpecError
from spec.stackfile import CLUSTER_KEY

IMAGES = "tencentcloud:Images/getInstance:getInstance"
USER = "tencentcloud:User/getInfo:getInfo"
# What the preview's mocks answer in place of the cloud (fleet/preview.py); 1250000000 is COS's documented example.
STAND_INS = {IMAGES: {"images": [{"imageId": "img-standin0"}]}, USER: {"appId": "1250000000"}}


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


def look_up(wanted: Lookups) -> DeployFacts:
    return DeployFacts(image_id=_image(wanted) if wanted.image else None,
                       account_id=tencentcloud.user.get_info().app_id if wanted.account_id else None)
