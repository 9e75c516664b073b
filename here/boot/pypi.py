"""A PyPI mirror on the bridge: the job's pinned packages (the user-data's GF_PIP_PACKAGES), downloaded once with
this host's pip into a wheelhouse and served as a simple index (here.boot.mirrors: under the plan's pip mirror URL, and
at /simple/ for the node's /etc/pip.conf, the stand-in for pypi.org). PyPI's torch==2.13.0 is the CUDA 13 build
(several GB with its nvidia-* wheels); the mirror serves the same version's CPU build this host's pip resolves, so a
node's `pip install` runs for real in seconds."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

from here.boot.rootfs import CACHE


def _project(filename: str) -> str:
    return re.sub(r"[-_.]+", "-", filename.split("-")[0]).lower()


def wheelhouse(packages: tuple[str, ...]) -> Path:
    """CACHE/pypi/<hash>/simple/<project>/<wheel>: a PEP 503 index of `packages` and their dependencies."""
    root = CACHE / "pypi" / hashlib.sha256("\n".join(sorted(packages)).encode()).hexdigest()[:12]
    index = root / "simple"
    if index.is_dir():
        return index
    files = root / "files"
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "pip-download.log", "w") as log:
        subprocess.run([sys.executable, "-m", "pip", "download", "--only-binary", ":all:", "--dest", str(files),
                        *packages], check=True, stdout=log, stderr=subprocess.STDOUT)
    partial = root / "simple.partial"
    shutil.rmtree(partial, ignore_errors=True)
    for wheel in sorted(files.iterdir()):
        project = partial / _project(wheel.name)
        project.mkdir(parents=True, exist_ok=True)
        (project / wheel.name).symlink_to(wheel)
    partial.rename(index)
    return index


def pip_conf(address: str) -> bytes:
    return (f"# gpufleet boot harness (here/boot/pypi.py): the job's packages from the mirror on the bridge\n"
            f"[global]\nindex-url = http://{address}/simple/\ntrusted-host = {address}\n").encode()

