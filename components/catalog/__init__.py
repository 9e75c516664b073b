"""Facts per cloud and instance type, read from the YAML rows beside this file (data, not code)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

Fabric = Literal["efa", "erdma", "rdma", "tcp"]
_HERE = Path(__file__).parent


class InstanceType(BaseModel):
    """One catalog row: what a node of this type has, what it costs, and what its fabric is."""

    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)

    name: str = ""
    gpus: int = Field(ge=0)
    gpu_model: str
    gpu_memory_gib: float = Field(ge=0)
    nvswitch: bool
    fabric: Fabric = Field(description="The fastest fabric the type has; `tcp` when it has none.")
    fabric_devices: int = Field(ge=0, description="EFA interfaces, eRDMA ERIs or RDMA NICs a node gets.")
    network_cards: int = Field(ge=1)
    bandwidth_gbps: float
    price_usd_per_hour: float | None = Field(description="On-demand list price; null when not public.")
    peak_tflops_bf16: float
    busbw_baseline_gbs: float | None = Field(description="Intra-node all-reduce bus bandwidth, GB/s; null: 1 GPU.")
    baseline_source: str


class CloudCatalog(BaseModel):
    """All rows of one cloud, with where and when the prices were read."""

    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)

    cloud: str
    price_date: str
    price_source: str
    types: dict[str, InstanceType]


@cache
def catalog(cloud: str) -> CloudCatalog | None:
    """The catalog of one cloud, or None when the cloud has no rows yet."""
    path = _HERE / f"{cloud}.yaml"
    if not path.is_file():
        return None
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    raw["types"] = {name: {**row, "name": name} for name, row in raw["types"].items()}
    return CloudCatalog.model_validate(raw)


def lookup(cloud: str, instance_type: str) -> InstanceType | None:
    """The row for a type on a cloud, or None when the catalog lacks it."""
    rows = catalog(cloud)
    return rows.types.get(instance_type) if rows else None


def type_names(cloud: str) -> list[str]:
    """Every type the catalog knows for a cloud, for 'did you mean' hints."""
    rows = catalog(cloud)
    return sorted(rows.types) if rows else []
