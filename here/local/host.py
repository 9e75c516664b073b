"""What the local cluster takes from this machine, and the one command that adds what is missing: root with iproute2
and nftables for network namespaces (without them the nodes run on loopback), curl and procps for the node scripts
in either mode. Tools are looked up on PATH, the PATH the nodes get too (here.local.processes)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

NAMESPACE_TOOLS = {"ip": "iproute2", "nft": "nftables", "nsenter": "util-linux"}
NODE_TOOLS = {"curl": "curl", "pgrep": "procps", "pkill": "procps"}  # metadata and spot watcher; process control


@dataclass(frozen=True)
class Shortfall:
    """What this machine lacks (for a sentence: "... is not installed") and the one command that adds it."""

    what: str
    fix: str


def _missing(tools: dict[str, str]) -> dict[str, list[str]]:
    """Package -> its commands that are not on PATH, in the order tools names them."""
    missing: dict[str, list[str]] = {}
    for command, package in tools.items():
        if shutil.which(command) is None:
            missing.setdefault(package, []).append(command)
    return missing


def _root() -> bool:
    return os.geteuid() == 0


def _adds(missing: dict[str, list[str]]) -> str:
    packages = " ".join(missing)
    return f"`{'' if _root() else 'sudo '}apt-get install -y {packages}` adds {'it' if len(missing) == 1 else 'them'}"


def _listing(missing: dict[str, list[str]]) -> str:
    names = ", ".join(f"{package} ({', '.join(f'`{c}`' for c in commands)})" for package, commands in missing.items())
    return f"{names} {'is' if len(missing) == 1 else 'are'} not installed"


def namespaces() -> Shortfall | None:
    """None when this process can make the cluster's network namespaces and firewall, else what is missing."""
    missing = _missing(NAMESPACE_TOOLS)
    if _root() and not missing:
        return None
    if not missing:
        return Shortfall("not running as root", "run it as root, e.g. with sudo, for the full local cluster")
    if _root():
        return Shortfall(_listing(missing), _adds(missing))
    return Shortfall(f"not running as root, and {_listing(missing)}", f"{_adds(missing)}; then run it as root")


def can_remove_namespaces() -> bool:
    """Removing namespaces needs root and `ip` only: a cluster made before nftables went missing still goes."""
    return _root() and not _missing({"ip": "iproute2"})


def node_tools() -> Shortfall | None:
    """None when the node scripts find every tool they call outside the namespace tools, else what is missing."""
    missing = _missing(NODE_TOOLS)
    return Shortfall(_listing(missing), _adds(missing)) if missing else None
