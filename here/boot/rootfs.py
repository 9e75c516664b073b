"""Node images for the boot harness: Debian 12 root filesystems built once with debootstrap, cached as tarballs and
unpacked once as the read-only lower layer every machine of that image boots from (here.boot.machine).

An image holds what the cloud image it stands in for holds, so a node script that calls a tool the real image lacks
fails here the way it would there. The base is what an Ubuntu 22.04 cloud image brings that the node relies on;
cloud-init comes from Debian 13 (25.1), the generation Ubuntu 22.04 ships as updates, because Debian 12's 22.4
predates Alibaba's hardened metadata mode (cloud-init 23.1) and would fail there for a reason no Ubuntu node has.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

CACHE = Path(os.environ.get("GF_BOOT_CACHE", "/var/tmp/gpufleet-boot"))
MIRROR = "http://deb.debian.org/debian"
SUITE = "bookworm"
CLOUD_INIT_SUITE = "trixie"
BUILD_SCRIPT = Path(__file__).with_name("build-rootfs.sh")

# Every package of the base image, and why a node needs it (all are on Ubuntu 22.04 cloud images).
BASE_PACKAGES = {
    "systemd": "PID 1: the gpufleet units, cloud-init's stages",
    "systemd-sysv": "/sbin/init",
    "dbus": "systemctl and hostnamectl talk to systemd through it",
    "python3": "cloud-init itself; the node scripts parse JSON with it",
    "curl": "gpufleet-lib.sh's meta() and every download",
    "ca-certificates": "TLS to the object store and package mirrors",
    "iproute2": "`ip` in gpufleet-fabric, -train and -monitor",
    "procps": "pgrep/pkill (gpufleet-spot, -node), sysctl (gpufleet-fabric)",
    "kmod": "modprobe (gpufleet-driver)",
    "sudo": "cloud-init's default user",
    "netbase": "/etc/services and /etc/protocols for socket lookups",
}


@dataclass(frozen=True)
class Image:
    """One stand-in cloud image: its name and the packages it has beyond the base, each with the reason."""

    name: str
    extra: tuple[tuple[str, str], ...] = ()

    @property
    def packages(self) -> tuple[str, ...]:
        return (*BASE_PACKAGES, *(name for name, _ in self.extra))

    @property
    def key(self) -> str:
        """Changes with anything that changes the build, so a stale cache is never used."""
        recipe = "\n".join((SUITE, CLOUD_INIT_SUITE, MIRROR, *self.packages, BUILD_SCRIPT.read_text()))
        return f"{self.name}-{hashlib.sha256(recipe.encode()).hexdigest()[:12]}"


# A plain Ubuntu 22.04 cloud image (Alibaba's and Tencent's public images; AWS with an explicit image id).
PLAIN = Image("plain")
# AWS's Deep Learning AMI (image: auto), with the parts of it a node calls besides the GPU stack, which the fake GPU
# stands in for (here.boot.gpu).
DLAMI = Image("dlami", (("awscli", "the DLAMI ships the AWS CLI (gpufleet-store, -report, -discover)"),
                        ("python3-venv", "the DLAMI's Python can make virtual environments (gpufleet-python)")))


def tarball(image: Image) -> Path:
    """The image's cached tarball, built first when missing (several minutes; one build at a time)."""
    path = CACHE / "images" / f"{image.key}.tar.gz"
    if path.exists():
        return path
    with _lock(path):
        if not path.exists():
            _build(image, path)
    return path


def tree(image: Image) -> Path:
    """The unpacked image: the lower layer of every machine booted from it. Never written to."""
    path = CACHE / "images" / image.key
    if (path / ".complete").exists():
        return path
    archive = tarball(image)
    with _lock(path):
        if not (path / ".complete").exists():
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir(parents=True)
            subprocess.run(["tar", "-xzf", str(archive), "-C", str(path), "--numeric-owner", "--xattrs"], check=True)
            (path / ".complete").touch()
    return path


def _build(image: Image, path: Path) -> None:
    work = path.with_suffix(".build")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    root = work / "root"
    log = path.with_suffix(".log")
    with open(log, "w") as out:
        result = subprocess.run(["unshare", "--mount", "--propagation", "private", str(BUILD_SCRIPT), str(root),
                                 MIRROR, SUITE, CLOUD_INIT_SUITE, *image.packages],
                                stdout=out, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise RuntimeError(f"building image {image.name} failed (exit {result.returncode}); see {log}")
    partial = path.with_suffix(".partial")
    subprocess.run(["tar", "-czf", str(partial), "-C", str(root), "--numeric-owner", "--xattrs", "."], check=True)
    partial.rename(path)
    shutil.rmtree(work)


@contextlib.contextmanager
def _lock(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f".{path.name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
