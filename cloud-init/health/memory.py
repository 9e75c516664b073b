"""Memory bandwidth: each GPU's own HBM (a device-to-device copy) and, on NVLink/NVSwitch hosts, every pair of GPUs
(a copy from one GPU's memory to another's, cudaMemcpyPeer under torch's copy_).

A copy reads and writes each byte: HBM GB/s counts both, as a bandwidth test does. A pair whose NVLink is down still
copies, staged through the host at PCIe speed or worse, so its figure falls to a fraction of its peers'.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence

import torch

from health import timing
from health.result import Check, judge
from health.thresholds import PEER_FRACTION, with_peers


def hbm(devices: Sequence[torch.device], nbytes: int, seconds: float) -> dict[str, float]:
    """GB/s per device of copying ``nbytes`` within its memory (read + write), all devices at once."""
    work, labels = [], []
    for position, device in enumerate(devices):
        source = torch.ones(nbytes, dtype=torch.uint8, device=device)
        target = torch.empty_like(source)
        work.append((device, lambda source=source, target=target: target.copy_(source)))
        labels.append(timing.label(device, position))
    per_call = timing.per_call_seconds(work, seconds)
    return {name: 2 * nbytes / spent / 1e9 for name, spent in zip(labels, per_call, strict=True)}


def pairs(count: int, both_directions: bool) -> list[tuple[int, int]]:
    """The ordered pairs to measure: each unordered pair once, or both ways."""
    if both_directions:
        return list(itertools.permutations(range(count), 2))
    return list(itertools.combinations(range(count), 2))


def p2p(devices: Sequence[torch.device], nbytes: int, copies: int, both_directions: bool) -> dict[str, float]:
    """GB/s of copying ``nbytes`` from one device to another, one pair at a time (a pair's own bandwidth)."""
    labels = [timing.label(device, position) for position, device in enumerate(devices)]
    tensors = [torch.ones(nbytes, dtype=torch.uint8, device=device) for device in devices]
    figures = {}
    for i, j in pairs(len(devices), both_directions):
        target = torch.empty(nbytes, dtype=torch.uint8, device=devices[j])
        target.copy_(tensors[i])
        for device in (devices[i], devices[j]):
            timing.sync(device)
        start = time.perf_counter()
        for _ in range(copies):
            target.copy_(tensors[i], non_blocking=True)
        for device in (devices[i], devices[j]):
            timing.sync(device)
        figures[f"{labels[i]}->{labels[j]}"] = nbytes * copies / (time.perf_counter() - start) / 1e9
        del target
    return figures


def checks(check: str, figures: dict[str, float], absolute: float | None, detail: str, peers: bool = True
           ) -> list[Check]:
    """One row per GPU or pair, held to the stricter of the catalog's threshold and the node's median share
    (``peers`` False: the catalog's alone, for CPU stand-ins)."""
    limit, source = with_peers(figures, absolute, PEER_FRACTION if peers else None)
    return [judge(check, subject, gbs, "GB/s", limit, ">=", f"{detail}; threshold: {source or 'none'}")
            for subject, gbs in figures.items()]
