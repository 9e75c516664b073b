"""The thresholds a node is held to: the absolute ones the plan decided from the instance type's catalog row
(plan/thresholds.py, where each fraction says why; node.json's `health.thresholds`), and the share of its own
GPUs' median each GPU, and of the nodes' median each node, must reach.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass

PEER_FRACTION = 0.85
"""Each GPU of a node must reach this share of the node's median: the node's GPUs are one model in one chassis, so
one that lags by more is an outlier even where the catalog has no figure for it."""

PAIR_PEER_FRACTION = 0.5
"""In the cluster acceptance, a node whose best pair reaches less than this share of the nodes' median is slow.
Healthy pairs on one fabric measure within ~10% of each other on GPUs, but within 2x with gloo on a shared CPU host
(the tests); a node whose link runs at half speed or worse is named, finer cuts need the cross-node baseline
(health.thresholds.cross_node_busbw_gbs)."""


@dataclass(frozen=True)
class Limits:
    """The node's absolute thresholds as the plan decided them (node.json's `health.thresholds`); None: no absolute
    threshold, the figure is reported and judged against the node's other GPUs only."""

    matmul_tflops: float | None
    hbm_gbs: float | None
    p2p_gbs: float | None
    allreduce_busbw_gbs: float | None
    cross_node_busbw_gbs: float | None


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
