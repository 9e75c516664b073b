"""Whether this machine can boot harness machines: root (namespaces, mounts, cgroups), every host tool the harness
runs (scripts/setup installs them), and a root that is a mount point (a machine's systemd starts after pivot_root,
which the kernel refuses under a chroot such as a fresh-machine check's)."""

from __future__ import annotations

import os
import shutil

TOOLS = {
    "debootstrap": "debootstrap",  # the node images (rootfs.py, build-rootfs.sh)
    "dnsmasq": "dnsmasq-base",  # the VPC's DHCP and names (network.py)
    "dpkg-scanpackages": "dpkg-dev",  # the image's package mirror index (apt.py)
    "dpkg-deb": "dpkg",  # busybox out of Debian's package, for the registry's stand-in images (registry.py)
    "apt-get": "apt",  # the packages that mirror serves (apt.py)
    "gpg": "gpg",  # the signature of its Debian archive layout (apt.py archive)
    "gpg-agent": "gpg-agent",  # gpg generates and uses the key through it (apt.py)
    "gpgconf": "gpgconf",  # ends the key's agent (apt.py)
    "unshare": "util-linux",  # the machines' namespaces (rootfs.py, machine.py)
    "nsenter": "util-linux",
    "ip": "iproute2",  # the bridge and each machine's veth (vpc.py, cluster.py)
    "cc": "gcc",  # the fake GPU's libnccl (gpu.py)
    "tar": "tar",  # the node images' archives (rootfs.py)
}
"""Every command the harness runs on this machine -> the Debian package that provides it."""


def root_is_a_mount() -> bool:
    """Whether this process's / is a mount point, as the kernel sees it (a chroot's is a plain directory, which
    os.path.ismount cannot tell: its /.. is itself)."""
    with open("/proc/self/mountinfo") as mounts:
        return any(line.split()[4] == "/" for line in mounts)


def missing_tools() -> dict[str, list[str]]:
    """Package -> its commands that are not on PATH, in TOOLS's order."""
    missing: dict[str, list[str]] = {}
    for tool, package in TOOLS.items():
        if not shutil.which(tool):
            missing.setdefault(package, []).append(tool)
    return missing


def why_not_here() -> str | None:
    """None where machines can boot here, else why not and the fix."""
    if os.geteuid() != 0:
        return "needs root (namespaces, mounts and cgroups): run it as root"
    missing = missing_tools()
    if missing:
        tools = ", ".join(tool for tools in missing.values() for tool in tools)
        return (f"{tools} not installed: scripts/setup installs {'it' if len(missing) == 1 else 'them'} as root, "
                f"or `apt-get install -y {' '.join(missing)}`")
    if not root_is_a_mount():
        return ("/ is not a mount point (a chroot): a machine's systemd runs after pivot_root, which the kernel "
                "refuses under a chroot, so boots need a real machine or container root")
    return None
