"""/etc/gpufleet/health.json: what a node's health gate and the cluster acceptance hold it to (cloud-init/health/):
the instance type's catalog row in the catalog's own field names, and how thorough the gate is (the stack's `gate`)."""

from __future__ import annotations

import json
from typing import Literal

from components.catalog import InstanceType

GateLevel = Literal["light", "deep"]
DCGM_LEVEL: dict[str, int] = {"light": 1, "deep": 2}
"""DCGM's diagnostic level per gate level, where dcgmi exists: 1 (seconds: deployment checks) for light, 2 (about two
minutes: adds short stress tests) for deep. Level 3 is for a person running `python -m health --dcgm-level 3`."""
_NOT_FIGURES = {"sources", "unknown", "derived"}  # the row's provenance stays in the catalog


def health_config(row: InstanceType, level: GateLevel) -> str:
    """The file's JSON text, stable for one row and level (user-data changes only when they do)."""
    config = {"row": row.model_dump(by_alias=True, exclude=_NOT_FIGURES), "level": level,
              "dcgmLevel": DCGM_LEVEL[level]}
    return json.dumps(config, sort_keys=True) + "\n"
