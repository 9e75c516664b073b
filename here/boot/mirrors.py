"""The mirror hosts a plan names, answered from the bridge: the node settings' PyPI index (GF_MIRRORS_PIP) and
archive (GF_MIRRORS_APT), such as the clouds' in-VPC mirror sites, resolve to the bridge (vpc), where one web server
serves the harness's PyPI mirror (pypi) and Debian archive (apt.archive) under the paths those URLs name. With the
internet's stand-ins left out (Boot(internet=False): no pip.conf or sources.list of the harness on the disk), these
names are all a node can fetch from: the blocked-internet drill."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

PORT = 80


class UnservableMirror(ValueError):
    """A mirror URL the harness cannot answer for; the message names the setting and why."""


def _site(url: str, setting: str) -> tuple[str, str]:
    """(host, path without slashes at either end) of a mirror URL the harness serves over plain HTTP on PORT."""
    parts = urlsplit(url)
    if parts.scheme != "http" or (parts.port or PORT) != PORT:
        raise UnservableMirror(f"{setting}={url}: the boot harness serves mirrors over http:// on port {PORT} only")
    return parts.hostname or "", parts.path.strip("/")


def hosts(settings: Mapping[str, str]) -> tuple[str, ...]:
    """The host names the plan's nodes fetch packages from, where it names mirrors for them."""
    return tuple(dict.fromkeys(_site(settings[key], key)[0] for key in ("GF_MIRRORS_PIP", "GF_MIRRORS_APT")
                               if settings.get(key)))


def site(directory: Path, settings: Mapping[str, str], index: Path | None, archive: Path | None,
         stand_in: bool) -> Path:
    """A tree of links to the served directories, at the paths the plan's mirror URLs name; with `stand_in`, also
    /simple/, the harness's pip.conf index (pypi.pip_conf) that stands in for pypi.org."""
    root = directory / "mirror-site"
    links = {}
    if index is not None and settings.get("GF_MIRRORS_PIP"):
        links[_site(settings["GF_MIRRORS_PIP"], "GF_MIRRORS_PIP")[1]] = index
    if archive is not None and settings.get("GF_MIRRORS_APT"):
        base = _site(settings["GF_MIRRORS_APT"], "GF_MIRRORS_APT")[1]
        for name in ("debian", "debian-security"):
            links[f"{base}/{name}".strip("/")] = archive / name
    if stand_in and index is not None:
        links.setdefault("simple", index)
    for path, target in links.items():
        link = root / path
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)
    root.mkdir(parents=True, exist_ok=True)
    return root


def serve_command(root: Path, address: str) -> list[str]:
    return [sys.executable, "-m", "http.server", str(PORT), "--bind", address, "--directory", str(root)]
