"""Device memory of one micro-step, measured at start-up at the rows the job will train on, so the micro-batch can
be picked to fit the GPU and a setting that cannot fit stops in seconds with advice instead of an out-of-memory
error on every rank.

The job's own step (compiled, under DDP, with its kernels) runs at those rows, twice: the first call compiles, and
torch.compile takes decisions from the sizes it first sees, so probing at other rows would compile a graph the job
never runs (and that graph's memory). The second call is measured, and runs as every micro-step after a step's first
does: with the gradients of the one before held. A line through micro-steps of 2 and 4 rows without them fell
6.5% short of gpt2's peak at 64 rows with the job's kernels on an H200 (``benchmarks/TRAINING.md``): the gradients
(0.46 GiB), and 24 MiB per row that the peaks at 47 and 64 rows grow by beyond the line's slope, in a graph compiled
for other sizes. AdamW's two moments, allocated at the first optimizer step, are added exactly. A micro-batch that
does not fit is followed by smaller ones, each measured. On the CPU nothing is measured: only a configured limit is
checked, against the state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from training.batching import StepSplit
from training.config import ConfigError, TrainConfig
from training.distributed import Dist

GIB = 1 << 30
AUTO_TOKENS = 65536
"""Tokens per micro-batch that the automatic pick stops at: on an H200, GPT-2 124M ran as fast at 128 x 1024 as at
64 x 1024 with twice the memory (benchmarks/TRAINING.md, "micro batch 128 1.000")."""
FILL = 0.9
"""Share of the device budget the automatic pick fills: the rest is for the caching allocator's rounding and
fragmentation and for NCCL's buffers, which are allocated outside it after the budget is read."""
_OUT_OF_MEMORY = 1 << 62
"""A peak no device has: a rank's measurement that ran out of memory, in the ranks' maximum."""


@dataclass(frozen=True)
class Footprint:
    """Peak bytes of the job on one rank with micro-steps of ``rows`` sequences."""

    rows: int
    step: int | None
    """A micro-step's measured peak, the earlier micro-step's gradients held; None: it ran out of memory."""
    optimizer: int
    """AdamW's moments, not yet allocated when the step was measured."""

    @property
    def peak(self) -> int | None:
        return None if self.step is None else self.step + self.optimizer

    def fits(self, limit: float) -> bool:
        return self.step is not None and self.peak <= limit


def state_bytes(parameters: list[torch.nn.Parameter]) -> tuple[int, int]:
    """(parameters + gradients, AdamW's two moments) in bytes: each the parameters' own size, twice."""
    size = sum(p.numel() * p.element_size() for p in parameters)
    return 2 * size, 2 * size


def _out_of_memory(error: BaseException | None) -> bool:
    """``error`` is, or was caused by, running out of device memory (torch.compile wraps what fails while it
    compiles)."""
    while error is not None:
        if isinstance(error, torch.OutOfMemoryError):
            return True
        error = error.__cause__ or error.__context__
    return False


def measure(run_rows: Callable[[int], None], device: torch.device, rows: int, optimizer: int) -> Footprint:
    """The footprint of micro-steps of ``rows``: ``run_rows(n)`` runs a forward and backward of n rows, adding to
    the gradients. Its first call at a shape compiles and tunes kernels, and is not measured; the second is."""
    torch.cuda.synchronize(device)
    try:
        run_rows(rows)
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        run_rows(rows)
        torch.cuda.synchronize(device)
        step = torch.cuda.max_memory_allocated(device)
    except Exception as error:
        if not _out_of_memory(error):
            raise
        step = None
    if step is None:
        torch.cuda.empty_cache()  # what the failed step left cached is not held against the next, smaller one
    torch.cuda.reset_peak_memory_stats(device)
    return Footprint(rows=rows, step=step, optimizer=optimizer)


def candidates(largest_share: int, seq_len: int) -> list[int]:
    """The micro-batches the automatic pick tries, largest first: the share up to AUTO_TOKENS, then each power of
    two below it."""
    rows = max(1, min(largest_share, AUTO_TOKENS // seq_len))
    tried = []
    while rows >= 1:
        tried.append(rows)
        rows = 1 << (rows.bit_length() - 1) if rows & (rows - 1) else rows // 2
    return tried


def auto_micro_batch(footprint_of: Callable[[int], Footprint], available: int, largest_share: int,
                     seq_len: int) -> tuple[int, Footprint]:
    """The first of ``candidates`` whose footprint (``footprint_of(micro_batch)``, measured) fills at most FILL of
    ``available``, and that footprint; (0, the last one measured) where not even one sequence fits."""
    for micro_batch in candidates(largest_share, seq_len):
        footprint = footprint_of(micro_batch)
        if footprint.fits(FILL * available):
            return micro_batch, footprint
    return 0, footprint


def describe(footprint: Footprint) -> str:
    if footprint.step is None:
        return f"more than the device holds at {footprint.rows} sequences per micro-step (it ran out of memory)"
    return (
        f"about {footprint.peak / GIB:.1f} GiB at {footprint.rows} sequences per micro-step (of which AdamW's "
        f"moments {footprint.optimizer / GIB:.2f})"
    )


def budget(cfg: TrainConfig, device: torch.device) -> int | None:
    """Bytes the job may use: the configured limit, else the CUDA device's free memory (read before the job
    allocates anything), else None (a CPU without a limit: unchecked)."""
    if cfg.memory_limit_gb > 0:
        return int(cfg.memory_limit_gb * GIB)
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    return None


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


def pick_micro_batch(cfg: TrainConfig, d: Dist, available: int | None,
                     measure: Callable[[int], Footprint] | None) -> tuple[int, Footprint | None]:
    """The micro-batch and its footprint: the configured one if it fits, else an error naming one that does; 0
    (automatic) the largest that fills at most FILL of the budget. ``measure(rows)`` measures this rank's
    micro-steps of that many rows (None where nothing can be measured: the CPU). Every rank measures the same rows
    and decides from the smallest budget and the largest peak, so all decide alike."""
    largest_share = -(-cfg.global_batch // d.world_size)
    if measure is None:
        return cfg.micro_batch or candidates(largest_share, cfg.seq_len)[0], None
    available = d.smallest(available)
    measured: dict[int, Footprint] = {}

    def footprint_of(micro_batch: int) -> Footprint:
        """Measured at the most rows a micro-step of ``micro_batch`` has on any rank: the rows the job trains on."""
        rows = StepSplit(cfg.global_batch, d.world_size, micro_batch).largest_chunk
        if rows not in measured:
            mine = measure(rows)
            worst = -d.smallest(-(_OUT_OF_MEMORY if mine.step is None else mine.step))
            measured[rows] = replace(mine, step=None if worst == _OUT_OF_MEMORY else worst)
        return measured[rows]

    if cfg.micro_batch:
        footprint = footprint_of(cfg.micro_batch)
        if not footprint.fits(available):
            fitting, _ = auto_micro_batch(footprint_of, available, largest_share, cfg.seq_len)
            raise refuse(cfg, d.device, available, describe(footprint), fitting)
        return cfg.micro_batch, footprint
    micro_batch, footprint = auto_micro_batch(footprint_of, available, largest_share, cfg.seq_len)
    if not micro_batch:
        raise refuse(cfg, d.device, available, describe(footprint), 0)
    return micro_batch, footprint
