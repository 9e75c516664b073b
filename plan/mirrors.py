"""Where nodes fetch what they install at boot: per thing, the stack's own mirror (network.pipMirror, aptMirror,
cudaMirror, registryMirror), else the cloud's in-VPC mirror in the stack's region (CloudProfile.mirrors), else the
upstream host. nvcr.io has no cloud mirror (docs/cloud-facts.md#package-mirrors): the stack's network.nvcrMirror
re-homes the DCGM exporter's image, and a region that needs it is told so (`fleet plan`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from plan.node import Mirrors
from plan.profile import CloudProfile
from spec.cluster import Network

if TYPE_CHECKING:
    from plan.model import ClusterPlan

NVCR = "nvcr.io/"


def plan_mirrors(network: Network, cloud: CloudProfile, region: str) -> Mirrors:
    """Each mirror the stack names wins over the cloud's for that thing alone."""
    own = cloud.mirrors(region)
    return Mirrors(pip=network.pip_mirror or own.pip, apt=network.apt_mirror or own.apt,
                   cuda=network.cuda_mirror or own.cuda, registry=network.registry_mirror or own.registry)


def rehomed(image: str, nvcr_mirror: str | None) -> str:
    """An nvcr.io image as the stack's registry that mirrors nvcr.io serves it (the same repository and tag); the
    spec refuses a mirror ending in '/' (spec/cluster.py _REGISTRY_PREFIX)."""
    if not nvcr_mirror or not image.startswith(NVCR):
        return image
    return f"{nvcr_mirror}/{image.removeprefix(NVCR)}"


def mirror_advice(cluster: ClusterPlan, cloud: CloudProfile) -> list[str]:
    """What a stack in a region that needs mirrors (CloudProfile.needs_mirrors) fetches from a host the region may
    not reach, each with the setting that names a mirror: `fleet plan` and `pulumi up` warn with these."""
    if not cloud.needs_mirrors(cluster.region):
        return []
    where, mirrors, notes = cluster.region, cluster.network.mirrors, []
    if not mirrors.registry:
        notes.append(
            f"monitoring needs network.registryMirror in {where}: {cloud.title} has no Docker Hub mirror there for "
            f"every account; {cloud.hub_mirror_advice(where)}. Without one, Prometheus and Grafana may not pull: "
            "the monitor then fails in its own status, and training does not wait on it.")
    if cluster.head.node.dcgm_exporter_image.startswith(NVCR):
        notes.append(
            f"monitoring needs network.nvcrMirror in {where}: the DCGM exporter's image comes from nvcr.io, which no "
            "cloud here mirrors; name a registry that serves nvcr.io's images under their own names (the monitor "
            "otherwise fails in its own status; training does not wait on it).")
    for setting, value, what in (("pipMirror", mirrors.pip, "torch and the job's packages come from pypi.org"),
                                 ("aptMirror", mirrors.apt, "the node's packages come from the image's own sources")):
        if not value:
            notes.append(f"boot needs network.{setting} in {where}: {what}, which the region may not reach.")
    if not mirrors.cuda and cluster.software.mode == "install":
        notes.append(
            f"boot needs network.cudaMirror in {where}: a plain image installs NVIDIA's driver from NVIDIA's CUDA "
            f"repository, which {cloud.title} documents no mirror of inside its network; without a mirror the nodes "
            "fail their gate unless the region reaches developer.download.nvidia.com.")
    return notes
