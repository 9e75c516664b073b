"""What `fleet image build` bakes: the stack's plan on its base image with one node, the head, whose user-data
installs the node's software as a node's gate would, records the matrix in the image and powers off
(`gpufleet-node bake`); then the image made from that stopped machine, named and tagged by the matrix's digest.

The bake is its own stack (its cluster is named `<cluster>-bake`, so its bucket and resources are its own); the
cloud's realizer declares it like any cluster, and the image comes from the head's id (components/<cloud>/image.py).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace

from components.bootstrap import render_user_data
from components.names import CLUSTER_NAME_MAX, cluster_name
from components.plan.facts import DeployFacts
from components.plan.model import ClusterPlan
from components.plan.planner import plan
from components.spec import ClusterSpec

# `gpufleet:bake`, the stack setting `fleet image build` drives: the machine boots and bakes, then the image is made.
PHASES = ("instance", "image")
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


def plan_bake(spec: ClusterSpec, stack: str, facts: DeployFacts | None = None, *, booted: bool = False) -> BakePlan:
    """The bake of this stack's matrix; `booted`: for the boot harness (`fleet image build --boot`)."""
    cluster = plan(bake_spec(spec, stack), stack, facts, booted=booted)
    head = replace(cluster.head, user_data=render_user_data(cluster.head.node, bake=True))
    matrix = head.node.image_matrix
    digest = matrix_digest(matrix)
    # AWS wants an AMI name unique in the account and region, Tencent 60 characters at most
    # (docs/cloud-facts.md#baked-images).
    name = f"{(spec.name or stack)[:38]}-{digest[:16]}"
    return BakePlan(cluster=replace(cluster, head=head), image_name=name, matrix=matrix, digest=digest,
                    tags=(*cluster.tags, (MATRIX_TAG, digest)))
