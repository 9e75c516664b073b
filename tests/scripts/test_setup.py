"""scripts/setup's list of system tools covers every command the local cluster and the boot harness look for, with
the package that provides it, so a fresh machine set up as root skips no test for want of a package."""

from __future__ import annotations

import re
from pathlib import Path

from here.boot import host as boot_host
from here.local import host

ROOT = Path(__file__).resolve().parents[2]


def setup_tools() -> dict[str, str]:
    """command (or file) -> Debian package, as scripts/setup's `tools=(...)` names them."""
    listing = re.search(r"^tools=\(([^)]*)\)", (ROOT / "scripts" / "setup").read_text(), re.MULTILINE)
    assert listing, "scripts/setup has no tools=(...) list"
    return dict(pair.split(":", 1) for pair in listing.group(1).split())


def test_the_local_cluster_tools_come_from_the_packages_host_names():
    tools = setup_tools()
    for command, package in {**host.NAMESPACE_TOOLS, **host.NODE_TOOLS}.items():
        assert tools.get(command) == package, f"scripts/setup does not install {command} ({package})"


def test_every_tool_the_boot_harness_needs_is_installed():
    tools = setup_tools()
    assert {tool: tools.get(tool) for tool in boot_host.TOOLS} == boot_host.TOOLS
    # `cc -shared` links against the C library's start files: the compiler alone does not build the fake libnccl.
    assert tools.get("/usr/include/stdio.h") == "libc6-dev"
