"""Boot-harness tests need root (namespaces, mounts, cgroups) and a few host tools, which scripts/setup installs. The
first run builds the node images (debootstrap, several minutes) into the cache (GF_BOOT_CACHE, default
/var/tmp/gpufleet-boot). Modules that boot machines use the `needs_root` fixture."""

from __future__ import annotations

import os
import shutil

import pytest

TOOLS = ("debootstrap", "dnsmasq", "unshare", "nsenter", "ip", "cc")


def _root_is_a_mount() -> bool:
    """Whether this process's / is a mount point, as the kernel sees it (a chroot's is a plain directory, which
    os.path.ismount cannot tell: its /.. is itself)."""
    with open("/proc/self/mountinfo") as mounts:
        return any(line.split()[4] == "/" for line in mounts)


@pytest.fixture(scope="session")
def needs_root() -> None:
    """Session-scoped so that it runs, and skips, before the modules' own fixtures boot anything."""
    missing = [tool for tool in TOOLS if not shutil.which(tool)]
    if os.geteuid() != 0 or missing:
        tools = f" and {', '.join(missing)} (scripts/setup installs them as root)" if missing else ""
        pytest.skip(f"needs root{tools}")
    if not _root_is_a_mount():
        pytest.skip("/ is not a mount point (a chroot): a machine's systemd runs after pivot_root, which the kernel "
                    "refuses under a chroot, so boots need a real machine or container root")
