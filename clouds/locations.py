"""The region and zone a stack names, checked against the catalog's regions and each cloud's zone naming."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from clouds import profile
from plan import catalog
from plan.profile import CloudProfile
from spec.cluster import ClusterSpec
from spec.errors import Problem
from spec.stackfile import CLUSTER_KEY


def _zone_fix(cloud: str, region: str) -> str:
    """Which zones to use: those the catalog lists for the region, else where to find them."""
    zones = catalog.regions(cloud).get(region, ())
    if zones:
        return f"use a zone of {region}: {', '.join(zones)}"
    return f"use one of {region}'s zones (the {profile(cloud).title} console lists them)"


def region_of(cloud: str, zone: str) -> str | None:
    """The catalog region whose zones are named like this zone, if any."""
    return next((region for region in catalog.regions(cloud) if catalog.zone_in_region(cloud, region, zone)), None)


def region_and_zone(spec: ClusterSpec, cloud: CloudProfile) -> Iterator[Problem]:
    """The region is one the catalog lists for the cloud and the zone is one of that region's."""
    if cloud.region_key is None:
        if spec.zone != "local":
            yield Problem(f"{CLUSTER_KEY}.zone", f"{spec.zone!r} names a zone, but a local cluster runs on this "
                          "machine and has none.", "remove zone.")
        return
    known = catalog.regions(spec.cloud)
    if not spec.region:
        yield Problem(cloud.region_key, "is not set.", f"add `{cloud.region_key}: <region>` under config.")
        return
    if spec.region not in known:
        close = difflib.get_close_matches(spec.region.strip().lower(), list(known), n=3, cutoff=0.6)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        yield Problem(cloud.region_key, f"{spec.region!r} is not a region of {cloud.title}.{hint}",
                      f"use one of: {', '.join(known)} (or add it to plan/catalog/{spec.cloud}.yaml).")
        return
    if catalog.zone_in_region(spec.cloud, spec.region, spec.zone):
        return
    fix = _zone_fix(spec.cloud, spec.region)
    path = f"{CLUSTER_KEY}.zone"
    if spec.zone in known:
        yield Problem(path, f"{spec.zone!r} is a region, not a zone.", f"{fix}.")
    elif other := region_of(spec.cloud, spec.zone):
        yield Problem(path, f"{spec.zone!r} is not a zone of region {spec.region!r} but of {other}.",
                      f"{fix}; or set {cloud.region_key}: {other}.")
    elif catalog.zone_in_region(spec.cloud, spec.region, spec.zone.strip().lower()):
        yield Problem(path, f"{spec.zone!r} is not a zone of region {spec.region!r}: zone names are lowercase.",
                      f"write {spec.zone.strip().lower()}.")
    else:
        yield Problem(path, f"{spec.zone!r} is not a zone of region {spec.region!r}.", f"{fix}.")
