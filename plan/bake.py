"""What `fleet image build` bakes: the stack's plan on its base image with one node, the head, whose user-data
installs the node's software as a node's gate would and records the matrix in the image (`gpufleet-node bake`), then,
once cloud-init is done, is sealed and powers off (`gpufleet-node seal`, cloud-init's power_state condition); then the
image made from that stopped machine, named and tagged by the matrix's digest.

The bake is its own stack (its cluster is named `<cluster>-bake`, so its bucket and resources are its own); the
cloud's realizer declares it like any cluster, and the image comes from the head's id (components/<cloud>/image.py).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace

from plan.bootstrap import render_user_data
from plan.facts import DeployFacts
from plan.model import ClusterPlan
from plan.planner import plan
from plan.profile import CloudProfile
from spec.cluster import ClusterSpec
from spec.names import CLUSTER_NAME_MAX, cluster_name

MATRIX_TAG = "gpufleet:image-matrix"
BAKE_SUFFIX = "-bake"


@dataclass(frozen=True)
class BakePlan:
    """The bake's one-node cluster, and the image's name and tags."""

    cluster: ClusterPlan
    image_name: str
    matrix: tuple[tuple[str, str], ...]
    digest: str  # sha256 of the matrix as image.json records it: the image's MATRIX_TAG
    tags: tuple[tuple[str, str], ...]


def matrix_digest(matrix: tuple[tuple[str, str], ...]) -> str:
    """The matrix's fingerprint: tag values are too short and too restricted to hold it whole on every cloud."""
    return hashlib.sha256(json.dumps(dict(matrix), sort_keys=True).encode()).hexdigest()


def bake_name(spec: ClusterSpec, stack: str) -> str:
    """The bake's cluster name: the cluster's, cut to leave room for `-bake` within a cluster name's length."""
    base = spec.name or cluster_name(stack)
    return f"{base[:CLUSTER_NAME_MAX - len(BAKE_SUFFIX)].rstrip('-')}{BAKE_SUFFIX}"


def bake_spec(spec: ClusterSpec, stack: str) -> ClusterSpec:
    """The stack on the image the bake starts from, one node, under a name of its own."""
    return spec.model_copy(update={"image": spec.image_base, "nodes": 1, "name": bake_name(spec, stack)})


def plan_bake(spec: ClusterSpec, stack: str, cloud: CloudProfile, facts: DeployFacts | None = None) -> BakePlan:
    """The bake of this stack's matrix on the cloud's profile (`clouds.plans.bake_for` looks it up; the booted one
    for the boot harness's `fleet image build --boot`)."""
    cluster = plan(bake_spec(spec, stack), stack, cloud, facts)
    head = replace(cluster.head, user_data=render_user_data(cluster.head.node, bake=True))
    matrix = head.node.image_matrix
    digest = matrix_digest(matrix)
    # AWS wants an AMI name unique in the account and region, Tencent 60 characters at most
    # (docs/cloud-facts.md#baked-images).
    name = f"{(spec.name or stack)[:38]}-{digest[:16]}"
    return BakePlan(cluster=replace(cluster, head=head), image_name=name, matrix=matrix, digest=digest,
                    tags=(*cluster.tags, (MATRIX_TAG, digest)))
