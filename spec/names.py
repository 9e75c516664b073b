"""The cluster name: what a stack's `name` must look like and the one a stack implies when it sets none. Every
cloud's rules for the names derived from it are in clouds/names.py."""

from __future__ import annotations

import hashlib
import re

# A cluster name becomes part of resource, role and bucket names on every cloud: lowercase, digits, dashes.
CLUSTER_NAME = re.compile(r"^[a-z][a-z0-9-]{0,29}[a-z0-9]$")
CLUSTER_NAME_MAX = 31
CLUSTER_NAME_RULE = ("2-31 lowercase letters, digits and dashes, starting with a letter and not ending in a dash "
                     "(it becomes part of resource, role and bucket names)")


def cluster_name(stack: str) -> str:
    """The cluster name a stack implies: the stack's own name where it already is one, else a lowercase spelling of it
    with a short hash of the original, so that `Prod_EU` and `prod-eu` never name the same resources."""
    if CLUSTER_NAME.fullmatch(stack):
        return stack
    digest = hashlib.sha256(stack.encode()).hexdigest()[:6]
    base = re.sub(r"[^a-z0-9]+", "-", stack.lower()).strip("-")
    base = base if base[:1].isalpha() else f"gf-{base}".rstrip("-")
    return f"{base[:CLUSTER_NAME_MAX - len(digest) - 1].rstrip('-')}-{digest}"


def checked_cluster_name(value: str) -> str:
    """A `name` the stack wrote, unchanged if it is a cluster name; else ValueError with a name that is."""
    if CLUSTER_NAME.fullmatch(value):
        return value
    raise ValueError(f"{value!r} is not a cluster name: use {CLUSTER_NAME_RULE}, e.g. {cluster_name(value)!r}")
