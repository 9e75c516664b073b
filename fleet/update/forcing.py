"""The replacement-forcing tables: per resource type, which inputs make the provider replace rather than update, which
names the cloud holds once, which outputs an update recomputes, and what the day-two model tracks of it, each read
from the provider's source at the commit the table names. A cloud's table is its realizer's (`forcing.yaml` beside
components/<cloud>/cluster.py): its provider's facts live in its home."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from clouds import CLOUDS

TABLE = "forcing.yaml"


class Unmodelled(Exception):
    """A resource type or input the tables have not looked up: the model refuses to guess what the provider does."""


@dataclass(frozen=True)
class Rule:
    """One resource type as its provider treats a changed input, and what the model tracks of it (`model`)."""

    token: str
    resource: str
    file: str
    forces: frozenset[str]
    forces_if: Mapping[str, str]  # input -> the boolean input under which it forces (a CustomizeDiff ForceNewIf)
    updates: frozenset[str]
    unique: Mapping[str, str]  # input -> the scope the cloud holds it unique in
    autonamed: bool
    recomputed: frozenset[str]
    model: Mapping[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str | None:
        return self.model.get("kind")

    def forcing(self, changed: set[str], inputs: Mapping[str, Any]) -> set[str]:
        """The changed inputs that make the provider replace the resource (its ForceNew and ForceNewIf fields); an
        input the table has not looked up raises Unmodelled."""
        unknown = changed - self.forces - self.updates - set(self.forces_if)
        if unknown:
            raise Unmodelled(f"{self.token}: the forcing table has not looked up {sorted(unknown)} ({self.resource}, "
                             f"{self.file}): add them to its cloud's {TABLE}")
        conditional = {key for key, flag in self.forces_if.items() if key in changed and inputs.get(flag)}
        return (changed & self.forces) | conditional


def table_path(cloud: str) -> Path | None:
    """A cloud's table, beside its realizer module; None for a cloud without one (no resources of its own)."""
    spec = importlib.util.find_spec(CLOUDS[cloud].realizer)
    path = Path(spec.origin).with_name(TABLE) if spec and spec.origin else None
    return path if path and path.is_file() else None


@cache
def rules() -> dict[str, Rule]:
    """Every row of every cloud's table, by Pulumi type token."""
    found: dict[str, Rule] = {}
    for cloud in CLOUDS:
        if (path := table_path(cloud)) is None:
            continue
        for token, row in yaml.safe_load(path.read_text())["types"].items():
            found[token] = Rule(
                token=token, resource=row["resource"], file=row["file"], forces=frozenset(row.get("forces") or {}),
                forces_if={key: spec["when"] for key, spec in (row.get("forcesIf") or {}).items()},
                updates=frozenset(row.get("updates") or ()), unique=row.get("unique") or {},
                autonamed=bool(row.get("autonamed")), recomputed=frozenset(row.get("recomputed") or ()),
                model=row.get("model") or {})
    return found


def rule(token: str) -> Rule:
    found = rules().get(token)
    if found is None:
        raise Unmodelled(f"{token} is in no cloud's forcing table (components/<cloud>/{TABLE}): read its provider's "
                         "schema and add it")
    return found
