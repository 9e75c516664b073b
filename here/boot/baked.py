"""Baked node images of the boot harness (`fleet image build --stack NAME --boot`): the root filesystem of a machine
that booted the bake user-data and powered off, kept as an image whose id a stack names (`image: {baked: ID}`).

An image is the base image's tree with the bake machine's disk (its overlay upper layer, whiteouts included) laid
over it, less the files the harness itself put on that disk before the boot (its mirrors, resolver, CA, datasource,
fake GPU): a node booted from it gets those again, as every machine does. Kept under CACHE/images/baked/<id>: `tree`
(the lower layer of the machines booted from it) and `image.json` (what it was baked from; written last).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from here.boot import rootfs

BAKED = rootfs.CACHE / "images" / "baked"
RECORD = "image.json"
# Lays the bake's disk over its base read-only (a lower layer's whiteouts hide the base's files it deleted, its
# redirects name the base's directories it renamed: stage.sh mounts with redirect_dir=on) and copies the result; in a
# mount namespace of its own, so the mount never shows on the host.
MERGE = 'mount -t overlay overlay -o "ro,redirect_dir=follow,lowerdir=$1:$2" "$3" && cp -a "$3/." "$4/"'


def image_id(base: rootfs.Image, digest: str, user_data: str) -> str:
    """The id of one bake: `base` with the matrix of this digest (plan/bake.py) by this bake user-data
    (the node scripts and the code bundle it installs), so a changed bake never reuses an image baked before."""
    return f"boot-{base.key}-{hashlib.sha256((digest + user_data).encode()).hexdigest()[:12]}"


def tree(ref: str) -> Path | None:
    """The baked image's tree, or None where no image of that id was baked here."""
    path = BAKED / ref
    return path / "tree" if (path / RECORD).exists() else None


def keep(ref: str, disk: Path, base: Path, harness_paths: Iterable[str], record: Mapping) -> Path:
    """The bake machine's disk over its base, without the harness's files, as image `ref`; returns its tree."""
    for path in harness_paths:
        (disk / path.lstrip("/")).unlink(missing_ok=True)
    final = BAKED / ref
    partial = BAKED / f".{ref}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    (partial / "tree").mkdir(parents=True)
    (partial / "mnt").mkdir()
    subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", MERGE, "merge", str(disk),
                    str(base), str(partial / "mnt"), str(partial / "tree")], check=True)
    (partial / "mnt").rmdir()
    (partial / RECORD).write_text(json.dumps(dict(record), indent=2))
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
    return final / "tree"
