"""Facts per cloud and instance type, read from the YAML rows beside this file (data, not code).

Every row names its sources (keys of the cloud's `sources:`, each with a date). A fact the sources do not give is
null with the reason in the row's `unknown:`; a value that was derived rather than read (a floor such as the
smallest variant of a GPU, or a figure carried over from the same hardware) says how in `derived:`.
docs/cloud-facts.md says how each field was sourced, per family.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

Fabric = Literal["efa", "erdma", "rdma", "tcp"]
_HERE = Path(__file__).parent
_ISO_DATE = r"^\d{4}-\d{2}-\d{2}$"
MEASURED = ("measuredMatmulTflops", "measuredHbmGbs", "measuredP2pGbs", "crossNodeBusbwGbs")
"""Figures the health gate measured on this hardware (benchmarks/health_gate.py, health.acceptance). A row that was
never measured leaves them out; a measured row names its date and command and says in `unknown:` why each figure it
lacks is missing (one GPU: no pair, no second node)."""


class _Data(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)


class Source(_Data):
    """Where a group of facts was read, and when."""

    title: str = Field(min_length=1)
    where: str = Field(min_length=1, description="URL, or repository + path + commit.")
    date: str = Field(pattern=_ISO_DATE, description="When the source was read (or generated, for generated data).")


class InstanceType(_Data):
    """One catalog row: what a node of this type has, what it costs, and what its fabric is."""

    name: str = ""
    gpus: int = Field(ge=0)
    gpu_model: str
    gpu_memory_gib: float = Field(ge=0, description="Per GPU, as the cloud reports it.")
    vcpus: int | None = Field(ge=1)
    memory_gib: float | None = Field(gt=0)
    nvswitch: bool = Field(description="Needs nvidia-fabricmanager of exactly the driver's version.")
    fabric: Fabric = Field(description="The fastest fabric the type has; `tcp` when it has none.")
    fabric_devices: int = Field(ge=0, description="EFA interfaces, eRDMA ERIs or RDMA NICs a node gets.")
    network_cards: int | None = Field(ge=1)
    bandwidth_gbps: float | None = Field(gt=0, description="Baseline (sustained) network bandwidth.")
    price_usd_per_hour: float | None = Field(ge=0, description="On-demand list price in the cloud's price table.")
    price_cny_per_hour: float | None = Field(
        None, ge=0, description="On-demand list price on the cloud's China site, where that site publishes one: the "
        "spot ceiling of an account that bills in CNY, and the cost where no USD price is public.")
    peak_tflops_bf16: float | None = Field(ge=0, description="Dense tensor peak per GPU in `peak_precision`.")
    peak_precision: Literal["bf16", "fp16"] = Field("bf16", description="fp16 where the GPU has no bf16 (T4, V100).")
    busbw_baseline_gbs: float | None = Field(ge=0, description="Intra-node all-reduce bus bandwidth, GB/s.")
    measured_matmul_tflops: float | None = Field(
        None, gt=0, description="bf16 8192^3 matmul TFLOP/s per GPU, idle, the light gate (median over the GPUs).")
    measured_hbm_gbs: float | None = Field(None, gt=0,
                                           description="HBM copy of 1 GiB within a GPU, read + write, GB/s.")
    measured_p2p_gbs: float | None = Field(None, gt=0, alias="measuredP2pGbs",
                                           description="GPU-to-GPU copy of 256 MiB, median pair, GB/s.")
    cross_node_busbw_gbs: float | None = Field(
        None, gt=0, description="All-reduce bus bandwidth across nodes at the job's bucket size, GB/s.")
    measured_date: str | None = Field(None, pattern=_ISO_DATE, description="When the measured figures were taken.")
    measured_command: str | None = Field(None, min_length=1, description="The command that printed them.")
    sources: tuple[str, ...] = Field(min_length=1)
    unknown: dict[str, str] = Field(default_factory=dict, description="Null field (camelCase) -> why it is null.")
    derived: dict[str, str] = Field(default_factory=dict, description="Field (camelCase) not read directly -> how.")

    @model_validator(mode="after")
    def _nulls_have_reasons(self) -> InstanceType:
        keys = {name: info.alias or to_camel(name) for name, info in type(self).model_fields.items()}
        facts = set(keys.values()) - {"name", "sources", "unknown", "derived"}
        nulls = {key for name, key in keys.items() if getattr(self, name) is None}
        figures = {key for key in MEASURED if key not in nulls}
        if (self.measured_date is None) != (self.measured_command is None):
            raise ValueError("measuredDate and measuredCommand go together: when and how the figures were taken")
        if figures and self.measured_date is None:
            raise ValueError(f"measured figures without measuredDate and measuredCommand: {', '.join(sorted(figures))}")
        if self.measured_date is None:
            nulls -= {*MEASURED, "measuredDate", "measuredCommand"}  # never measured: nothing to explain
        if missing := sorted(nulls - self.unknown.keys() - {"priceCnyPerHour"}):  # only China sites publish one
            raise ValueError(f"null without a reason in `unknown`: {', '.join(missing)}")
        if extra := sorted(self.unknown.keys() - nulls):
            raise ValueError(f"`unknown` names fields that are not null: {', '.join(extra)}")
        if bad := sorted(self.derived.keys() - (facts - nulls)):
            raise ValueError(f"`derived` names fields that are null or not facts: {', '.join(bad)}")
        return self


class Unlisted(_Data):
    """A family users ask for that has no row yet, because a fact a row cannot do without is not public."""

    family: str
    gpu_model: str
    reason: str = Field(min_length=1)
    sources: tuple[str, ...] = Field(min_length=1)


class Regions(_Data):
    """The regions a cloud offers and the zone names known in each; `zone_pattern` is how the cloud names zones."""

    sources: tuple[str, ...] = Field(min_length=1)
    zone_pattern: str = Field(description="Regex with `{region}`: what a zone of that region is called.")
    known: dict[str, tuple[str, ...]]

    @model_validator(mode="after")
    def _zones_match_pattern(self) -> Regions:
        for region, zones in self.known.items():
            if wrong := [zone for zone in zones if not _zone_regex(self.zone_pattern, region).fullmatch(zone)]:
                raise ValueError(f"{region}: zones not named like the cloud names them: {', '.join(wrong)}")
        return self


class CloudCatalog(_Data):
    """All rows of one cloud, the sources they cite, the cloud's regions, and where and when prices were read."""

    cloud: str
    price_date: str = Field(pattern=_ISO_DATE)
    price_source: str
    sources: dict[str, Source]
    regions: Regions | None = None
    types: dict[str, InstanceType]
    unlisted: tuple[Unlisted, ...] = ()

    @model_validator(mode="after")
    def _sources_exist(self) -> CloudCatalog:
        cited = [(row.name, key) for row in self.types.values() for key in row.sources]
        cited += [(f"unlisted {u.family}", key) for u in self.unlisted for key in u.sources]
        cited += [("regions", key) for key in (self.regions.sources if self.regions else ())]
        if missing := [f"{who}: {key}" for who, key in cited if key not in self.sources]:
            raise ValueError(f"sources cited but not defined: {'; '.join(missing)}")
        return self


def _zone_regex(pattern: str, region: str) -> re.Pattern[str]:
    return re.compile(pattern.replace("{region}", re.escape(region)))


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


def regions(cloud: str) -> Mapping[str, tuple[str, ...]]:
    """Region -> the zone names known there (empty for a cloud without regions, such as `local`)."""
    rows = catalog(cloud)
    return MappingProxyType(dict(rows.regions.known) if rows and rows.regions else {})


def zone_in_region(cloud: str, region: str, zone: str) -> bool:
    """Whether `zone` is named as a zone of `region` on this cloud (by the cloud's naming rule, so a zone the
    catalog has not listed yet still passes; a region, another region's zone or a typo does not)."""
    rows = catalog(cloud)
    if not rows or not rows.regions or region not in rows.regions.known:
        return False
    return _zone_regex(rows.regions.zone_pattern, region).fullmatch(zone) is not None
