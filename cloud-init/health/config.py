"""What the gate holds a node to, read from the node plan, /etc/gpufleet/node.json (plan/node.py writes it;
README.md beside this file documents the fields the gate reads): the node's GPUs, fabric and NCCL_NET, and its
`health` section. Read the same way by the node gate, the NCCL probe and the cluster acceptance. It fails closed: a
missing or mistyped field is a usage error (exit 2), never a default, since the node must judge only what the plan
decided."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path

from health.thresholds import Limits

LEVELS = ("light", "deep")


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
    dcgm_level: int
    gpus: int
    nvswitch: bool
    fabric: Fabric
    limits: Limits


class _Reader:
    """Typed fields of one JSON object, each error naming the file and the field's dotted path."""

    def __init__(self, path: Path, raw: object, prefix: str = "") -> None:
        if not isinstance(raw, dict):
            raise UsageError(f"--config {path}: {prefix.rstrip('.') or 'the file'} must be a JSON object "
                             "(the node plan: plan/node.py)")
        self.path, self.raw, self.prefix = path, raw, prefix

    def get(self, key: str, kinds: tuple[type, ...], what: str, nullable: bool = False):
        name = self.prefix + key
        if key not in self.raw:
            raise UsageError(f"--config {self.path}: missing '{name}' ({what}); the plan writes it "
                             "(plan/node.py)")
        value = self.raw[key]
        # JSON's true/false are Python bools, which are ints too: a count is never a bool, a flag never a number.
        if nullable if value is None else isinstance(value, kinds) and isinstance(value, bool) == (bool in kinds):
            return value
        raise UsageError(f"--config {self.path}: '{name}' must be {what} (got {value!r})")

    def child(self, key: str, what: str) -> _Reader:
        return _Reader(self.path, self.get(key, (dict,), what), self.prefix + key + ".")

    def setting(self, env_key: str, key: str, what: str) -> str:
        """One variable of an environment the plan writes as [KEY, value] pairs."""
        pairs = self.get(key, (list,), f"{what}: a list of [KEY, value] pairs")
        for pair in pairs:
            if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(part, str) for part in pair)):
                raise UsageError(f"--config {self.path}: '{self.prefix}{key}' must be {what}: a list of [KEY, value] "
                                 f"pairs (got {pair!r})")
        found = dict(pairs)
        if env_key not in found:
            raise UsageError(f"--config {self.path}: '{self.prefix}{key}' has no {env_key} ({what}); the plan writes "
                             "it (plan/node.py)")
        return found[env_key]


def parse(path: Path, raw: object) -> HealthConfig:
    """The config from the node plan's parsed JSON; UsageError naming the first missing or mistyped field."""
    top = _Reader(path, raw)
    health = top.child("health", "an object: level, dcgm_level, nccl_network, thresholds")
    level = health.get("level", (str,), "light or deep")
    if level not in LEVELS:
        raise UsageError(f"--config {path}: 'health.level' must be one of {', '.join(LEVELS)} (got {level!r})")
    limits = health.child("thresholds", "an object of absolute thresholds")
    return HealthConfig(
        level=level,
        dcgm_level=health.get("dcgm_level", (int,), "a DCGM diagnostic level, 1-3"),
        gpus=top.get("gpus", (int,), "the GPUs the instance type promises"),
        nvswitch=top.get("nvswitch", (bool,), "true or false: NVLink/NVSwitch between the GPUs"),
        fabric=Fabric(kind=top.get("fabric", (str,), "the plan's fabric: efa, erdma, rdma or tcp"),
                      devices=top.get("fabric_devices", (int,), "the fabric devices the node must bring up"),
                      nccl_net=top.setting("NCCL_NET", "nccl_env", "the NCCL env nccl.env exports"),
                      nccl_network=health.get("nccl_network", (str,), "the network name NCCL logs for NCCL_NET")),
        limits=Limits(**{field.name: limits.get(field.name, (int, float), "a number of its unit, or null",
                                                nullable=True) for field in fields(Limits)}),
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
