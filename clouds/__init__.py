"""Registry of the clouds gpufleet targets: one module each, declaring facts and what the cloud cannot do."""

from __future__ import annotations

from clouds.alicloud import ALICLOUD
from clouds.aws import AWS
from clouds.local import LOCAL, LOCAL_MACHINES
from clouds.tencentcloud import TENCENTCLOUD
from plan.profile import CloudProfile

CLOUDS: dict[str, CloudProfile] = {c.name: c for c in (AWS, ALICLOUD, TENCENTCLOUD, LOCAL)}


def profile(cloud: str) -> CloudProfile:
    """The profile of a cloud the spec has already accepted."""
    return CLOUDS[cloud]


def booted_profile(cloud: str) -> CloudProfile:
    """The profile of the cloud's nodes as machines the boot harness boots (`fleet up --boot`): a cloud's nodes are
    machines already; the local cloud's, processes on this machine otherwise, become machines."""
    return LOCAL_MACHINES if cloud == LOCAL.name else CLOUDS[cloud]

