"""The training code and the node's own files as one deterministic tar.gz: its hash names it in object storage and
in user-data, so a change to either changes every node's user-data and rolls the nodes.

User-data carries only what a node needs to reach its bucket (plan.bootstrap); `gpufleet-node install` takes
the node scripts, systemd units and monitoring files from here, which keeps user-data far below the 16 KB limit."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from plan.paths import PROJECT_ROOT

# Paths in the archive are the repository's, so the node finds training/, cloud-init/bin/, ... under one directory.
SOURCES = (
    "training/**/*.py",
    "cloud-init/bin/*",
    "cloud-init/clouds/*",
    "cloud-init/health_allreduce.py",
    "cloud-init/health/*.py",
    "cloud-init/systemd/*",
    "monitoring/*",
)
KERNELS = "training/kernels/"
"""The job's GPU kernels: in the bundle only when the job uses them, so a change to them rolls only those nodes."""


def source_files(kernels: bool = True) -> dict[str, bytes]:
    """Archive path -> content of every file SOURCES names (no folders; no caches: no pattern takes a .pyc), the
    kernels only if asked."""
    paths = {p for pattern in SOURCES for p in PROJECT_ROOT.glob(pattern) if p.is_file()}
    files = {str(p.relative_to(PROJECT_ROOT)): p.read_bytes() for p in sorted(paths)}
    return files if kernels else {name: data for name, data in files.items() if not name.startswith(KERNELS)}


def build(files: Mapping[str, bytes]) -> bytes:
    """Byte-for-byte the same for the same files: fixed order, modes, times, owners and gzip header. Modes are the
    installer's business (gpufleet-node install), so a checkout's permission bits never change the hash."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(files[name]), 0o644, 0
            tar.addfile(info, io.BytesIO(files[name]))
    return gzip.compress(raw.getvalue(), compresslevel=9, mtime=0)


@cache
def bundle_bytes(kernels: bool = True) -> bytes:
    return build(source_files(kernels))


def bundle_sha256(kernels: bool = True) -> str:
    return hashlib.sha256(bundle_bytes(kernels)).hexdigest()


def write_bundle(directory: Path, sha256: str) -> Path:
    """Write the bundle the plan names by ``sha256`` (with or without the kernels) as <sha>.tar.gz under a
    directory (the realizers' upload source, the local bucket)."""
    kernels = next((k for k in (True, False) if bundle_sha256(k) == sha256), None)
    if kernels is None:
        raise ValueError(f"no bundle of this checkout has sha256 {sha256}: the plan is from other sources")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{sha256}.tar.gz"
    if not path.exists():
        path.write_bytes(bundle_bytes(kernels))
    return path
