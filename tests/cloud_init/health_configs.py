"""node.json for the gate's tests: the file the plan writes for the local stack's head (plan/node.py,
rendered by plan.bootstrap), with the values a test needs in place of the plan's, so every test reads the
fields the plan writes."""

from __future__ import annotations

import json
from pathlib import Path

from node_cases import plan_of

from plan.bootstrap import node_json


def node_config(thresholds: dict | None = None, health: dict | None = None, **fields) -> dict:
    """The local head's node.json with ``fields`` (top-level keys), ``health`` (its section's keys) and
    ``thresholds`` (health.thresholds' keys) replaced."""
    config = json.loads(node_json(plan_of("local").head.node))
    config["health"] |= health or {}
    config["health"]["thresholds"] |= thresholds or {}
    return config | fields


def write_node_config(path: Path, thresholds: dict | None = None, **fields) -> Path:
    path.write_text(json.dumps(node_config(thresholds, **fields)))
    return path


def tiny(thresholds: dict | None = None, **fields) -> dict:
    """Two GPUs on NVSwitch with thresholds any device reaches, ``fields`` and ``thresholds`` changed."""
    return node_config({"matmul_tflops": 1e-9, "allreduce_busbw_gbs": 1e-9} | (thresholds or {}),
                       **({"gpus": 2, "nvswitch": True} | fields))
