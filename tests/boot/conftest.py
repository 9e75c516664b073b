"""Boot-harness tests need root (namespaces, mounts, cgroups) and a few host tools, which scripts/setup installs. The
first run builds the node images (debootstrap, several minutes) into the cache (GF_BOOT_CACHE, default
/var/tmp/gpufleet-boot). Modules that boot machines use the `needs_root` fixture."""

from __future__ import annotations

import pytest

from here.boot import host


@pytest.fixture(scope="session")
def needs_root() -> None:
    """Session-scoped so that it runs, and skips, before the modules' own fixtures boot anything."""
    reason = host.why_not_here()
    if reason is not None:
        pytest.skip(reason)
