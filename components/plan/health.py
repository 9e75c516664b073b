"""/etc/gpufleet/health.json: what a node's health gate, its NCCL probe and the cluster acceptance hold it to
(cloud-init/health/, whose README.md documents every field), decided here from the same values that configure what
they check: the GPUs the node's type promises, the fabric the plan chose (not the catalog's: a stack may run an EFA
type over TCP), the NCCL_NET the plan exports and the network name NCCL logs under it, the absolute thresholds
(components/plan/thresholds.py), and how thorough the gate is (the stack's `gate`)."""

from __future__ import annotations

import json
from typing import Literal

from components.catalog import InstanceType
from components.plan.model import FabricPlan
from components.plan.thresholds import thresholds

GateLevel = Literal["light", "deep"]
DCGM_LEVEL: dict[str, int] = {"light": 1, "deep": 2}
"""DCGM's diagnostic level per gate level, where dcgmi exists: 1 (seconds: deployment checks) for light, 2 (about two
minutes: adds short stress tests) for deep. Level 3 is for a person running `python -m health --dcgm-level 3`."""


def health_config(row: InstanceType, fabric: FabricPlan, level: GateLevel) -> str:
    """The file's JSON text, stable for one row, fabric and level (user-data changes only when they do)."""
    config = {
        "level": level,
        "dcgmLevel": DCGM_LEVEL[level],
        "gpus": row.gpus,
        "nvswitch": row.nvswitch,
        "fabric": {"kind": fabric.kind, "devices": fabric.devices, "ncclNet": fabric.nccl_net,
                   "ncclNetwork": fabric.nccl_network},
        "thresholds": thresholds(row).to_json(),
    }
    return json.dumps(config, sort_keys=True) + "\n"
