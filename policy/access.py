"""The nodes' permissions name their own bucket: no IAM, RAM or CAM document grants object-storage actions on a
wildcard bucket (`arn:aws:s3:::*/*`, `acs:oss:*:*:*`, a COS resource with `*` for the bucket) or on `*`.

The cluster's other wildcards (describe calls, the nodes' own instances behind a tag condition) are the plan's
choice, not anything a stack wrote; a bucket name is the one resource a stack puts into these documents.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from policy import types as t
from policy.base import Inputs, items, known

# Where each provider's resource holds its policy document.
DOCUMENT_FIELDS = {t.AWS_ROLE_POLICY: "policy", t.AWS_POLICY: "policy", t.ALI_RAM_POLICY: "policyDocument",
                   t.TC_CAM_POLICY: "document"}
STORAGE_SERVICES = ("s3:", "oss:", "name/cos:", "cos:")
WILDCARDS = ("*", "?")


def _documents(kind: str, inputs: Inputs) -> list[Any]:
    if kind == t.AWS_ROLE:
        return [policy.get("policy") for policy in items(inputs.get("inlinePolicies"))]
    return [inputs.get(DOCUMENT_FIELDS[kind])] if kind in DOCUMENT_FIELDS else []


def _lower_keys(value: Any) -> Any:
    """AWS and Alibaba write `Statement`, `Resource`; Tencent writes `statement`, `resource`."""
    return {str(key).lower(): item for key, item in value.items()} if isinstance(value, dict) else {}


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value] if value is not None else []


def bucket_of(resource: str) -> str | None:
    """The bucket part of an object-storage resource name (S3, OSS or COS), or None for another service's."""
    if resource.startswith(("arn:aws:s3:::", "arn:aws-cn:s3:::", "arn:aws-us-gov:s3:::")):
        return resource.split(":::", 1)[1].split("/", 1)[0]
    parts = resource.split(":")
    if resource.startswith("acs:oss:") and len(parts) >= 5:
        return ":".join(parts[4:]).split("/", 1)[0]
    if resource.startswith("qcs::cos:") and len(parts) >= 6:
        account = parts[4]
        return "*" if any(w in account for w in WILDCARDS) else ":".join(parts[5:]).split("/", 1)[0]
    return None


def _findings(document: dict[str, Any]) -> Iterator[str]:
    for index, statement in enumerate(_listed(document.get("statement"))):
        statement = _lower_keys(statement)
        if str(statement.get("effect", "")).lower() != "allow":
            continue
        actions = [str(a).lower() for a in _listed(statement.get("action"))]
        name = statement.get("sid") or f"statement {index}"
        for resource in map(str, _listed(statement.get("resource"))):
            bucket = bucket_of(resource)
            if bucket is not None and (not bucket or any(w in bucket for w in WILDCARDS)):
                yield f"{name} grants {', '.join(actions) or 'actions'} on {resource}, every bucket that matches."
            elif resource == "*" and any(a.startswith(STORAGE_SERVICES) or a == "*" for a in actions):
                yield f"{name} grants {', '.join(actions)} on every resource, every bucket included."


def bucket_wildcards(kind: str, inputs: Inputs) -> Iterator[str]:
    """Object-storage permissions on a wildcard bucket, or on `*`, in any of the three clouds' policy documents."""
    for raw in _documents(kind, inputs):
        if not known(raw):
            continue
        try:
            document = _lower_keys(json.loads(raw) if isinstance(raw, str) else raw)
        except json.JSONDecodeError:
            yield "the policy document is not JSON, so what it grants cannot be judged."
            continue
        for finding in _findings(document):
            yield f"{finding} Name the cluster's own bucket (storage.checkpointBucket) instead."
