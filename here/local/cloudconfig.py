"""A small cloud-init for local nodes: the part of #cloud-config a local-mode node needs, executed under a node root.

It writes `write_files` exactly as cloud-init would (encodings, permissions, append) but below the node's root, and
fills the local cloud's instance data (`{metadata}`: this node's fake metadata endpoint) the way cloud-init fills
templated user-data from its instance data. It runs nothing: the node's local-mode entry is started by the supervisor.
"""

from __future__ import annotations

import base64
import binascii
import gzip
from pathlib import Path

import yaml

from here.local.errors import LocalError
from plan.bootstrap import ENTRY

HEADER = "#cloud-config"
DECODERS = {
    "b64": (base64.b64decode,), "base64": (base64.b64decode,),
    "gz": (gzip.decompress,), "gzip": (gzip.decompress,),
    "gz+b64": (base64.b64decode, gzip.decompress), "gz+base64": (base64.b64decode, gzip.decompress),
    "gzip+b64": (base64.b64decode, gzip.decompress), "gzip+base64": (base64.b64decode, gzip.decompress),
    "text/plain": (),
}


def document(user_data: str | bytes) -> dict:
    """The parsed #cloud-config, whether it arrives as text or as the gzip+base64 a realizer hands a cloud."""
    raw = user_data.encode() if isinstance(user_data, str) else user_data
    if not raw.lstrip().startswith(HEADER.encode()):
        try:
            raw = gzip.decompress(base64.b64decode(raw, validate=True))
        except (binascii.Error, OSError, EOFError):
            raise LocalError("user-data is neither #cloud-config text nor gzip+base64 of it") from None
    text = raw.decode()
    if not text.startswith(HEADER):
        raise LocalError(f"user-data does not start with {HEADER}")
    return yaml.safe_load(text) or {}


def _content(entry: dict, instance: dict[str, str]) -> bytes:
    data: bytes | str = entry.get("content", "")
    for step in DECODERS.get(str(entry.get("encoding", "text/plain")).lower(), ()):
        data = step(data if isinstance(data, bytes) else data.encode())
    text = data.decode() if isinstance(data, bytes) else data
    for key, value in instance.items():
        text = text.replace("{" + key + "}", value)
    return text.encode()


def execute(user_data: str | bytes, root: Path, instance: dict[str, str]) -> Path:
    """Write the user-data's files under root; returns the local-mode entry (`<entry> start` boots the node)."""
    config = document(user_data)
    for entry in config.get("write_files", []):
        target = root / entry["path"].lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        content = _content(entry, instance)
        with open(target, "ab" if entry.get("append") else "wb") as handle:
            handle.write(content)
        target.chmod(int(str(entry.get("permissions", "0644")), 8))
    entry_script = root / ENTRY.lstrip("/")
    if not entry_script.is_file():
        raise LocalError(f"user-data has no {ENTRY}: it was not rendered for local mode")
    return entry_script
