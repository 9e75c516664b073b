"""health.json for the gate's tests: the file the plan writes for the local CPU row (components/plan/health.py), with
the numbers a test needs in place of the plan's, so every test reads the field names the plan writes."""

from __future__ import annotations

import json
from pathlib import Path

from components.catalog import lookup
from components.plan.fabric import plan_fabric
from components.plan.health import health_config


def health_json(thresholds: dict | None = None, **fields) -> dict:
    """The local row's health.json with ``fields`` (top-level keys) and ``thresholds`` (its keys) replaced."""
    row = lookup("local", "cpu")
    config = json.loads(health_config(row, plan_fabric("auto", row), "light"))
    config["thresholds"] |= thresholds or {}
    return config | fields


def write_health_json(path: Path, thresholds: dict | None = None, **fields) -> Path:
    path.write_text(json.dumps(health_json(thresholds, **fields)))
    return path


def tiny(thresholds: dict | None = None, **fields) -> dict:
    """Two GPUs on NVSwitch with thresholds any device reaches, ``fields`` and ``thresholds`` changed."""
    return health_json({"matmulTflops": 1e-9, "allreduceBusbwGbs": 1e-9} | (thresholds or {}),
                       **({"gpus": 2, "nvswitch": True} | fields))
