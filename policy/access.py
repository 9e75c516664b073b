"""The nodes' permissions name their own bucket: no IAM, RAM or CAM document grants object-storage actions on a
wildcard bucket (`arn:aws:s3:::*/*`, `acs:oss:*:*:*`, a COS resource with `*` for the bucket) or on `*`.

The cluster's other wildcards (describe calls, the nodes' own instances behind a tag condition) are the plan's
choice, not anything a stack wrote; a bucket name is the one resource a stack puts into these documents. Each cloud's
reader says where its resources hold documents, how its storage resources name a bucket and what its storage actions
are called.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from policy.base import WILDCARDS, Inputs, Reader, Resource, known
from policy.readers import reader_for


def _lower_keys(value: Any) -> Any:
    """AWS and Alibaba write `Statement`, `Resource`; Tencent writes `statement`, `resource`."""
    return {str(key).lower(): item for key, item in value.items()} if isinstance(value, dict) else {}


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value] if value is not None else []


def _findings(reader: Reader, document: dict[str, Any]) -> Iterator[str]:
    for index, statement in enumerate(_listed(document.get("statement"))):
        statement = _lower_keys(statement)
        if str(statement.get("effect", "")).lower() != "allow":
            continue
        actions = [str(a).lower() for a in _listed(statement.get("action"))]
        name = statement.get("sid") or f"statement {index}"
        for resource in map(str, _listed(statement.get("resource"))):
            bucket = reader.bucket_of(resource)
            if bucket is not None and (not bucket or any(w in bucket for w in WILDCARDS)):
                yield f"{name} grants {', '.join(actions) or 'actions'} on {resource}, every bucket that matches."
            elif resource == "*" and any(a.startswith(reader.storage_actions) or a == "*" for a in actions):
                yield f"{name} grants {', '.join(actions)} on every resource, every bucket included."


def _documents(reader: Reader, kind: str, inputs: Inputs) -> Iterator[dict[str, Any] | None]:
    """Each permission document a resource holds, its keys lower-cased; None for one that is not JSON."""
    for raw in reader.policy_documents(kind, inputs):
        if not known(raw):
            continue
        try:
            yield _lower_keys(json.loads(raw) if isinstance(raw, str) else raw)
        except json.JSONDecodeError:
            yield None


def written_buckets(resources: list[Resource]) -> set[str]:
    """The buckets, each named (no wildcard), that the stack's permission documents let write objects into: where
    its nodes keep checkpoints, a bucket of the stack's own or one it uses as it finds it (`existingBucket`)."""
    found = set()
    for resource in resources:
        reader = reader_for(resource["type"])
        for document in _documents(reader, resource["type"], resource["inputs"]) if reader else ():
            for statement in map(_lower_keys, _listed((document or {}).get("statement"))):
                actions = [str(a).lower() for a in _listed(statement.get("action"))]
                if str(statement.get("effect", "")).lower() != "allow" or not any(
                        a.startswith(reader.storage_actions) and a.endswith(":putobject") for a in actions):
                    continue
                buckets = (reader.bucket_of(str(r)) for r in _listed(statement.get("resource")))
                found |= {b for b in buckets if b and not any(w in b for w in WILDCARDS)}
    return found


def bucket_wildcards(kind: str, inputs: Inputs) -> Iterator[str]:
    """Object-storage permissions on a wildcard bucket, or on `*`, in any cloud's policy documents."""
    reader = reader_for(kind)
    for document in _documents(reader, kind, inputs) if reader else ():
        if document is None:
            yield "the policy document is not JSON, so what it grants cannot be judged."
            continue
        for finding in _findings(reader, document):
            yield f"{finding} Name the cluster's own bucket (storage.checkpointBucket) instead."
