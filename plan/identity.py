"""The cluster's identity: what its tags, its nodes' permissions and its default bucket are scoped by.

A stack's `name` is the user's choice and two stacks may choose the same one; the Pulumi project, the stack and the
region are unique together (Pulumi keeps one state per project and stack), so the identity is the name followed by
a short hash of those three. Two stacks with the same name then share no tag scope, role or bucket.
"""

from __future__ import annotations

import hashlib
from functools import cache

import yaml

from plan.paths import PROJECT_ROOT

DIGEST_CHARS = 8
# The tag every resource of a cluster carries, valued with its identity: what its instances are found by.
CLUSTER_TAG = "gpufleet:cluster"


@cache
def project_name() -> str:
    """This project's Pulumi name (Pulumi.yaml `name:`), as `pulumi.get_project()` gives it to the program."""
    return str(yaml.safe_load((PROJECT_ROOT / "Pulumi.yaml").read_text())["name"])


def identity_digest(project: str, stack: str, region: str) -> str:
    """A short hash of where the cluster's state lives: the same for every run of one stack, different for any
    other project, stack or region."""
    return hashlib.sha256(f"{project}\0{stack}\0{region}".encode()).hexdigest()[:DIGEST_CHARS]


def cluster_identity(name: str, project: str, stack: str, region: str) -> str:
    """`<name>-<digest>`: readable in a console, unique per project, stack and region."""
    return f"{name}-{identity_digest(project, stack, region)}"


def metric_namespace(identity: str) -> str:
    """The cluster's own metric namespace (`gpufleet/<identity>`): its nodes may publish only there, so no cluster's
    nodes can write the series another cluster's workers scale on (docs/cloud-facts.md#aws-gpu-metric)."""
    return f"gpufleet/{identity}"
