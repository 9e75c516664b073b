"""User-data as clouds take it: gzip (cloud-init unpacks it) then base64, byte-for-byte stable (mtime=0)."""

from __future__ import annotations

import base64
import gzip


def gzip_base64(text: str) -> str:
    """Keeps a rendered cloud-config under the 16 KB (base64) that EC2, ECS and CVM accept."""
    return base64.b64encode(gzip.compress(text.encode(), mtime=0)).decode()
