"""The training code as one deterministic tar.gz: its hash names it in object storage and in user-data,
so a code change changes every node's user-data and rolls the nodes."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("training",)


def _files() -> list[Path]:
    return sorted(p for source in SOURCES for p in (ROOT / source).rglob("*.py") if "__pycache__" not in p.parts)


@cache
def bundle_bytes() -> bytes:
    """Byte-for-byte the same for the same sources: fixed order, times, owners and gzip header."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in _files():
            data = path.read_bytes()
            info = tarfile.TarInfo(str(path.relative_to(ROOT)))
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), compresslevel=9, mtime=0)


def bundle_sha256() -> str:
    return hashlib.sha256(bundle_bytes()).hexdigest()


def write_bundle(directory: Path) -> Path:
    """Write the bundle as <sha>.tar.gz under a directory (the realizers' upload source, the local bucket)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{bundle_sha256()}.tar.gz"
    if not path.exists():
        path.write_bytes(bundle_bytes())
    return path
