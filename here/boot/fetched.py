"""Bytes a node fetched from outside the cluster's network during its boot. In the harness the only such sources are
the mirrors standing in for the internet's package repositories (PyPI, the image's apt mirror) and, where the monitor
runs for real, its container registries (here.boot.registry): there is no other route out of the VPC. Each is an
http.server, whose log has a line per request (client address, request line, status) but not the size, so a request
is counted as the size of the file it served. Generated directory
listings (no file behind them) count 0. The object store is the cloud's own service in the region: not counted."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote, urlsplit

# http.server's log_request: '%s - - [%s] "%s" %s %s' with the client, time, request line, status, size ("-").
LINE = re.compile(r'^(\S+) - - \[[^\]]*\] "GET (\S+) HTTP/[\d.]+" 200 ')


def served_bytes(log: Path, root: Path) -> Counter:
    """Bytes the server of `root` sent each client address, by its log."""
    totals: Counter = Counter()
    if not log.exists():
        return totals
    for line in log.read_text(errors="replace").splitlines():
        match = LINE.match(line)
        if not match:
            continue
        path = root / unquote(urlsplit(match[2]).path).lstrip("/")
        if path.is_dir():
            path = path / "index.html"
        if path.is_file():
            totals[match[1]] += path.stat().st_size
    return totals


def by_address(mirrors: Mapping[Path, Path]) -> Counter:
    """Bytes every mirror (its log -> the directory it serves) sent each client address, summed."""
    return sum((served_bytes(log, root) for log, root in mirrors.items()), Counter())
