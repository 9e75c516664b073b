"""The absolute figures a healthy node must reach, decided from its instance type's catalog row and the fractions
below, so the node gate reads numbers (node.json's `health.thresholds`), never catalog field names.

A figure measured on real hardware (the row's measured* fields, README.md "Catalog fields") replaces the datasheet
estimate; a check with neither has no absolute threshold (None) and is judged only against the node's other GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

from plan.catalog import InstanceType

TOLERANCE = 0.8
"""How far below its expected figure a healthy GPU or link may fall. Cards of one type differ by 2-4% and one card's
clock by ~4% between runs (power-capped H200s, benchmarks/TRAINING.md), while a GPU at 60% of its clock or one whose
time another process takes falls to 0.6 of its figure or below."""

MATMUL_SUSTAINED_OF_PEAK = 0.75
"""What a healthy card sustains of its datasheet dense bf16 peak in the gate's square bf16 products, where the row
has no measured figure: an H200 at its 700 W limit reached 740-790 of 989 TFLOP/s in cuBLAS's products
(benchmarks/TRAINING.md). The threshold is then peak x 0.75 x TOLERANCE = 0.6 of the peak."""

ALLREDUCE_OF_BASELINE = 0.7
"""Share of the catalog's all-reduce bus bandwidth a node (intra-node) or the cluster (cross-node) must reach, as the
gate has required since its first version."""


@dataclass(frozen=True)
class Thresholds:
    """Absolute thresholds for one node, six significant digits; None where neither the catalog nor a measurement
    gives one."""

    matmul_tflops: float | None
    hbm_gbs: float | None
    p2p_gbs: float | None
    allreduce_busbw_gbs: float | None
    cross_node_busbw_gbs: float | None


def _positive(value: float | None) -> float | None:
    return value if value is not None and value > 0 else None


def _scaled(value: float | None, fraction: float) -> float | None:
    return None if value is None else value * fraction


def _threshold(value: float | None, fraction: float) -> float | None:
    """A threshold as the node reads it: six significant digits."""
    scaled = _scaled(value, fraction)
    return None if scaled is None else float(f"{scaled:.6g}")


def thresholds(row: InstanceType) -> Thresholds:
    """The thresholds the catalog row sets (see the constants above for each fraction and why)."""
    peak = _scaled(_positive(row.peak_tflops_bf16), MATMUL_SUSTAINED_OF_PEAK)
    expected_matmul = _positive(row.measured_matmul_tflops) or peak
    baseline = _positive(row.busbw_baseline_gbs)
    return Thresholds(
        matmul_tflops=_threshold(expected_matmul, TOLERANCE),
        hbm_gbs=_threshold(_positive(row.measured_hbm_gbs), TOLERANCE),
        p2p_gbs=_threshold(_positive(row.measured_p2p_gbs), TOLERANCE),
        allreduce_busbw_gbs=_threshold(baseline, ALLREDUCE_OF_BASELINE) if row.gpus > 1 else None,
        cross_node_busbw_gbs=_threshold(_positive(row.cross_node_busbw_gbs), ALLREDUCE_OF_BASELINE),
    )
