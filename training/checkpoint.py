"""Crash-safe checkpoints: atomic directories verified by a manifest of sha256 sums.

Layout: ``<dir>/step_00000040/{state.pt,manifest.json}``. A checkpoint is built
in a hidden temporary directory unique to its writer (each file fsynced,
manifest written last) and renamed into place, so a reader sees either nothing
or a complete checkpoint. Several writers may share one directory (one per
node on a shared filesystem): the first complete copy of a step wins and the
others are discarded.
Loading walks checkpoints newest first and skips any whose manifest is missing
or whose files do not match it (a spot node killed mid-write, a truncated
copy), with a warning.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import random
import re
import shutil
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import torch

MANIFEST = "manifest.json"
STATE = "state.pt"
_STEP_DIR = re.compile(r"^step_(\d{8,})$")
_TMP_DIR = re.compile(r"^\.tmp_step_(\d{8,})_")


def rng_state() -> dict:
    """Every RNG the job touches, captured so a resume continues the same random streams."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def checkpoint_dirs(root: Path) -> list[tuple[int, Path]]:
    """(step, path) of every finished checkpoint directory, newest first."""
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir() if (m := _STEP_DIR.match(p.name)) and p.is_dir()]
    return sorted(found, reverse=True)


def step_path(root: Path, step: int) -> Path:
    """Where the checkpoint of ``step`` lives under ``root`` (the same name on every node)."""
    return root / f"step_{step:08d}"


def step_of(path: Path) -> int:
    """The step of the checkpoint directory at ``path`` (inverse of step_path)."""
    return int(_STEP_DIR.match(path.name).group(1))


def _renamed(tmp: Path, final: Path) -> bool:
    """rename() that reports False where ``final`` is already a non-empty directory (it never merges the two)."""
    try:
        os.rename(tmp, final)
    except OSError as err:
        if err.errno not in (errno.EEXIST, errno.ENOTEMPTY):
            raise
        return False
    return True


def _publish(tmp: Path, final: Path) -> None:
    """Move ``tmp`` to ``final``; where another writer's complete copy is already there, keep it and drop ours.

    A damaged copy in the way (a truncated pull, a crash of an older run) is removed and the rename retried once.
    """
    for _ in range(2):
        if _renamed(tmp, final):
            return
        if verify(final) is None:
            shutil.rmtree(tmp, ignore_errors=True)
            return
        shutil.rmtree(final, ignore_errors=True)
    raise OSError(f"cannot publish checkpoint {final}: another writer keeps leaving a damaged copy there")


def _prune(root: Path, step: int, keep: int) -> None:
    """Keep the newest ``keep`` checkpoints; drop temporary directories of earlier steps (crashed writes).

    Temporaries of ``step`` itself are left alone: they may be another writer's save in progress (saves are
    collective, so no live writer is still on an earlier step).
    """
    for _, old in checkpoint_dirs(root)[keep:]:
        shutil.rmtree(old, ignore_errors=True)
    for stale in root.glob(".tmp_step_*"):
        match = _TMP_DIR.match(stale.name)
        if match is None or int(match.group(1)) < step:
            shutil.rmtree(stale, ignore_errors=True)


def save(root: Path, step: int, state: dict, keep: int) -> Path:
    """Write ``state`` as the checkpoint for ``step`` atomically, then prune to the newest ``keep``."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return save_bytes(root, step, buffer.getvalue(), keep)


def save_bytes(root: Path, step: int, data: bytes, keep: int) -> Path:
    """Like save() for a state already serialized: another node's state file, copied byte for byte, so every node's
    copy of a step is identical (copies that several nodes push to one bucket may then mix files and still verify)."""
    root.mkdir(parents=True, exist_ok=True)
    final = step_path(root, step)
    tmp = root / f".tmp_step_{step:08d}_{uuid.uuid4().hex}"
    tmp.mkdir()
    _write_synced(tmp / STATE, data)
    manifest = {
        "step": step,
        "created_unix": time.time(),
        "files": {STATE: {"sha256": _sha256(tmp / STATE), "bytes": (tmp / STATE).stat().st_size}},
    }
    _write_synced(tmp / MANIFEST, json.dumps(manifest, indent=2).encode())
    _fsync_dir(tmp)
    _publish(tmp, final)
    _fsync_dir(root)
    _prune(root, step, keep)
    return final


def verify(path: Path) -> str | None:
    """None if the checkpoint at ``path`` is complete and matches its manifest, else the reason it is not."""
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        return "manifest missing"
    try:
        manifest = json.loads(manifest_path.read_text())
        files = manifest["files"]
    except (ValueError, KeyError) as err:
        return f"manifest unreadable ({err})"
    for name, meta in files.items():
        file = path / name
        if not file.is_file():
            return f"{name} missing"
        if file.stat().st_size != meta["bytes"]:
            return f"{name} is {file.stat().st_size} bytes, manifest says {meta['bytes']} (truncated?)"
        if _sha256(file) != meta["sha256"]:
            return f"{name} checksum mismatch"
    return None


def latest_valid(root: Path) -> Path | None:
    """The newest checkpoint that matches its manifest; corrupt ones are skipped with a warning on stderr."""
    for _, path in checkpoint_dirs(root):
        problem = verify(path)
        if problem is None:
            return path
        print(f"warning: skipping checkpoint {path}: {problem}; falling back to an older one", file=sys.stderr)
    return None


def read(path: Path) -> dict:
    """The saved state of a verified checkpoint, on the CPU (our own files, hence full unpickling)."""
    return torch.load(path / STATE, map_location="cpu", weights_only=False)


def loads(data: bytes) -> dict:
    """A state file's bytes (received from another node) as the state, on the CPU, as read() gives it."""
    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=False)
