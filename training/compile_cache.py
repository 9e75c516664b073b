"""Where torch.compile keeps its compiled graphs for this job: a directory per version of the job's code.

Inductor's on-disk cache is keyed on the traced graph, and a custom operator's registered backward formula
(``training.kernels.fused_mlp``) is not part of that key (pytorch/pytorch#144344): after an upgrade, a node that kept
its cache would run the old backward, with wrong gradients or a crash. A directory named by a digest of the job's
sources gives each version its own cache (one fresh compile after an upgrade, ~25 s on an H200).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import MutableMapping
from pathlib import Path

SOURCES = Path(__file__).resolve().parent
VARIABLE = "TORCHINDUCTOR_CACHE_DIR"


def digest(sources: Path = SOURCES) -> str:
    """A short digest of every Python source under ``sources`` (the kernels' folder too), in path order."""
    hashed = hashlib.sha256()
    for path in sorted(p for p in sources.rglob("*.py") if "__pycache__" not in p.parts):
        hashed.update(str(path.relative_to(sources)).encode() + b"\0" + path.read_bytes() + b"\0")
    return hashed.hexdigest()[:16]


def isolate(environ: MutableMapping[str, str] = os.environ, sources: Path = SOURCES) -> str:
    """Point Inductor's cache at this code version's directory, unless the user chose a directory (then theirs is
    kept: clear it when upgrading). Returns the directory in use. Call it before ``torch._dynamo`` is first
    imported: that import sets the variable to PyTorch's default directory."""
    if VARIABLE not in environ:
        environ[VARIABLE] = str(Path(tempfile.gettempdir()) / "gpufleet-inductor" / digest(sources))
    return environ[VARIABLE]
