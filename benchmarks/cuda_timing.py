"""What the kernel benchmarks share: refusing to run without a GPU, random bf16 operands, and timing one call on the
device."""

from __future__ import annotations

import sys
from collections.abc import Callable

import torch


def cuda_missing(script: str) -> bool:
    """True (after saying so on stderr) when no CUDA device is visible: the caller exits 2."""
    if torch.cuda.is_available():
        return False
    print(f"error: {script} measures CUDA kernels; no CUDA device is visible", file=sys.stderr)
    return True


def timed_ms(run: Callable, repeats: int, warmup: int, prepare: Callable[[int], tuple] = lambda _i: ()) -> float:
    """Median device time (CUDA events) of ``run(*prepare(i))`` over ``repeats`` calls after ``warmup`` untimed
    ones; ``prepare`` builds each call's arguments outside the timed window (fresh copies of inputs run overwrites)."""
    times = []
    for i in range(warmup + repeats):
        arguments = prepare(i)
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        run(*arguments)
        end.record()
        torch.cuda.synchronize()
        if i >= warmup:
            times.append(begin.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def random_bf16(generator: torch.Generator, *shape: int, scale: float = 1.0) -> torch.Tensor:
    """A bf16 CUDA tensor of normal samples times ``scale``, drawn from ``generator`` (same operands every run)."""
    return (torch.randn(*shape, device="cuda", generator=generator) * scale).bfloat16()
