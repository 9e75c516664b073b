"""Nothing of a harness run outlives it, even when its process is killed before its `with` block can clean up.

Every process the harness starts (machines, services) gets SIGKILL when the harness process dies (Linux's
parent-death signal; a machine's PID 1 follows its unshare through `--kill-child`). What a process cannot take with
it, its network namespaces and cgroups, each run records in its directory under GF_BOOT_CACHE/runs with its owner;
the next run sweeps those of owners that are gone, so one killed run costs nothing to the next.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
from pathlib import Path

from here.local import network as local_network

PR_SET_PDEATHSIG = 1
OWNER = "owner.json"


def die_with_parent() -> None:
    """preexec_fn: SIGKILL this child when the process that started it ends."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _started(pid: int) -> str | None:
    """The process's start time (clock ticks since boot), which tells a live owner from a reused pid."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def remove_cgroup(cgroup: Path) -> None:
    """rmdir a cgroup and its children, deepest first (a cgroup with processes stays)."""
    if cgroup.exists():
        for child in sorted(cgroup.rglob("*/"), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                child.rmdir()
    with contextlib.suppress(OSError):
        cgroup.rmdir()


def record(directory: Path, namespaces: list[str], cgroups: list[Path], keep: bool) -> None:
    (directory / OWNER).write_text(json.dumps({"pid": os.getpid(), "started": _started(os.getpid()),
                                               "namespaces": namespaces, "cgroups": [str(c) for c in cgroups],
                                               "keep": keep}))


def sweep(runs: Path) -> list[str]:
    """Remove what runs whose owner is gone left behind; returns their directories' names."""
    swept = []
    for owner_file in sorted(runs.glob(f"*/{OWNER}")):
        try:
            owner = json.loads(owner_file.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if owner["started"] is not None and _started(owner["pid"]) == owner["started"]:
            continue
        for namespace in owner["namespaces"]:
            local_network.delete(namespace)
        for cgroup in map(Path, owner["cgroups"]):
            remove_cgroup(cgroup)
        if owner["keep"]:
            owner_file.unlink()
        else:
            shutil.rmtree(owner_file.parent, ignore_errors=True)
        swept.append(owner_file.parent.name)
    return swept
