"""Device memory of one micro-step, measured at start-up, so the micro-batch can be picked to fit the GPU and a
setting that cannot fit stops in seconds with advice instead of an out-of-memory error on every rank.

Peak memory is affine in a micro-batch's rows: parameters, gradients and workspaces do not depend on them and every
activation is proportional to them. Two micro-steps of a few rows through the job's own step (compiled, under DDP,
with its kernels) measure that line on CUDA, so the figure holds for every path the job can take (a formula would
have to know what each compiler version keeps for backward). AdamW's two moments, allocated at the first optimizer
step, are added exactly. On the CPU nothing is measured: only a configured limit is checked, against the state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from training.config import ConfigError, TrainConfig

GIB = 1 << 30
AUTO_TOKENS = 65536
"""Tokens per micro-batch that the automatic pick stops at: on an H200, GPT-2 124M ran as fast at 128 x 1024 as at
64 x 1024 with twice the memory (benchmarks/TRAINING.md, "micro batch 128 1.000")."""
FILL = 0.9
"""Share of the device budget the automatic pick fills: the rest is for the caching allocator's rounding and
fragmentation and for NCCL's buffers, which are allocated outside it after the budget is read."""
PROBE_ROWS = (2, 4)
"""Rows of the two measured micro-steps (not 1: torch.compile specialises size-1 dimensions)."""


@dataclass(frozen=True)
class Footprint:
    """Peak bytes of a training micro-step as a function of its rows."""

    fixed: int
    """Parameters, gradients, workspaces: allocated whatever the rows."""
    per_row: int
    optimizer: int
    """AdamW's moments, not yet allocated when the line was measured."""

    def peak(self, rows: int) -> int:
        return self.fixed + self.per_row * rows + self.optimizer


def state_bytes(parameters: list[torch.nn.Parameter]) -> tuple[int, int]:
    """(parameters + gradients, AdamW's two moments) in bytes: each the parameters' own size, twice."""
    size = sum(p.numel() * p.element_size() for p in parameters)
    return 2 * size, 2 * size


def measure(run_rows: Callable[[int], None], device: torch.device, optimizer: int) -> Footprint:
    """The line through two measured micro-steps; ``run_rows(n)`` runs a forward and backward of n rows (the first
    call compiles and is not measured)."""
    run_rows(PROBE_ROWS[0])
    peaks = []
    for rows in PROBE_ROWS:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        run_rows(rows)
        torch.cuda.synchronize(device)
        peaks.append(torch.cuda.max_memory_allocated(device))
    per_row = max(0, (peaks[1] - peaks[0]) // (PROBE_ROWS[1] - PROBE_ROWS[0]))
    torch.cuda.reset_peak_memory_stats(device)
    return Footprint(fixed=peaks[0] - per_row * PROBE_ROWS[0], per_row=per_row, optimizer=optimizer)


def budget(cfg: TrainConfig, device: torch.device) -> int | None:
    """Bytes the job may use: the configured limit, else the CUDA device's free memory (read before the job
    allocates anything), else None (a CPU without a limit: unchecked)."""
    if cfg.memory_limit_gb > 0:
        return int(cfg.memory_limit_gb * GIB)
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    return None


def auto_micro_batch(footprint: Footprint | None, available: int | None, largest_share: int, seq_len: int) -> int:
    """The largest share up to AUTO_TOKENS, or failing that the largest power of two below it, whose peak fills at
    most FILL of the budget; 0 where not even one row fits."""
    rows = max(1, min(largest_share, AUTO_TOKENS // seq_len))
    if footprint is None or available is None:
        return rows
    limit = FILL * available
    if footprint.peak(rows) <= limit:
        return rows
    rows = 1 << (rows.bit_length() - 1) if rows & (rows - 1) else rows // 2
    while rows >= 1 and footprint.peak(rows) > limit:
        rows //= 2
    return rows


def describe(footprint: Footprint, rows: int) -> str:
    return (
        f"about {footprint.peak(rows) / GIB:.1f} GiB at {rows} sequences per micro-step (fixed "
        f"{footprint.fixed / GIB:.2f}, AdamW {footprint.optimizer / GIB:.2f}, activations "
        f"{footprint.per_row / GIB:.3f} per sequence)"
    )


def refuse(cfg: TrainConfig, device: torch.device, available: int, need: str, fitting: int) -> ConfigError:
    """The error for a run that does not fit, with what to change (``fitting``: the largest micro-batch that would
    fit, 0 if none)."""
    advice = []
    if fitting:
        advice.append(f"'micro_batch' at most {fitting}, or 0 to pick it (global_batch stays exact)")
    if not cfg.activation_checkpointing:
        advice.append("'activation_checkpointing' true")
    advice.append(f"a smaller 'model' than '{cfg.model}' or a shorter 'seq_len'")
    return ConfigError(
        f"Model '{cfg.model}' with seq_len={cfg.seq_len} needs {need}, but only {available / GIB:.2f} GiB is "
        f"available on {device}. Try " + ", or ".join(advice) + "."
    )


def check_state_fits(cfg: TrainConfig, parameters: list[torch.nn.Parameter], device: torch.device,
                     available: int | None) -> None:
    """Where nothing can be measured (the CPU), check the parameters, gradients and AdamW state alone."""
    if available is None:
        return
    state, optimizer = state_bytes(parameters)
    if state + optimizer > available:
        need = f"{(state + optimizer) / GIB:.2f} GiB for its parameters, gradients and AdamW state alone"
        raise refuse(cfg, device, available, need, 0)
