"""Node rules: hardened instance metadata, encrypted disks, and user-data that fits and carries no secrets."""

from __future__ import annotations

import base64
import binascii
import gzip
import re
from collections.abc import Iterable

from policy import types as t
from policy.base import Inputs, items, known, mapping, truthy

USER_DATA_LIMIT = 16384  # bytes of base64, the limit of EC2, ECS and CVM alike
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
# Fields holding user-data per type: (field, already base64?).
USER_DATA_FIELDS = {
    t.AWS_LAUNCH_TEMPLATE: (("userData", True),),
    t.AWS_INSTANCE: (("userData", False), ("userDataBase64", True)),
    t.ALI_INSTANCE: (("userData", None),),
    t.ALI_LAUNCH_TEMPLATE: (("userData", None),),
    t.ALI_SCALING_CONFIG: (("userData", None),),
    t.TC_INSTANCE: (("userData", True), ("userDataRaw", False)),
    t.TC_SCALING_CONFIG: (("userData", True),),
}


def hardened_metadata(kind: str, inputs: Inputs) -> Iterable[str]:
    """Metadata only with a session token (IMDSv2 on AWS, security-hardened mode on ECS), or switched off.

    ESS scaling configurations and Tencent CVM have no such setting in the installed SDKs; their nodes are judged
    through the launch template they use where there is one (docs/gitops.md lists the gap).
    """
    if kind == t.AWS_LAUNCH_TEMPLATE or (kind == t.AWS_INSTANCE and not inputs.get("launchTemplate")):
        options = mapping(inputs.get("metadataOptions"))
        if options.get("httpTokens") != "required" and options.get("httpEndpoint") != "disabled":
            yield "instance metadata must require IMDSv2 tokens (metadataOptions.httpTokens: required)."
    elif (kind in (t.ALI_INSTANCE, t.ALI_LAUNCH_TEMPLATE) and not inputs.get("launchTemplateId")
          and inputs.get("httpTokens") != "required" and inputs.get("httpEndpoint") != "disabled"):
        yield "instance metadata must run in security-hardened mode (httpTokens: required)."


def _aws_disks(kind: str, inputs: Inputs) -> Iterable[tuple[str, object]]:
    if kind == t.AWS_LAUNCH_TEMPLATE:
        for m in items(inputs.get("blockDeviceMappings")):
            if m.get("ebs") is not None or not m.get("virtualName"):
                yield m.get("deviceName", "a volume"), mapping(m.get("ebs")).get("encrypted")
    elif kind == t.AWS_INSTANCE and not inputs.get("launchTemplate"):
        yield "the root volume", mapping(inputs.get("rootBlockDevice")).get("encrypted")
        for disk in items(inputs.get("ebsBlockDevices")):
            yield disk.get("deviceName", "a volume"), disk.get("encrypted")
    elif kind == t.AWS_EBS_VOLUME:
        yield "the volume", inputs.get("encrypted")


def _ali_disks(kind: str, inputs: Inputs) -> Iterable[tuple[str, object]]:
    if kind in (t.ALI_INSTANCE, t.ALI_SCALING_CONFIG) and not inputs.get("launchTemplateId"):
        yield "the system disk", inputs.get("systemDiskEncrypted")
    if kind == t.ALI_LAUNCH_TEMPLATE:
        yield "the system disk", mapping(inputs.get("systemDisk")).get("encrypted")
    if kind in (t.ALI_INSTANCE, t.ALI_SCALING_CONFIG, t.ALI_LAUNCH_TEMPLATE):
        for disk in items(inputs.get("dataDisks")):
            yield disk.get("name") or disk.get("device") or "a data disk", disk.get("encrypted")


def _tc_disks(kind: str, inputs: Inputs) -> Iterable[tuple[str, object]]:
    if kind == t.TC_INSTANCE:
        for disk in items(inputs.get("dataDisks")):
            yield disk.get("dataDiskName") or "a data disk", disk.get("encrypt")


def encrypted_volumes(kind: str, inputs: Inputs) -> Iterable[str]:
    """Every disk a node gets is encrypted at rest (Tencent system disks have no switch in the SDK)."""
    for source in (_aws_disks, _ali_disks, _tc_disks):
        for disk, encrypted in source(kind, inputs):
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
    """User-data fits the 16 KB limit and holds nothing that looks like a credential (it is readable on the node
    and in the cloud console: secrets belong in the cloud's secret store)."""
    for field, is_base64 in USER_DATA_FIELDS.get(kind, ()):
        value = inputs.get(field)
        if not known(value) or not isinstance(value, str) or value == "[secret]":
            continue
        text, size = _as_text(value, is_base64)
        if size > USER_DATA_LIMIT:
            yield f"{field} is {size} bytes in base64, over the {USER_DATA_LIMIT}-byte limit."
        for what, pattern in SECRET_PATTERNS:
            if pattern.search(text):
                yield f"{field} contains what looks like {what}; fetch it at boot from a secret store instead."
