"""The gate's config file, /etc/gpufleet/health.json, as the plan writes it (components/plan/health.py; README.md
beside this file documents each field), read the same way by the node gate, the NCCL probe and the cluster
acceptance. It fails closed: a missing or mistyped field is a usage error (exit 2), never a default, since the node
must judge only what the plan decided."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from health.thresholds import Limits

LEVELS = ("light", "deep")
THRESHOLDS = {"matmulTflops": "matmul_tflops", "hbmGbs": "hbm_gbs", "p2pGbs": "p2p_gbs",
              "allreduceBusbwGbs": "allreduce_busbw_gbs", "crossNodeBusbwGbs": "cross_node_busbw_gbs"}
"""health.json's `thresholds` keys and the Limits field each fills."""


class UsageError(Exception):
    """A wrong argument or config value; the message names it and the fix."""


@dataclass(frozen=True)
class Fabric:
    """The fabric the plan chose for the node: its kind, the devices it must bring up, the NCCL_NET the plan exports
    in nccl.env and the network name NCCL logs under it ("Using network <name>")."""

    kind: str
    devices: int
    nccl_net: str
    nccl_network: str


@dataclass(frozen=True)
class HealthConfig:
    """Everything the gate holds a node to."""

    level: str
    dcgm_level: int | None
    gpus: int
    nvswitch: bool
    fabric: Fabric
    limits: Limits


class _Reader:
    """Typed fields of one JSON object, each error naming the file and the field's dotted path."""

    def __init__(self, path: Path, raw: object, prefix: str = "") -> None:
        if not isinstance(raw, dict):
            raise UsageError(f"--config {path}: {prefix.rstrip('.') or 'the file'} must be a JSON object "
                             "(write it with components/plan/health.py)")
        self.path, self.raw, self.prefix = path, raw, prefix

    def get(self, key: str, kinds: tuple[type, ...], what: str, nullable: bool = False):
        name = self.prefix + key
        if key not in self.raw:
            raise UsageError(f"--config {self.path}: missing '{name}' ({what}); the plan writes it "
                             "(components/plan/health.py)")
        value = self.raw[key]
        # JSON's true/false are Python bools, which are ints too: a count is never a bool, a flag never a number.
        if nullable if value is None else isinstance(value, kinds) and isinstance(value, bool) == (bool in kinds):
            return value
        raise UsageError(f"--config {self.path}: '{name}' must be {what} (got {value!r})")

    def child(self, key: str, what: str) -> _Reader:
        return _Reader(self.path, self.get(key, (dict,), what), self.prefix + key + ".")


def parse(path: Path, raw: object) -> HealthConfig:
    """The config from the file's parsed JSON; UsageError naming the first missing or mistyped field."""
    top = _Reader(path, raw)
    level = top.get("level", (str,), "light or deep")
    if level not in LEVELS:
        raise UsageError(f"--config {path}: 'level' must be one of {', '.join(LEVELS)} (got {level!r})")
    fabric = top.child("fabric", "an object: kind, devices, ncclNet, ncclNetwork")
    limits = top.child("thresholds", "an object of absolute thresholds")
    return HealthConfig(
        level=level,
        dcgm_level=top.get("dcgmLevel", (int,), "a DCGM diagnostic level, 1-3, or null", nullable=True),
        gpus=top.get("gpus", (int,), "the GPUs the instance type promises"),
        nvswitch=top.get("nvswitch", (bool,), "true or false: NVLink/NVSwitch between the GPUs"),
        fabric=Fabric(kind=fabric.get("kind", (str,), "the plan's fabric: efa, erdma, rdma or tcp"),
                      devices=fabric.get("devices", (int,), "the fabric devices the node must bring up"),
                      nccl_net=fabric.get("ncclNet", (str,), "the NCCL_NET nccl.env exports"),
                      nccl_network=fabric.get("ncclNetwork", (str,), "the network name NCCL logs for it")),
        limits=Limits(**{field: limits.get(key, (int, float), "a number of its unit, or null", nullable=True)
                         for key, field in THRESHOLDS.items()}),
    )


def load_config(path: Path) -> HealthConfig:
    """The config file, parsed; UsageError naming the file and what is wrong."""
    try:
        raw = json.loads(path.read_text())
    except OSError as error:
        raise UsageError(f"--config {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise UsageError(f"--config {path}: not JSON ({error.msg} at line {error.lineno})") from None
    return parse(path, raw)
