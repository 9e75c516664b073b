"""The gate's config file, /etc/gpufleet/health.json: {"row": <catalog row>, "level": "light" | "deep",
"dcgmLevel": null | 1-3}, read the same way by the node gate and the cluster acceptance test."""

from __future__ import annotations

import json
from pathlib import Path

LEVELS = ("light", "deep")


class UsageError(Exception):
    """A wrong argument or config value; the message names it and the fix."""


def load_config(path: Path) -> dict:
    """The config as a dict; UsageError naming the file and what is wrong."""
    try:
        raw = json.loads(path.read_text())
    except OSError as error:
        raise UsageError(f"--config {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise UsageError(f"--config {path}: not JSON ({error.msg} at line {error.lineno})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("row"), dict):
        raise UsageError(f"--config {path}: needs a 'row' object (the instance type's catalog row)")
    level = raw.get("level", "light")
    if level not in LEVELS:
        raise UsageError(f"--config {path}: 'level' must be one of {', '.join(LEVELS)} (got {level!r})")
    return raw
