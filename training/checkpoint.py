"""Crash-safe checkpoints: atomic directories verified by a manifest of sha256 sums, written off the training path.

Layout: ``<dir>/step_00000040/{state.pt,manifest.json}``. A checkpoint is built
in a hidden temporary directory unique to its writer (each file fsynced,
manifest written last) and renamed into place, so a reader sees either nothing
or a complete checkpoint. Several writers may share one directory (one per
node on a shared filesystem): the first complete copy of a step wins and the
others are discarded.
A resume (``training.resume``) walks checkpoints newest first and skips any whose
manifest is missing or whose files do not match it (a spot node killed mid-write,
a truncated copy), with a warning.

A checkpoint holds only tensors and plain Python values, and is read with ``torch.load(weights_only=True)``: a file
that someone else wrote into the bucket can carry wrong weights, but never code that the job would run. And each
node records the digest of every checkpoint it wrote from its own state in a ledger beside the checkpoint directory
(never synced with the bucket); a resume trusts a checkpoint only where the nodes' ledgers vouch for its digest
(``training.resume``), so one node, or anyone else who can write to the bucket, cannot make the others resume from
weights of its making (README, "Checkpoints and trust").

Saving is split so that a stop fits torchrun's 30 s window between SIGTERM and SIGKILL and a periodic save barely
pauses training: ``snapshot`` copies the state to host memory (the only part the loop waits for), and ``Writer``
serialises, hashes and publishes it on a background thread.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import pickle
import random
import re
import shutil
import sys
import threading
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
    """Every RNG the job touches, captured so a resume continues the same random streams (numpy's key as a tensor,
    so the state loads with weights_only)."""
    kind, key, pos, has_gauss, gauss = np.random.get_state()
    state = {
        "python": random.getstate(),
        "numpy": (kind, torch.from_numpy(key.astype(np.int64)), pos, has_gauss, gauss),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    kind, key, pos, has_gauss, gauss = state["numpy"]
    key = key.numpy() if isinstance(key, torch.Tensor) else key
    np.random.set_state((kind, np.asarray(key, dtype=np.uint32), pos, has_gauss, gauss))
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


class _HashingFile:
    """A file being written that hashes what passes through it, so the manifest needs no second read."""

    def __init__(self, handle) -> None:
        self.handle = handle
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data) -> int:
        self.digest.update(data)
        self.size += len(data)
        return self.handle.write(data)

    def flush(self) -> None:
        self.handle.flush()


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


def _digest_of(path: Path) -> str | None:
    """The state file's digest that the manifest at ``path`` gives, if it is readable."""
    try:
        return json.loads((path / MANIFEST).read_text())["files"][STATE]["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _publish(tmp: Path, final: Path, digest: str) -> None:
    """Move ``tmp`` to ``final``; where another writer's complete copy of the same bytes is already there (nodes
    sharing a directory), keep it and drop ours.

    A damaged copy in the way (a truncated pull, a crash of an older run), or one of other bytes (not this job's
    state), is removed and the rename retried once.
    """
    for _ in range(2):
        if _renamed(tmp, final):
            return
        if _digest_of(final) == digest and verify(final) is None:
            shutil.rmtree(tmp, ignore_errors=True)
            return
        shutil.rmtree(final, ignore_errors=True)
    raise OSError(f"cannot publish checkpoint {final}: another writer keeps leaving another copy there")


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


def _new_tmp(root: Path, step: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".tmp_step_{step:08d}_{uuid.uuid4().hex}"
    tmp.mkdir()
    return tmp


def _finish(root: Path, step: int, tmp: Path, digest: str, size: int, keep: int) -> Path:
    """Write the manifest last, then publish the directory and prune."""
    manifest = {"step": step, "created_unix": time.time(), "files": {STATE: {"sha256": digest, "bytes": size}}}
    _write_synced(tmp / MANIFEST, json.dumps(manifest, indent=2).encode())
    _fsync_dir(tmp)
    final = step_path(root, step)
    _publish(tmp, final, digest)
    _fsync_dir(root)
    _prune(root, step, keep)
    return final


def save(root: Path, step: int, state: dict, keep: int) -> Path:
    """Write ``state`` (on the host) as the checkpoint for ``step`` atomically, prune to the newest ``keep``, and
    record its digest in this node's ledger: this node computed it from its own state."""
    tmp = _new_tmp(root, step)
    with open(tmp / STATE, "wb") as handle:
        writer = _HashingFile(handle)
        torch.save(state, writer)
        handle.flush()
        os.fsync(handle.fileno())
    final = _finish(root, step, tmp, writer.digest.hexdigest(), writer.size, keep)
    attest(root, step, writer.digest.hexdigest())
    return final


def ledger_path(root: Path) -> Path:
    """This node's ledger for the checkpoints under ``root``: beside that directory, not in it, so that nothing the
    node pulls from the bucket reaches it."""
    return root.with_name(f"{root.name}.digests.jsonl")


def attest(root: Path, step: int, digest: str) -> None:
    with open(ledger_path(root), "a") as handle:
        handle.write(json.dumps({"step": step, "sha256": digest}) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def attested(root: Path) -> dict[int, str]:
    """step -> digest of every checkpoint this node wrote from its own state (the last record of a step wins)."""
    records = {}
    path = ledger_path(root)
    for line in path.read_text().splitlines() if path.is_file() else []:
        try:
            record = json.loads(line)
            records[int(record["step"])] = str(record["sha256"])
        except (ValueError, KeyError, TypeError):
            continue  # a line cut short by a crash
    return records


def offered(root: Path) -> dict[int, str]:
    """step -> the digest its manifest gives, for every finished checkpoint directory with a readable manifest
    (its files are not read: ``verify`` does that for the one chosen); the others with a warning on stderr."""
    found = {}
    for step, path in checkpoint_dirs(root):
        digest = _digest_of(path)
        if digest is None:
            why = "manifest missing" if not (path / MANIFEST).exists() else "manifest unreadable"
            print(f"warning: skipping checkpoint {path}: {why}", file=sys.stderr)
        else:
            found[step] = digest
    return found


def save_bytes(root: Path, step: int, data: bytes, keep: int) -> Path:
    """Like save() for a state already serialized: another node's state file, copied byte for byte, so every node's
    copy of a step is identical (copies that several nodes push to one bucket may then mix files and still verify)."""
    tmp = _new_tmp(root, step)
    _write_synced(tmp / STATE, data)
    return _finish(root, step, tmp, hashlib.sha256(data).hexdigest(), len(data), keep)


def snapshot(state):
    """``state`` with every tensor copied to host memory (tensors that share storage, as tied weights do, stay
    shared), so training may go on changing the originals while it is written."""
    copies: dict[tuple, torch.Tensor] = {}

    def copy(value):
        if isinstance(value, torch.Tensor):
            key = (value.untyped_storage().data_ptr(), value.storage_offset(), value.shape, value.stride(),
                   value.dtype)
            if key not in copies:
                copies[key] = value.detach().to("cpu", copy=True)
            return copies[key]
        if isinstance(value, dict):
            return {name: copy(item) for name, item in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(copy(item) for item in value)
        return value

    return copy(state)


class Writer:
    """Writes one checkpoint at a time on a background thread; ``wait`` joins it and raises what it raised."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self.seconds = 0.0
        """Time spent writing, summed over every write."""

    @property
    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def submit(self, root: Path, step: int, state: dict, keep: int) -> None:
        self.wait()

        def write() -> None:
            began = time.perf_counter()
            try:
                save(root, step, state, keep)
            except BaseException as err:  # re-raised on the training thread by wait()
                self._error = err
            self.seconds += time.perf_counter() - began

        self._thread = threading.Thread(target=write, name=f"checkpoint-{step}", daemon=True)
        self._thread.start()

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error


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


_OLD_NUMPY_RNG = (np._core.multiarray._reconstruct, np.ndarray, np.dtype, np.dtypes.UInt32DType)
"""What checkpoints written before the job stored numpy's RNG key as a tensor hold besides tensors and plain values:
numpy's array reconstruction for that key, allowed for weights_only loading as PyTorch's documentation shows."""


class UnsafeCheckpoint(ValueError):
    """A state file that holds more than tensors and plain values: refused, never unpickled."""


def loads(data: bytes | Path) -> dict:
    """A state file (its bytes, or its path) as the state, on the CPU, unpickling only tensors and plain values."""
    source = io.BytesIO(data) if isinstance(data, bytes) else data
    try:
        with torch.serialization.safe_globals(list(_OLD_NUMPY_RNG)):
            return torch.load(source, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        why = next((line for line in str(err).splitlines() if "WeightsUnpickler error: " in line), "")
        found = why.split("WeightsUnpickler error: ", 1)[-1].split(" was not", 1)[0].strip()
        raise UnsafeCheckpoint(f"it holds more than tensors and plain values ({found or 'unreadable'})") from None


def read(path: Path) -> dict:
    """The saved state of a verified checkpoint, on the CPU (see loads)."""
    return loads(path / STATE)
