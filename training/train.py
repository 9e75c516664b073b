"""Train a GPT-style language model with PyTorch DDP: the job every gpufleet node starts.

The same entry point runs as one process, on one node, or elastically across nodes::

    python -m training.train --model tiny --steps 40
    torchrun --standalone --nproc-per-node=8 -m training.train --model gpt2
    torchrun --nnodes=1:4 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=HEAD:29400 \\
        -m training.train --model gpt2 --checkpoint-dir /var/lib/gpufleet/checkpoints

Every optimizer step trains on exactly ``global_batch`` sequences, the same ones at any world size
(``training.batching``), so the job runs at any number of ranks up to ``global_batch`` and a resume after the world
size changed goes on as if it had not. NCCL is used on GPUs and gloo on CPU.

Exit codes: 0 when the run is done, or when SIGTERM / SIGUSR1 (the spot watcher) reached this rank's node and the
job stopped at a step boundary with a checkpoint; 75 on the other ranks of that stop (they stopped only because a
rank elsewhere was signalled: a spot node leaving), so their elastic agent restarts them and the job goes on without
it; 2 for settings that cannot run (a one-paragraph message on stderr) and for a run whose loss or gradient norm
stopped being finite (the checkpoints written before stay the newest). When a node joins the running job, torchrun
stops the workers with SIGTERM to re-form the job: the same stop, so the re-formed job goes on from that step.
Every node keeps its own copy of each checkpoint in its local checkpoint directory (no shared storage needed); a
resume starts from the newest copy any node holds. The last stdout line on rank 0 is a JSON summary (also written
to ``<run_dir>/summary.json``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from training import checkpoint, compile_cache, memory, resume
from training.batching import StepSplit
from training.config import ConfigError, TrainConfig, parse_args
from training.data import MicroBatch, ShardedBatches, TokenFileError, open_source
from training.distributed import Dist, setup
from training.metrics import MetricsWriter, mfu, peak_tflops
from training.model import GPT, Fused, select_attention_backend
from training.preflight import MissingPeers, UnreachablePeers
from training.schedule import learning_rate

# EX_TEMPFAIL: stopped with a checkpoint because another node is leaving; torchrun restarts this rank to go on.
EXIT_PEER_STOPPED = 75
_OUT_OF_MEMORY = 1 << 62
"""A peak no device has: a rank's measurement that ran out of memory, in the ranks' maximum."""


class Diverged(ConfigError):
    """The loss or the gradient norm is no longer finite: going on would only write a broken checkpoint."""


class StopFlag:
    """Set by SIGTERM / SIGUSR1; the handler only records the request (and when), the loop acts on it."""

    def __init__(self) -> None:
        self.signal_name: str | None = None
        self.at: float | None = None
        for sig in (signal.SIGTERM, signal.SIGUSR1):
            signal.signal(sig, self._handle)

    def _handle(self, signum, _frame) -> None:
        self.signal_name = signal.Signals(signum).name
        if self.at is None:
            self.at = time.monotonic()


class Saves:
    """This rank's side of the checkpoints: the collective snapshot, the node's background write, and whether a stop
    request is covered by a save that was under way when it came (then that save is the stop's checkpoint)."""

    def __init__(self, cfg: TrainConfig, d: Dist) -> None:
        self.cfg, self.d = cfg, d
        self.writer = checkpoint.Writer() if d.is_node_main else None
        self.written: list[int] = []
        self.blocking_seconds = 0.0
        self._began = self._ended = float("-inf")

    def save(self, step: int, model, optimizer, position: int) -> float:
        """Snapshot the state (collective: every rank's RNG state is gathered) and hand it to the node's writer;
        returns the seconds the loop waited."""
        began = time.perf_counter()
        self._began = time.monotonic()
        rngs = self.d.all_gather_object(checkpoint.rng_state())
        if self.writer is not None:
            state = {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "step": step,
                "data_position": position,
                "world_size": self.d.world_size,
                "rng": rngs,
                "config": self.cfg.to_dict(),
            }
            self.writer.submit(Path(self.cfg.resolved_checkpoint_dir()), step, checkpoint.snapshot(state),
                               self.cfg.keep_checkpoints)
        self.written.append(step)
        spent = time.perf_counter() - began
        self.blocking_seconds += spent
        self._ended = time.monotonic()
        return spent

    def covers(self, stop: StopFlag) -> bool:
        """A write is still under way, or the stop request came while the last save was being taken."""
        in_flight = self.writer is not None and self.writer.busy
        return in_flight or (stop.at is not None and self._began <= stop.at <= self._ended)

    def drain(self) -> None:
        """After a failure: let a write under way finish (it holds a good state), whatever became of it."""
        with contextlib.suppress(Exception):
            if self.writer is not None:
                self.writer.wait()

    def finish(self) -> None:
        """Wait until every node's copy is durable."""
        if self.writer is not None:
            self.writer.wait()
            self._ended = time.monotonic()
        self.d.barrier()

    @property
    def write_seconds(self) -> float:
        return self.writer.seconds if self.writer is not None else 0.0


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _sum_over_ranks(values: torch.Tensor, d: Dist) -> list[float]:
    if d.enabled:
        values = values.clone()
        dist.all_reduce(values)
    return values.tolist()


def _make_dirs(cfg: TrainConfig) -> None:
    for name, path in (("run_dir", cfg.run_dir), ("checkpoint_dir", cfg.resolved_checkpoint_dir())):
        try:
            Path(path).mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ConfigError(
                f"Cannot create '{path}' (setting '{name}'): {err.strerror}. Choose a writable directory."
            ) from None


def _pick_micro_batch(cfg: TrainConfig, d: Dist, available: int | None,
                      measure: Callable[[int], memory.Footprint] | None) -> tuple[int, memory.Footprint | None]:
    """The micro-batch and its footprint: the configured one if it fits, else an error naming one that does; 0
    (automatic) the largest that fills at most memory.FILL of the budget. ``measure(rows)`` measures this rank's
    micro-steps of that many rows (None where nothing can be measured: the CPU). Every rank measures the same rows
    and decides from the smallest budget and the largest peak, so all decide alike."""
    largest_share = -(-cfg.global_batch // d.world_size)
    if measure is None:
        return cfg.micro_batch or memory.candidates(largest_share, cfg.seq_len)[0], None
    available = d.smallest(available)
    measured: dict[int, memory.Footprint] = {}

    def footprint_of(micro_batch: int) -> memory.Footprint:
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
            fitting, _ = memory.auto_micro_batch(footprint_of, available, largest_share, cfg.seq_len)
            raise memory.refuse(cfg, d.device, available, memory.describe(footprint), fitting)
        return cfg.micro_batch, footprint
    micro_batch, footprint = memory.auto_micro_batch(footprint_of, available, largest_share, cfg.seq_len)
    if not micro_batch:
        raise memory.refuse(cfg, d.device, available, memory.describe(footprint), 0)
    return micro_batch, footprint


def _kernels(cfg: TrainConfig, d: Dist, half: bool) -> Fused:
    """The fused kernels every rank passed the self-test of (``training.kernels``; none with kernels 'off')."""
    if cfg.kernels == "off":
        return Fused()
    try:
        from training.kernels import select
    except ImportError as error:  # a code bundle without them: the job still starts
        select = None
        fused, warnings = Fused(), [f"warning: the job's kernels are off: {error}; PyTorch's ops run instead"]
    if select is not None:
        fused, warnings = select(d.device, half, cfg.bias)
    for warning in warnings:
        print(f"rank {d.rank}: {warning}", file=sys.stderr)
    missing = d.any_true(fused.mlp is None, fused.head_loss is None, not fused.fp8_head)
    return fused.keep(*(not gone for gone in missing))


def run(cfg: TrainConfig, d: Dist, started: float) -> dict:
    cuda = d.device.type == "cuda"
    half = cfg.dtype == "bf16" or (cfg.dtype == "auto" and cuda)
    use_compile = cfg.compile == "on" or (cfg.compile == "auto" and cuda)
    stop = StopFlag()
    _make_dirs(cfg)
    available = memory.budget(cfg, d.device)  # before this job allocates anything
    source = open_source(cfg)
    resumed = resume.load(cfg, d)
    torch.manual_seed(cfg.seed)
    select_attention_backend(cfg.sdpa_backend)

    model = GPT.from_config(cfg, half, _kernels(cfg, d, half)).to(d.device)
    if cfg.dtype == "fp64":
        model = model.double()
    torch.manual_seed(cfg.seed + d.rank)  # every rank its own dropout masks (a resume restores each rank's stream)
    params = list(model.parameters())
    optimizer = torch.optim.AdamW(
        model.param_groups(cfg.weight_decay), lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), fused=cuda
    )
    ddp = None
    if d.enabled:
        ddp = DDP(
            model,
            device_ids=[d.local_rank] if cuda else None,
            bucket_cap_mb=cfg.bucket_cap_mb,
            gradient_as_bucket_view=True,
        )
    step_fn = ddp or model
    if use_compile:
        step_fn = torch.compile(step_fn, mode=cfg.compile_mode)
    autocast = torch.autocast(device_type=d.device.type, dtype=torch.bfloat16, enabled=half)

    def forward_backward(micro: MicroBatch) -> torch.Tensor:
        """One micro-step; gradients all-reduced only on the rank's last one. Under torch.compile the rows are
        marked dynamic, and the first call (the memory probe's) has the rows the job trains on: the compiler's
        size-dependent choices are taken for them, and one graph serves every micro-step. A last chunk on the other
        side of one of those choices (Inductor's mix-order reduction starts at 5 Mi elements: 7 rows of gpt2 at
        1024 tokens) gets one more graph, and so do chunks of 1 row."""
        if use_compile:
            for tensor in (micro.inputs, micro.targets):
                torch._dynamo.maybe_mark_dynamic(tensor, 0)
        quiet = ddp.no_sync() if ddp is not None and not micro.last else contextlib.nullcontext()
        with quiet:
            with autocast:
                loss = step_fn(micro.inputs, micro.targets) * micro.weight
            loss.backward()
        return loss.detach()

    def probe_rows(rows: int) -> None:
        """A micro-step of ``rows`` random sequences, adding to the gradients as the job's own micro-steps do."""
        generator = torch.Generator(device=d.device).manual_seed(0)
        tokens = torch.randint(0, cfg.size.data_vocab, (rows, cfg.seq_len + 1), device=d.device, generator=generator)
        forward_backward(MicroBatch(tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous(), 1.0, False))

    def measure(rows: int) -> memory.Footprint:
        try:
            return memory.measure(probe_rows, d.device, rows, memory.state_bytes(params)[1])
        finally:
            optimizer.zero_grad(set_to_none=True)

    StepSplit(cfg.global_batch, d.world_size, 1)  # more ranks than sequences fails here, before the probe
    if not cuda:
        memory.check_state_fits(cfg, params, d.device, available)
    micro_batch, footprint = _pick_micro_batch(cfg, d, available, measure if cuda else None)
    split = StepSplit(cfg.global_batch, d.world_size, micro_batch)

    step, position = resume.restore(cfg, d, resumed, model, optimizer) if resumed else (0, 0)
    data = ShardedBatches(source, split, d.rank, position, d.device, prefetch=True, sequence_log=cfg.sequence_log)
    writer = MetricsWriter(Path(cfg.run_dir), d.is_main, cfg.steps, step, cfg.progress)
    flops_per_token = model.flops_per_token()
    peak = peak_tflops(d.device, cfg.peak_tflops)
    tokens_per_step = cfg.global_batch * cfg.seq_len
    estimate = footprint.peak if footprint else None  # measured at split.largest_chunk rows
    if d.is_main:
        memory_line = f", memory estimate {estimate / memory.GIB:.1f} GiB" if estimate else ""
        print(
            f"model {cfg.model}: {model.num_params() / 1e6:.1f}M params, world {d.world_size}, "
            f"micro_batch {micro_batch} ({split.micro_steps} micro-steps, shares of {split.share(0)} sequences or "
            f"fewer) = global_batch {cfg.global_batch}, device {d.device}, compile {use_compile}, bf16 {half}, "
            f"kernels {', '.join(model.fused.names()) or 'none'}{memory_line}",
            file=sys.stderr,
        )

    saves = Saves(cfg, d)
    first_step = step
    planned = cfg.steps - first_step
    if cfg.stop_after_steps:
        planned = min(planned, cfg.stop_after_steps)
    warmup = max(0, min(cfg.timing_warmup_steps, planned - 1))
    seconds_to_first_step = None
    stop_now = covered = False
    loss_value = val_loss = grad_norm = float("nan")
    last_log = timed_from = (time.perf_counter(), step)
    loss_sum = torch.zeros((), device=d.device, dtype=torch.float64)
    nonfinite = torch.zeros((), device=d.device, dtype=torch.float64)
    norm = torch.zeros((), device=d.device)
    lr = learning_rate(cfg, step)

    def check_finite(upto: int) -> None:
        """Stop with exit 2 if any step up to ``upto`` had a non-finite loss or gradient norm (every rank agrees:
        the flag is summed over ranks)."""
        if _sum_over_ranks(nonfinite.reshape(1), d)[0]:
            raise Diverged(
                f"The loss or the gradient norm stopped being finite by step {upto} (the last logged loss was "
                f"{loss_value:.4g}). No checkpoint was written after it; the newest is "
                f"{max(saves.written, default='none from this run')}. Lower 'lr', raise 'warmup_steps' or set "
                "'grad_clip', then resume."
            )

    try:
        while step < cfg.steps:
            lr = learning_rate(cfg, step)
            for group in optimizer.param_groups:
                group["lr"] = lr
            step_loss = torch.zeros((), device=d.device, dtype=torch.float64)
            for micro in data.next_step():
                step_loss += forward_backward(micro)
            norm = torch.nn.utils.get_total_norm([p.grad for p in params if p.grad is not None])
            if cfg.grad_clip > 0:
                torch.nn.utils.clip_grads_with_norm_(params, cfg.grad_clip, norm)
            nonfinite += (~torch.isfinite(norm)) | (~torch.isfinite(step_loss))
            loss_sum += step_loss
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1

            if seconds_to_first_step is None:
                _sync(d.device)
                seconds_to_first_step = time.perf_counter() - started
            if warmup and step - first_step == warmup:
                _sync(d.device)
                timed_from = (time.perf_counter(), step)

            stop_now, covered = d.any_true(stop.signal_name is not None, saves.covers(stop))
            ran_out = bool(cfg.stop_after_steps) and step - first_step >= cfg.stop_after_steps
            stopping = stop_now or step == cfg.steps or ran_out
            paused = 0.0
            evaluating = bool(cfg.eval_every and cfg.eval_sequences) and (
                step % cfg.eval_every == 0 or step == cfg.steps
            )
            if step % cfg.log_every == 0 or stopping or evaluating:
                summed_loss, flagged = _sum_over_ranks(torch.stack([loss_sum, nonfinite]), d)
                interval_steps = step - last_log[1]
                loss_value = summed_loss / d.world_size / interval_steps
                grad_norm = norm.item()
                if flagged:
                    check_finite(step)
                now = time.perf_counter()
                step_time = (now - last_log[0]) / interval_steps
                tokens_per_s = tokens_per_step / step_time
                values = {
                    "loss": loss_value,
                    "grad_norm": grad_norm,
                    "lr": lr,
                    "tokens_per_s": tokens_per_s,
                    "step_time_s": step_time,
                    "mfu": mfu(flops_per_token, tokens_per_s, d.world_size, peak),
                }
                if evaluating:
                    val_loss = _evaluate(model, data, autocast, d)
                    values["val_loss"] = val_loss
                    paused += time.perf_counter() - now
                writer.log(step, values)
                last_log = (now, step)
                loss_sum.zero_()
            else:
                writer.advance(step)
            due = cfg.checkpoint_every and step % cfg.checkpoint_every == 0
            if stop_now and covered:
                pass  # the save under way when the stop came is its checkpoint: no second one
            elif due or (stopping and (stop_now or cfg.checkpoint_at_end or step < cfg.steps)):
                check_finite(step)
                _sync(d.device)
                paused += saves.save(step, model, optimizer, data.position)
            # Checkpoint and validation time are reported apart, not folded into step time and tokens/s.
            last_log = (last_log[0] + paused, last_log[1])
            timed_from = (timed_from[0] + paused, timed_from[1])
            if stopping:
                break
    except BaseException:
        saves.drain()
        raise

    _sync(d.device)
    end = time.perf_counter()
    saves.finish()
    data.close()
    writer.close()
    timed_steps = step - timed_from[1]
    step_time = (end - timed_from[0]) / timed_steps if timed_steps else None
    tokens_per_s = tokens_per_step / step_time if step_time else 0.0
    return {
        "steps_completed": step,
        "steps_this_run": step - first_step,
        "final_loss": loss_value,
        "val_loss": val_loss,
        "grad_norm": grad_norm,
        "lr": lr,
        "tokens_per_s": tokens_per_s,
        "step_time_s": step_time,
        "mfu": mfu(flops_per_token, tokens_per_s, d.world_size, peak),
        "peak_tflops": peak,
        "world_size": d.world_size,
        "global_batch": cfg.global_batch,
        "micro_batch": micro_batch,
        "micro_steps": split.micro_steps,
        "seq_len": cfg.seq_len,
        "model": cfg.model,
        "n_params": model.num_params(),
        "device": torch.cuda.get_device_name(d.device) if cuda else "cpu",
        "kernels": model.fused.names(),
        "fp8_output_layer": model.fused.fp8_head,
        "memory_estimate_bytes": estimate,
        "memory_peak_bytes": torch.cuda.max_memory_allocated(d.device) if cuda else None,
        "compiled_graphs": torch._dynamo.utils.counters["stats"]["unique_graphs"] if use_compile else 0,
        "graph_breaks": sum(torch._dynamo.utils.counters["graph_break"].values()) if use_compile else 0,
        "seconds_to_first_step": seconds_to_first_step,
        "checkpoints_written": saves.written,
        "checkpoint_seconds": saves.blocking_seconds,
        "checkpoint_write_seconds": saves.write_seconds,
        "resumed_from_step": first_step if resumed else None,
        "stopped_by_signal": stop_now,
        "stop_covered_by_earlier_save": stop_now and covered,
        "signal": stop.signal_name,
        "data_position": data.position,
    }


@torch.no_grad()
def _evaluate(model: GPT, data: ShardedBatches, autocast, d: Dist) -> float:
    """The mean loss over the held-out set (every rank takes its part; the model as is, not compiled)."""
    total = torch.zeros(1, device=next(model.parameters()).device, dtype=torch.float64)
    for micro in data.held_out():
        with autocast:
            total += model(micro.inputs, micro.targets).double() * micro.weight
    return _sum_over_ranks(total, d)[0]


def _world(cfg: TrainConfig) -> Dist:
    """The job's world; on a gpufleet node (gpufleet-train sets GF_HEALTH_CONFIG) once it passed the cluster
    acceptance (cloud-init/health/job.py): a node it names is reported and leaves, the others restart without it."""
    if not os.environ.get("GF_HEALTH_CONFIG"):
        return setup(cfg.device)
    from health.job import accepted_world  # the node's code bundle, cloud-init/ on PYTHONPATH

    return accepted_world(setup, cfg.device, cfg.bucket_cap_mb)


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    compile_cache.isolate()  # before anything imports torch._dynamo, which fixes the cache directory on import
    try:
        cfg = parse_args(argv)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        d = _world(cfg)
    except (UnreachablePeers, MissingPeers) as err:
        if os.environ.get("LOCAL_RANK", "0") == "0":
            print(f"error: {err}", file=sys.stderr)
        return 1
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        summary = run(cfg, d, started)
    except ConfigError as err:
        if d.is_main or isinstance(err, TokenFileError):
            print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        # The job is over: a stop request now has nothing to stop. Ignored rather than left to Python, which puts
        # the default action (death by the signal) back while the interpreter shuts down.
        for sig in (signal.SIGTERM, signal.SIGUSR1):
            signal.signal(sig, signal.SIG_IGN)
        d.close()
    if d.is_main:
        (Path(cfg.run_dir) / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        print(json.dumps(summary), flush=True)
    return EXIT_PEER_STOPPED if summary["stopped_by_signal"] and summary["signal"] is None else 0


if __name__ == "__main__":
    sys.exit(main())
