"""The record of what `fleet up` made, written before each thing is made, so `fleet down` can remove all of it after
a crash, a Ctrl-C or a failure, and `fleet status` can find it from another terminal."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class State:
    cluster: str
    stack: str
    mode: str  # "namespaces" | "loopback"
    phase: str = "starting"  # starting | running | finished | failed | stopped
    started_unix: float = 0.0
    namespaces: list[str] = field(default_factory=list)
    processes: dict[str, int] = field(default_factory=dict)  # name -> pid (each leads its own process group)
    message: str = ""
    owner: int = 0  # pid of the `fleet up` that runs it: a run whose owner is gone crashed
    code_sha256: str = ""  # the bundle its nodes run
    settings: str = ""  # here.local.rollout.settings: what they are told but the bundle


def load(path: Path) -> State | None:
    try:
        return State(**json.loads(path.read_text()))
    except FileNotFoundError:
        return None


def save(path: Path, state: State) -> None:
    """Atomic: a reader sees the old record or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(state), indent=2) + "\n")
    os.replace(tmp, path)
