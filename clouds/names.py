"""Names a stack sets or implies, checked by the rules of the cloud that will hold them: the checkpoint bucket,
tags and the capacity reservation id (the cluster name's own rule, the same on every cloud: spec/names.py).

Each rule says every reason a name is refused and suggests one that passes, so a single edit fixes it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator

from plan.limits import OWN_TAG_COUNT, CloudLimits, TagRules, own_tag
from plan.profile import CloudProfile
from spec.cluster import ClusterSpec
from spec.errors import Problem
from spec.stackfile import CLUSTER_KEY


def _at(path: str) -> str:
    return f"{CLUSTER_KEY}.{path}"


def _bucket_reasons(bucket: str, lim: CloudLimits, region: str) -> list[str]:
    """Why the cloud refuses a bucket name (docs/cloud-facts.md#aws-names, #alibaba-names, #tencent-names)."""
    allowed = "a-z0-9.-" if lim.bucket_dots else "a-z0-9-"
    reasons = []
    if any(c.isupper() for c in bucket):
        reasons.append("it has uppercase letters")
    if bad := sorted({c for c in bucket if not c.isupper() and not re.match(f"[{allowed}]", c)}):
        reasons.append("it has " + ", ".join(repr(c) for c in bad))
    if lim.bucket_domain:
        if len(domain := lim.bucket_domain.format(bucket=bucket, region=region)) > lim.bucket_domain_max:
            reasons.append(f"{domain} is longer than the {lim.bucket_domain_max} characters the cloud allows")
    elif not 3 <= len(bucket) <= 63:
        reasons.append(f"it has {len(bucket)} characters, not 3 to 63")
    if bucket[:1] in ".-" or bucket[-1:] in ".-":
        reasons.append("it starts or ends with a dash or dot")
    if lim.bucket_dots:
        if ".." in bucket:
            reasons.append("it has two dots in a row")
        if _is_address(bucket):
            reasons.append("it is written like an IP address")
    reasons += [f"it starts with {p!r}, which the cloud reserves" for p in lim.bucket_reserved_prefixes
                if bucket.startswith(p)]
    reasons += [f"it ends with {s!r}, which the cloud reserves" for s in lim.bucket_reserved_suffixes
                if bucket.endswith(s)]
    return reasons


def _is_address(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def _bucket_suggestion(bucket: str, lim: CloudLimits) -> str:
    """A name that keeps the spirit of the one written and passes the cloud's rules: the bucket part of a URL
    (scheme://bucket/key) or resource name (...:bucket/key)."""
    name = bucket.split("://", 1)[-1].rsplit(":", 1)[-1].split("/", 1)[0].lower()
    name = re.sub(r"[^a-z0-9.-]+" if lim.bucket_dots else r"[^a-z0-9-]+", "-", name)
    name = re.sub(r"\.{2,}", ".", name).strip(".-")[:63].strip(".-")
    return name if len(name) >= 3 else "gpufleet-checkpoints"


def bucket(spec: ClusterSpec, cloud: CloudProfile) -> Iterator[Problem]:
    """A bucket the stack names is one name, by the cloud's rules; never a wildcard or a URL."""
    storage = spec.storage
    if storage.checkpoint_bucket is not None and storage.existing_bucket is not None:
        yield Problem(_at("storage.existingBucket"), "and checkpointBucket are both set: the first names a bucket the "
                      "stack uses as it finds it, the second one it creates.", "keep one of them.")
        return
    key = "checkpointBucket" if storage.checkpoint_bucket is not None else "existingBucket"
    written = storage.checkpoint_bucket or storage.existing_bucket
    if written is None:
        return
    path = _at(f"storage.{key}")
    if cloud.bucket_scheme == "file":
        yield Problem(path, "a local cluster keeps checkpoints in its own directory (/tmp/gpufleet-<identity>/bucket), "
                      "not in a bucket.", f"remove {key}.")
        return
    if "://" in written or written.startswith("arn:") or "/" in written:
        yield Problem(path, f"{written!r} is a URL, ARN or path; the field takes the bucket's name alone (checkpoints "
                      "go under checkpoints/ in it).",
                      f"write the name only, e.g. {_bucket_suggestion(written, cloud.limits)!r}.")
        return
    if reasons := _bucket_reasons(written, cloud.limits, spec.region):
        scheme = cloud.bucket_scheme.upper()
        yield Problem(path, f"{written!r} is not a valid {scheme} bucket name: {'; '.join(reasons)}.",
                      f"use a name such as {_bucket_suggestion(written, cloud.limits)!r}.")


def _own(key: str, lim: CloudLimits) -> bool:
    """gpufleet's own tags, and those it sets per resource on this cloud (AWS: Name)."""
    return own_tag(key) or key.lower() in lim.own_tag_keys


def _tag_reasons(key: str, value: str, rules: TagRules) -> list[str]:
    reasons = []
    if not key:
        reasons.append("the key is empty")
    elif len(key) > rules.key_max:
        reasons.append(f"the key has {len(key)} characters, more than {rules.key_max}")
    if len(value) > rules.value_max:
        reasons.append(f"the value has {len(value)} characters, more than {rules.value_max}")
    if rules.value_required and not value:
        reasons.append("the value is empty")
    if (key and not rules.key_chars.fullmatch(key)) or not rules.value_chars.fullmatch(value):
        reasons.append(f"it has characters the cloud refuses ({rules.chars_hint})")
    if key.strip() != key or value.strip() != value:
        reasons.append("it starts or ends with a space")
    if key in rules.key_not:
        reasons.append(f"{key!r} is not allowed as a key")
    reasons += [f"the key starts with {p!r}, which the cloud reserves" for p in rules.reserved_key_prefixes
                if key.lower().startswith(p)]
    reasons += [f"the value starts with {p!r}, which the cloud reserves" for p in rules.reserved_value_prefixes
                if value.lower().startswith(p)]
    reasons += [f"it contains {s!r}" for s in rules.forbidden_substrings if s in key.lower() or s in value.lower()]
    return reasons


def tags(spec: ClusterSpec, cloud: CloudProfile) -> Iterator[Problem]:
    """Tags the cloud takes, never one of gpufleet's own (discovery and the nodes' permissions rely on them)."""
    rules = cloud.limits.tags
    for key, value in spec.tags.items():
        path = _at(f"tags.{key}")
        if _own(key, cloud.limits):
            yield Problem(path, f"{key!r} is a tag gpufleet sets itself (gpufleet:*, managed-by, Name): the nodes' "
                          "permissions and discovery rely on its value.", "use another key, e.g. team or project.")
        elif rules and (reasons := _tag_reasons(key, value, rules)):
            yield Problem(path, f"{cloud.title} refuses this tag: {'; '.join(reasons)}.",
                          "shorten or rename it.")
    if rules and len(spec.tags) > rules.max_tags - OWN_TAG_COUNT:
        room = rules.max_tags - OWN_TAG_COUNT
        yield Problem(_at("tags"), f"{len(spec.tags)} tags, but a resource on {cloud.title} takes "
                      f"{rules.max_tags} and gpufleet sets {OWN_TAG_COUNT} of its own.", f"keep at most {room}.")


def reservation(spec: ClusterSpec, cloud: CloudProfile) -> Iterator[Problem]:
    """A capacity reservation id in the cloud's own format."""
    written = spec.market.reservation_id
    lim = cloud.limits
    if written is None or lim.reservation_id is None or lim.reservation_id.fullmatch(written):
        return
    yield Problem(_at("market.reservationId"), f"{written!r} is not a capacity reservation id of "
                  f"{cloud.title} (they look like {lim.reservation_example}).",
                  f"copy the id from the cloud's console or CLI ({lim.reservation_hint}).")
