"""Every GPU's dense bf16 matmul throughput, all GPUs at once, against the catalog's figure and the node's median.

The product is square and large (8192 on GPUs: 1.1 TFLOP, ~1.5 ms on an H200), the shape cuBLAS runs nearest its
peak, so the figure moves with the SM clock and the share of time the GPU gives this process: a GPU at 60% of its
clock, power-braked, or shared with another process's kernels falls well below a healthy one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from health import timing
from health.result import Check, judge
from health.thresholds import PEER_FRACTION, with_peers


def measure(devices: Sequence[torch.device], n: int, seconds: float, dtype: torch.dtype = torch.bfloat16,
            during: Callable[[], None] | None = None) -> dict[str, float]:
    """TFLOP/s per device (2 n^3 per product), timed over about ``seconds`` on all devices at once."""
    work, labels = [], []
    for position, device in enumerate(devices):
        generator = torch.Generator(device=device).manual_seed(position)
        a = torch.randn(n, n, device=device, generator=generator).to(dtype)
        b = torch.randn(n, n, device=device, generator=generator).to(dtype)
        out = torch.empty(n, n, device=device, dtype=dtype)
        work.append((device, lambda a=a, b=b, out=out: torch.matmul(a, b, out=out)))
        labels.append(timing.label(device, position))
    per_call = timing.per_call_seconds(work, seconds, during)
    return {name: 2 * n**3 / spent / 1e12 for name, spent in zip(labels, per_call, strict=True)}


def checks(figures: dict[str, float], absolute: float | None, n: int, peers: bool = True) -> list[Check]:
    """One row per GPU, held to the stricter of the catalog's threshold and the node's median share (``peers``
    False: the catalog's alone, for CPU stand-ins that are one device measured twice)."""
    limit, source = with_peers(figures, absolute, PEER_FRACTION if peers else None)
    return [judge("matmul", subject, tflops, "TFLOP/s", limit, ">=", f"bf16 {n}^3; threshold: {source or 'none'}")
            for subject, tflops in figures.items()]
