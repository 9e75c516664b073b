"""Node rules: hardened instance metadata, encrypted disks, and user-data that fits and carries no secrets."""

from __future__ import annotations

import base64
import binascii
import gzip
import re
from collections.abc import Iterable

from policy.base import Inputs, known, truthy
from policy.readers import reader_for

GZIP_MAGIC = b"\x1f\x8b"  # cloud-init unpacks gzip user-data itself
SECRET_PATTERNS = (
    ("an AWS access key id", re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("an AWS secret access key", re.compile(r"(?i)aws_secret_access_key\s*[=:]\s*['\"]?[A-Za-z0-9/+]{40}")),
    ("a private key", re.compile(r"-----BEGIN ([A-Z]+ )?PRIVATE KEY-----")),
    ("a password", re.compile(r"(?i)(?<![a-z])(password|passwd|pwd)(?![a-z])\s*[=:]\s*['\"]?[^\s'\"$]{6,}")),
    # An opaque value: 20+ characters with a digit and no path separator (paths to secret files are fine).
    ("a token or API key", re.compile(
        r"(?i)(?<![a-z])(token|secret|api[_-]?key|access[_-]?key)(?![a-z])\s*[=:]\s*['\"]?(?=[\w+-]*\d)[\w+-]{20,}")),
    ("a GitHub or Slack token", re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{36}|xox[abprs]-[A-Za-z0-9-]{10,})\b")),
)


def hardened_metadata(kind: str, inputs: Inputs) -> Iterable[str]:
    """Metadata only with a session token (IMDSv2 on AWS, security-hardened mode on ECS), or switched off."""
    reader = reader_for(kind)
    return reader.metadata(kind, inputs) if reader else ()


def encrypted_volumes(kind: str, inputs: Inputs) -> Iterable[str]:
    """Every disk a node gets is encrypted at rest."""
    reader = reader_for(kind)
    for disk, encrypted in reader.disks(kind, inputs) if reader else ():
        if not truthy(encrypted) and encrypted != "[unknown]":
            yield f"{disk} is not encrypted."


def _as_text(value: str, is_base64: bool | None) -> tuple[str, int]:
    """The user-data as text and its size once base64-encoded; `None` means either form is accepted."""
    if is_base64 is not False:
        try:
            raw = base64.b64decode(value, validate=True)
            raw = gzip.decompress(raw) if raw[:2] == GZIP_MAGIC else raw
            return raw.decode("utf-8", errors="replace"), len(value)
        except (binascii.Error, ValueError, OSError, EOFError):
            if is_base64:
                return value, len(value)
    return value, len(base64.b64encode(value.encode()))


def user_data(kind: str, inputs: Inputs) -> Iterable[str]:
    """User-data fits the cloud's limit (CloudProfile.max_user_data_bytes) and holds nothing that looks like a
    credential (it is readable on the node and in the cloud console: secrets belong in the cloud's secret store)."""
    reader = reader_for(kind)
    for field, is_base64 in reader.user_data(kind) if reader else ():
        value = inputs.get(field)
        if not known(value) or not isinstance(value, str) or value == "[secret]":
            continue
        text, size = _as_text(value, is_base64)
        if reader.user_data_limit is not None and size > reader.user_data_limit:
            yield f"{field} is {size} bytes in base64, over the {reader.user_data_limit}-byte limit."
        for what, pattern in SECRET_PATTERNS:
            if pattern.search(text):
                yield f"{field} contains what looks like {what}; fetch it at boot from a secret store instead."
