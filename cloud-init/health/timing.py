"""Timing the same work on every device of the node at once: CUDA events on each GPU's stream, so one slow GPU shows
as its own figure and all of them are measured in the time of one; the wall clock on the CPU (the tests)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import torch

CALIBRATION_CALLS = 3
Work = Sequence[tuple[torch.device, Callable[[], object]]]
"""(device, one call of the work on it), one entry per device measured (CPU stand-ins may repeat the device)."""


def label(device: torch.device, position: int) -> str:
    """The subject a device's rows carry: gpu<N> as nvidia-smi numbers it, cpu<position> for CPU stand-ins."""
    return f"gpu{device.index}" if device.type == "cuda" else f"cpu{position}"


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _cuda_run(work: Work, calls: list[int], during: Callable[[], None] | None) -> list[float]:
    events = []
    for device, _ in work:
        with torch.cuda.device(device):
            events.append((torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)))
            events[-1][0].record()
    for step in range(max(calls)):
        for (device, run), count in zip(work, calls, strict=True):
            if step < count:
                with torch.cuda.device(device):
                    run()
    for (device, _), (_, end) in zip(work, events, strict=True):
        with torch.cuda.device(device):
            end.record()
    if during:
        during()  # the queued work keeps every GPU busy meanwhile
    for device, _ in work:
        sync(device)
    return [begin.elapsed_time(end) / 1e3 for begin, end in events]


def _cpu_run(work: Work, calls: list[int], during: Callable[[], None] | None) -> list[float]:
    seconds = []
    for (_, run), count in zip(work, calls, strict=True):
        start = time.perf_counter()
        for _ in range(count):
            run()
        seconds.append(time.perf_counter() - start)
    if during:
        during()
    return seconds


def per_call_seconds(work: Work, seconds: float, during: Callable[[], None] | None = None) -> list[float]:
    """Seconds one call of each entry's work takes, timed over about ``seconds`` of calls on every device at once
    (after one untimed call and a short calibration). ``during`` runs while the timed calls are still queued on the
    GPUs, to sample the devices under load."""
    kinds = {device.type for device, _ in work}
    if kinds - {"cuda"} and "cuda" in kinds:
        raise ValueError("time CUDA devices and CPUs separately")
    run = _cuda_run if kinds == {"cuda"} else _cpu_run
    for device, call in work:
        call()
        sync(device)
    calibration = run(work, [CALIBRATION_CALLS] * len(work), None)
    calls = [max(CALIBRATION_CALLS, math.ceil(seconds * CALIBRATION_CALLS / max(spent, 1e-9))) for spent in calibration]
    spent = run(work, calls, during)
    return [total / count for total, count in zip(spent, calls, strict=True)]
