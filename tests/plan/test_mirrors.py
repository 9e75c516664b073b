"""plan/mirrors.py's advice: what a stack in a region that needs mirrors fetches from a host the region may not reach,
each note naming the setting that fixes it. Today both clouds serve pip and apt in every mainland region, so a
cloud without them is the profile of a shipped stack with its mirrors taken away."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clouds import CLOUDS
from fleet.stacks import resolve, spec_and_plan
from plan.mirrors import mirror_advice
from plan.node import Mirrors

NONE = Mirrors(pip="", apt="", cuda="", registry="")


def without_mirrors(stack: str):
    """The stack's plan as if its cloud had no mirror in its region, and that cloud's profile."""
    cluster = spec_and_plan(resolve(stack, None))[1]
    return replace(cluster, network=replace(cluster.network, mirrors=NONE)), CLOUDS[cluster.cloud]


@pytest.mark.parametrize("stack", ["ali-spot", "tencent-spot"])
def test_a_region_with_no_mirror_is_told_each_setting_and_what_it_fetches(stack):
    cluster, cloud = without_mirrors(stack)
    where = cluster.region
    notes = mirror_advice(cluster, cloud)
    assert [note.split(":")[0] for note in notes] == [
        f"monitoring needs network.registryMirror in {where}", f"monitoring needs network.nvcrMirror in {where}",
        f"boot needs network.pipMirror in {where}", f"boot needs network.aptMirror in {where}",
        f"boot needs network.cudaMirror in {where}"]
    registry, nvcr, pip, apt, cuda = notes
    assert registry.endswith("the monitor then fails in its own status, and training does not wait on it.")
    assert f"{cloud.title} has no Docker Hub mirror there" in registry
    assert "nvcr.io, which no cloud here mirrors; name a registry that serves nvcr.io's images" in nvcr
    assert nvcr.endswith("(the monitor otherwise fails in its own status; training does not wait on it).")
    assert pip == (f"boot needs network.pipMirror in {where}: torch and the job's packages come from pypi.org, "
                   "which the region may not reach.")
    assert apt == (f"boot needs network.aptMirror in {where}: the node's packages come from the image's own "
                   "sources, which the region may not reach.")
    assert cuda.endswith("fail their gate unless the region reaches developer.download.nvidia.com.")


def test_each_mirror_the_plan_has_silences_its_own_note_alone():
    cluster, cloud = without_mirrors("ali-spot")
    with_pip = replace(cluster, network=replace(cluster.network, mirrors=replace(NONE, pip="http://pip.example/simple")))
    assert [note for note in mirror_advice(with_pip, cloud) if "pipMirror" in note] == []
    assert len(mirror_advice(with_pip, cloud)) == len(mirror_advice(cluster, cloud)) - 1


@pytest.mark.parametrize("stack", ["aws-p5", "aws-g4dn-dev"])
def test_outside_a_region_that_needs_mirrors_nodes_fetch_from_upstream_and_no_note_is_given(stack):
    cluster = spec_and_plan(resolve(stack, None))[1]
    assert cluster.network.mirrors == NONE
    assert mirror_advice(cluster, CLOUDS[cluster.cloud]) == []
