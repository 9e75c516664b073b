"""The figures a healthy node must reach, as a function of its instance type's catalog row and the fractions below.

The row is the catalog entry (components/catalog/<cloud>.yaml) in the catalog's own field names, rendered for the node
by the plan. Besides today's fields (gpus, nvswitch, fabric, peakTflopsBf16, busbwBaselineGbs) it may carry figures
measured on real hardware (README.md, "Catalog fields"): a measured figure replaces the datasheet estimate, and a
check without either is judged only against the node's other GPUs.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass

TOLERANCE = 0.8
"""How far below its expected figure a healthy GPU or link may fall. Cards of one type differ by 2-4% and one card's
clock by ~4% between runs (power-capped H200s, benchmarks/TRAINING.md), while a GPU at 60% of its clock or one whose
time another process takes falls to 0.6 of its figure or below."""

MATMUL_SUSTAINED_OF_PEAK = 0.75
"""What a healthy card sustains of its datasheet dense bf16 peak in this check's square bf16 products, where the row
has no measured figure: an H200 at its 700 W limit reached 740-790 of 989 TFLOP/s in cuBLAS's products
(benchmarks/TRAINING.md). The threshold is then peak x 0.75 x TOLERANCE = 0.6 of the peak."""

PEER_FRACTION = 0.85
"""Each GPU of a node must reach this share of the node's median: the node's GPUs are one model in one chassis, so
one that lags by more is an outlier even where the catalog has no figure for it."""

ALLREDUCE_OF_BASELINE = 0.7
"""Share of the catalog's all-reduce bus bandwidth a node (intra-node) or the cluster (cross-node) must reach, as the
gate has required since its first version."""

PAIR_PEER_FRACTION = 0.5
"""In the cluster acceptance, a node whose best pair reaches less than this share of the nodes' median is slow.
Healthy pairs on one fabric measure within ~10% of each other on GPUs, but within 2x with gloo on a shared CPU host
(the tests); a node whose link runs at half speed or worse is named, finer cuts need the cross-node baseline
(crossNodeBusbwGbs)."""


@dataclass(frozen=True)
class Limits:
    """Absolute thresholds for one node; None where neither the catalog nor a measurement gives one."""

    gpus: int
    nvswitch: bool
    fabric: str
    fabric_devices: int
    matmul_tflops: float | None
    hbm_gbs: float | None
    p2p_gbs: float | None
    allreduce_busbw_gbs: float | None
    cross_node_busbw_gbs: float | None


def _positive(row: Mapping, key: str) -> float | None:
    value = row.get(key)
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def _scaled(value: float | None, fraction: float) -> float | None:
    return None if value is None else value * fraction


def limits(row: Mapping) -> Limits:
    """The thresholds the catalog row sets (see the constants above for each fraction and why)."""
    gpus = int(row.get("gpus", 0))
    peak = _positive(row, "peakTflopsBf16")
    expected_matmul = _positive(row, "measuredMatmulTflops") or _scaled(peak, MATMUL_SUSTAINED_OF_PEAK)
    baseline = _positive(row, "busbwBaselineGbs")
    return Limits(
        gpus=gpus,
        nvswitch=bool(row.get("nvswitch", False)),
        fabric=str(row.get("fabric", "tcp")),
        fabric_devices=int(row.get("fabricDevices", 0)),
        matmul_tflops=_scaled(expected_matmul, TOLERANCE),
        hbm_gbs=_scaled(_positive(row, "measuredHbmGbs"), TOLERANCE),
        p2p_gbs=_scaled(_positive(row, "measuredP2pGbs"), TOLERANCE),
        allreduce_busbw_gbs=_scaled(baseline, ALLREDUCE_OF_BASELINE) if gpus > 1 else None,
        cross_node_busbw_gbs=_scaled(_positive(row, "crossNodeBusbwGbs"), ALLREDUCE_OF_BASELINE),
    )


def with_peers(figures: Mapping[str, float], absolute: float | None, fraction: float | None = PEER_FRACTION
               ) -> tuple[float | None, str]:
    """The threshold each of a node's figures is held to: the stricter of the absolute one and ``fraction`` of the
    node's median (None: the absolute one alone), and which of the two it is (for the row's detail)."""
    if not figures or fraction is None:
        return absolute, "catalog" if absolute is not None else ""
    peer = fraction * statistics.median(figures.values())
    if absolute is not None and absolute >= peer:
        return absolute, "catalog"
    return peer, f"{fraction:g} x node median"
