"""Whether this machine can boot harness machines: root (namespaces, mounts, cgroups), the host tools scripts/setup
installs, and a root that is a mount point (a machine's systemd starts after pivot_root, which the kernel refuses
under a chroot such as a fresh-machine check's)."""

from __future__ import annotations

import os
import shutil

TOOLS = ("debootstrap", "dnsmasq", "unshare", "nsenter", "ip", "cc")


def root_is_a_mount() -> bool:
    """Whether this process's / is a mount point, as the kernel sees it (a chroot's is a plain directory, which
    os.path.ismount cannot tell: its /.. is itself)."""
    with open("/proc/self/mountinfo") as mounts:
        return any(line.split()[4] == "/" for line in mounts)


def why_not_here() -> str | None:
    """None where machines can boot here, else why not and the fix."""
    missing = [tool for tool in TOOLS if not shutil.which(tool)]
    if os.geteuid() != 0 or missing:
        tools = f" and {', '.join(missing)} (scripts/setup installs them as root)" if missing else ""
        return f"needs root{tools}"
    if not root_is_a_mount():
        return ("/ is not a mount point (a chroot): a machine's systemd runs after pivot_root, which the kernel "
                "refuses under a chroot, so boots need a real machine or container root")
    return None
