"""The memory probe: what it measures of a micro-step, which rows it measures, and the micro-batch it picks.

``memory.measure`` reads torch.cuda's allocator statistics; here they are a counting allocator's (``Allocator``),
and the micro-step is a stand-in that allocates as a training micro-step does: a transient the first time a shape
runs (compiling, tuning kernels), its activations, and gradients that stay until they are cleared.
"""

from __future__ import annotations

import multiprocessing
import tempfile

import pytest
import torch
import torch.distributed as dist

from training import memory
from training.batching import StepSplit
from training.config import ConfigError, TrainConfig
from training.distributed import Dist
from training.memory import AUTO_TOKENS, FILL, GIB, Footprint
from training.model import GPT

PARAMS = 3 * GIB
PER_ROW = GIB // 2
COMPILE = 40 * GIB
"""Bytes of the stand-in: parameters (and so each gradient), activations per row, the first call's transient."""


class Allocator:
    """Bytes allocated and their peak since the last reset, as torch.cuda reports them."""

    def __init__(self, capacity: int) -> None:
        self.capacity, self.allocated, self.peak, self.emptied = capacity, 0, 0, 0

    def take(self, size: int) -> None:
        if self.allocated + size > self.capacity:
            raise torch.OutOfMemoryError(f"tried to allocate {size} bytes")
        self.allocated += size
        self.peak = max(self.peak, self.allocated)

    def give(self, size: int) -> None:
        self.allocated -= size


class MicroStep:
    """Forward and backward of ``rows`` rows: the first gradients are allocated in backward and kept; later ones are
    added to them (the new gradient is a temporary)."""

    def __init__(self, allocator: Allocator) -> None:
        self.allocator, self.has_grads, self.shapes = allocator, False, set()
        allocator.take(PARAMS)

    def __call__(self, rows: int) -> None:
        if rows not in self.shapes:
            self.allocator.take(COMPILE)
            self.allocator.give(COMPILE)
            self.shapes.add(rows)
        self.allocator.take(PER_ROW * rows)
        self.allocator.take(PARAMS)
        if self.has_grads:
            self.allocator.give(PARAMS)
        self.has_grads = True
        self.allocator.give(PER_ROW * rows)


@pytest.fixture
def allocator(monkeypatch) -> Allocator:
    fake = Allocator(capacity=80 * GIB)

    def reset(device=None):
        fake.peak = fake.allocated

    def empty(*_):
        fake.emptied += 1

    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", reset)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: fake.peak)
    monkeypatch.setattr(torch.cuda, "empty_cache", empty)
    return fake


def test_the_measured_step_is_a_later_micro_step_of_the_rows_asked_for(allocator):
    """Not the first call (it compiles), and with the gradients of the one before held, as on every micro-step
    after a step's first: parameters + held gradients + activations + the new gradient."""
    footprint = memory.measure(MicroStep(allocator), torch.device("cuda"), rows=8, optimizer=2 * PARAMS)
    assert footprint == Footprint(rows=8, step=3 * PARAMS + 8 * PER_ROW, optimizer=2 * PARAMS)
    assert footprint.peak == 5 * PARAMS + 8 * PER_ROW


def test_running_out_of_memory_is_a_measurement_not_an_error(allocator):
    step = MicroStep(allocator)
    footprint = memory.measure(step, torch.device("cuda"), rows=160, optimizer=0)  # 80 GiB of activations
    assert footprint.step is None and footprint.peak is None and not footprint.fits(float("inf"))
    assert allocator.emptied == 1
    assert "ran out of memory" in memory.describe(footprint)


def test_an_out_of_memory_error_wrapped_by_the_compiler_counts_too_and_other_errors_propagate(allocator):
    def wrapped(rows):
        try:
            raise torch.OutOfMemoryError("while tuning a kernel")
        except torch.OutOfMemoryError as error:
            raise RuntimeError("backend compiler failed") from error

    assert memory.measure(wrapped, torch.device("cuda"), rows=4, optimizer=0).step is None

    def broken(rows):
        raise ValueError("a bug")

    with pytest.raises(ValueError, match="a bug"):
        memory.measure(broken, torch.device("cuda"), rows=4, optimizer=0)


def _line(fixed: int, per_row: int, convex_from: int = 10**9):
    """footprint_of for a peak of fixed + per_row x rows, steeper by half from ``convex_from`` rows; records the
    micro-batches it was asked about."""
    asked = []

    def footprint_of(micro_batch: int) -> Footprint:
        asked.append(micro_batch)
        step = fixed + per_row * micro_batch + per_row // 2 * max(0, micro_batch - convex_from)
        return Footprint(rows=micro_batch, step=step, optimizer=GIB)

    return footprint_of, asked


@pytest.mark.parametrize(
    ("budget_gib", "share", "expected", "asked"),
    [
        (100, 171, 64, [64]),  # capped at AUTO_TOKENS of 1024-token sequences
        (100, 40, 40, [40]),  # the whole share, when it fits
        (20, 171, 16, [64, 32, 16]),  # 3 + 16 / 2 = 11 <= 18 but 32 rows need 19 GiB
        (20, 31, 16, [31, 16]),  # not the share (31 rows need 18.5 GiB > 0.9 x 20), the power of two below it
        (3.5, 171, 0, [64, 32, 16, 8, 4, 2, 1]),  # not one sequence fits
    ],
)
def test_the_pick_is_the_largest_candidate_whose_measured_peak_fits(budget_gib, share, expected, asked):
    footprint_of, measured = _line(2 * GIB, GIB // 2)
    budget = int(budget_gib * GIB)
    rows, footprint = memory.auto_micro_batch(footprint_of, budget, share, seq_len=1024)
    assert (rows, measured) == (expected, asked)
    if rows:
        assert footprint.peak <= FILL * budget and rows <= min(share, AUTO_TOKENS // 1024)


def test_a_peak_that_grows_faster_at_more_rows_is_measured_where_the_job_runs():
    """Half a GiB per row, and a quarter more from 10 rows on: a line through micro-steps of 2 and 4 rows would pick
    64 (3 + 32 = 35 GiB <= 0.9 x 40); measured, 64 rows need 3 + 32 + 13.5 GiB, and the pick is 32."""
    footprint_of, _ = _line(2 * GIB, GIB // 2, convex_from=10)
    rows, footprint = memory.auto_micro_batch(footprint_of, 40 * GIB, 171, seq_len=1024)
    assert rows == 32 and footprint.peak == 3 * GIB + 16 * GIB + 11 * GIB // 2


def _dist(rank: int = 0, world_size: int = 1) -> Dist:
    group = dist.group.WORLD if world_size > 1 else None
    return Dist(rank=rank, local_rank=rank, node_rank=0, world_size=world_size, device=torch.device("cpu"),
                control_group=group)


def _measure_rows(step_of_rows, asked: list[int]):
    def measure(rows: int) -> Footprint:
        asked.append(rows)
        return Footprint(rows=rows, step=step_of_rows(rows), optimizer=GIB)

    return measure


def test_the_job_measures_the_rows_its_micro_steps_will_have():
    """100 sequences at micro-batch 64 are two micro-steps of 50: the probe runs 50 rows, not 64."""
    asked = []
    cfg = TrainConfig(global_batch=100, micro_batch=0, seq_len=1024)
    micro_batch, footprint = memory.pick_micro_batch(cfg, _dist(), 100 * GIB,
                                                     _measure_rows(lambda rows: GIB * rows, asked))
    assert (micro_batch, asked) == (64, [StepSplit(100, 1, 64).largest_chunk]) == (64, [50])
    assert footprint.peak == 51 * GIB


def test_a_configured_micro_batch_that_does_not_fit_is_refused_with_one_that_does():
    asked = []
    cfg = TrainConfig(global_batch=512, micro_batch=64, seq_len=1024)
    with pytest.raises(ConfigError) as refused:
        memory.pick_micro_batch(cfg, _dist(), 40 * GIB, _measure_rows(lambda rows: GIB * rows, asked))
    assert "'micro_batch' at most 32" in str(refused.value) and "about 65.0 GiB at 64 sequences" in str(refused.value)
    assert asked == [64, 32]  # 64 rows measured once: the configured one is also the first automatic candidate


def test_without_a_measurement_the_configured_or_the_first_candidate_is_used():
    assert memory.pick_micro_batch(TrainConfig(global_batch=512, micro_batch=5), _dist(), None, None) == (5, None)
    cfg = TrainConfig(global_batch=10_000, micro_batch=0, seq_len=32)
    assert memory.pick_micro_batch(cfg, _dist(), None, None) == (AUTO_TOKENS // 32, None)


def _rank(rank: int, store_path: str, results) -> None:
    """Rank 1 runs out of memory at 32 rows, and its peak is 1 GiB above rank 0's at every row count."""
    dist.init_process_group("gloo", init_method=f"file://{store_path}", rank=rank, world_size=2)

    def step(rows: int) -> int | None:
        return None if rank == 1 and rows == 32 else GIB * rows + rank * GIB

    asked = []
    cfg = TrainConfig(global_batch=64, micro_batch=0, seq_len=1024)
    results.put((rank, memory.pick_micro_batch(cfg, _dist(rank, 2), 200 * GIB, _measure_rows(step, asked)), asked))
    dist.destroy_process_group()


def test_every_rank_picks_alike_from_the_largest_peak_and_any_ranks_out_of_memory():
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    with tempfile.TemporaryDirectory() as store:
        ranks = [context.Process(target=_rank, args=(rank, f"{store}/store", results)) for rank in range(2)]
        for process in ranks:
            process.start()
        picked = {rank: (choice, asked) for rank, choice, asked in (results.get(timeout=60) for _ in ranks)}
        for process in ranks:
            process.join(timeout=30)
    for rank in range(2):
        (micro_batch, footprint), asked = picked[rank]
        assert asked == [32, 16] and micro_batch == 16 and footprint.step == 17 * GIB


def test_the_optimizer_term_is_the_state_the_jobs_adamw_keeps(tmp_path):
    """memory.state_bytes' AdamW term against the optimizer state the real job wrote after its first step (the
    moments; the step counts are a scalar per parameter)."""
    from train_helpers import train as run_job

    run_job(["--steps", "1", "--global-batch", "2", "--micro-batch", "1", "--eval-every", "0",
             "--checkpoint-every", "1", "--run-dir", str(tmp_path)])
    state = torch.load(next((tmp_path / "checkpoints").glob("step_*")) / "state.pt", weights_only=False)
    moments = [tensor for per_param in state["optimizer"]["state"].values() for name, tensor in per_param.items()
               if name != "step"]
    model = GPT.from_config(TrainConfig(**state["config"]), half=False)  # the tied head counted once
    assert sum(t.numel() * t.element_size() for t in moments) == memory.state_bytes(list(model.parameters()))[1] > 0
