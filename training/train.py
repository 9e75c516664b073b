"""Train a GPT-style language model with PyTorch DDP: the job every gpufleet node starts.

The same entry point runs as one process, on one node, or elastically across nodes::

    python -m training.train --model tiny --steps 40
    torchrun --standalone --nproc-per-node=8 -m training.train --model gpt2
    torchrun --nnodes=1:4 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=HEAD:29400 \\
        -m training.train --model gpt2 --checkpoint-dir /var/lib/gpufleet/checkpoints

NCCL is used on GPUs and gloo on CPU. SIGTERM / SIGUSR1 (the spot watcher)
make every rank stop at the next step boundary after a checkpoint, exit code
0; the next start resumes from it, with any world size. Ranks that stop only
because a rank elsewhere was signalled (a spot node leaving) exit with code 75
instead, so their elastic agent restarts them and the job goes on without it.
When a node joins the running job, torchrun stops the workers with SIGTERM to re-form the job: the same stop, so the
re-formed job goes on from that step (torchrun restarts them then whatever their exit code).
Every node keeps its own copy of each checkpoint in its local checkpoint directory
(no shared storage needed); a resume starts from the newest copy any node holds.
The last stdout line on rank 0 is a JSON summary (also written to ``<run_dir>/summary.json``).
Bad settings exit with code 2 and a one-paragraph message on stderr.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import sys
import time
from pathlib import Path
from typing import NamedTuple

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from training import checkpoint, compile_cache, memory
from training.config import ConfigError, TrainConfig, parse_args
from training.data import ShardedBatches, TokenFileError, open_source
from training.distributed import Dist, setup
from training.metrics import MetricsWriter, mfu, peak_tflops
from training.model import GPT, select_attention_backend
from training.preflight import UnreachablePeers

# EX_TEMPFAIL: stopped with a checkpoint because another node is leaving; torchrun restarts this rank to go on.
EXIT_PEER_STOPPED = 75


class StopFlag:
    """Set by SIGTERM / SIGUSR1; the handler only records the request, the loop acts on it."""

    def __init__(self) -> None:
        self.signal_name: str | None = None
        for sig in (signal.SIGTERM, signal.SIGUSR1):
            signal.signal(sig, self._handle)

    def _handle(self, signum, _frame) -> None:
        self.signal_name = signal.Signals(signum).name


def lr_factor(cfg: TrainConfig):
    """Linear warm-up, then cosine decay to min_lr_ratio at the last step."""

    def factor(step: int) -> float:
        if step < cfg.warmup_steps:
            return (step + 1) / cfg.warmup_steps
        progress = min(1.0, (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps))
        return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return factor


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _mean_over_ranks(value: torch.Tensor, d: Dist) -> float:
    if d.enabled:
        value = value.clone()
        dist.all_reduce(value)
        value /= d.world_size
    return value.item()


def _save(cfg: TrainConfig, d: Dist, step: int, model, optimizer, scheduler, data: ShardedBatches) -> None:
    """Collective: gathers every rank's RNG state; the first rank of each node writes its node's own copy, so a
    node that outlives the others (no shared storage) still holds the newest checkpoint; all wait until every copy
    is durable. DDP keeps the state replicated, so the copies are identical."""
    rngs = d.all_gather_object(checkpoint.rng_state())
    if d.is_node_main:
        state = {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "step": step,
            "data_position": data.position,
            "world_size": d.world_size,
            "rng": rngs,
            "config": cfg.to_dict(),
        }
        checkpoint.save(Path(cfg.resolved_checkpoint_dir()), step, state, cfg.keep_checkpoints)
    if d.enabled:
        dist.barrier(group=d.control_group)


class Newest(NamedTuple):
    """Where the newest valid checkpoint is, as every rank agrees on it."""

    step: int
    source: int
    """The lowest rank whose node holds it."""
    here: bool
    """This rank's node holds it."""
    everywhere: bool
    """Every node holds it."""


def _newest_checkpoint(cfg: TrainConfig, d: Dist) -> Newest | None:
    """The newest valid checkpoint any node holds, or None where no node holds one (or resume is off).

    Only each node's first rank looks (verifying reads every byte); the answers are shared with every rank.
    """
    found = None
    if cfg.resume and d.is_node_main:
        found = checkpoint.latest_valid(Path(cfg.resolved_checkpoint_dir()))
    mine = (d.node_rank, checkpoint.step_of(found) if found else None) if d.is_node_main else None
    reports = d.all_gather_object(mine)
    node_steps = dict(filter(None, reports))
    newest = max((step for step in node_steps.values() if step is not None), default=None)
    if newest is None:
        return None
    source = next(rank for rank, report in enumerate(reports) if report and report[1] == newest)
    everywhere = all(step == newest for step in node_steps.values())
    return Newest(newest, source, node_steps[d.node_rank] == newest, everywhere)


def _check_compatible(cfg: TrainConfig, state: dict, where: str) -> None:
    """Refuse a checkpoint of another model, bias setting or global batch: its weights, schedule and data position
    do not fit. Checkpoints from before the 'bias' setting existed hold a model with biases."""
    config = state["config"]
    theirs = {"model": config["model"], "bias": config.get("bias", True), "global_batch": config["global_batch"]}
    ours = {name: getattr(cfg, name) for name in theirs}
    if theirs != ours:
        raise ConfigError(
            f"Checkpoint {where} was written with {_settings(theirs)}, but this run has {_settings(ours)}. "
            "Use the checkpoint's settings or another 'checkpoint_dir' (or 'resume' false)."
        )


def _settings(values: dict) -> str:
    return ", ".join(f"{name}={value!r}" for name, value in values.items())


def _receive(cfg: TrainConfig, d: Dist, newest: Newest, root: Path) -> tuple[dict, str]:
    """(state, description) of the newest checkpoint, sent by the source rank to every rank as the state file's
    bytes; the nodes that lacked it write those bytes, so they hold an identical copy from now on.

    Cost: the whole file (about 12 bytes per parameter with AdamW) goes pickled through the gloo control group to
    each rank, and every rank holds it in host memory twice (bytes and state) while loading: slow for large models,
    but it happens once, only after a node lost its newest checkpoint or joined empty.
    """
    path = checkpoint.step_path(root, newest.step)
    mine = (path / checkpoint.STATE).read_bytes() if d.rank == newest.source else None
    data = d.broadcast_object(mine, src=newest.source)
    state = checkpoint.loads(data)
    where = f"{path.name} of rank {newest.source}'s node, sent to the nodes without it"
    _check_compatible(cfg, state, where)
    if d.is_node_main and not newest.here:
        checkpoint.save_bytes(root, newest.step, data, cfg.keep_checkpoints)
    return state, where


def _resume(cfg: TrainConfig, d: Dist, model, optimizer, scheduler) -> tuple[int, int, int | None]:
    """Restore the newest valid checkpoint any node holds; returns (step, data position, resumed_from_step).

    Where every node holds it, each rank reads its own node's copy; otherwise it is sent from a node that has it.
    """
    newest = _newest_checkpoint(cfg, d)
    if newest is None:
        return 0, 0, None
    root = Path(cfg.resolved_checkpoint_dir())
    if newest.everywhere:
        path = checkpoint.step_path(root, newest.step)
        state, where = checkpoint.read(path), str(path)
        _check_compatible(cfg, state, where)
    else:
        state, where = _receive(cfg, d, newest, root)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    rngs = state["rng"]
    checkpoint.set_rng_state(rngs[d.rank] if d.rank < len(rngs) else rngs[0])
    if d.is_main:
        print(
            f"resumed from {where} (step {state['step']}, written by {state['world_size']} ranks, now {d.world_size})",
            file=sys.stderr,
        )
    return state["step"], state["data_position"], state["step"]


def run(cfg: TrainConfig, d: Dist, started: float) -> dict:
    accum = cfg.accum_steps(d.world_size)
    cuda = d.device.type == "cuda"
    half = cfg.dtype == "bf16" or (cfg.dtype == "auto" and cuda)
    use_compile = cfg.compile == "on" or (cfg.compile == "auto" and cuda)
    stop = StopFlag()
    for name, path in (("run_dir", cfg.run_dir), ("checkpoint_dir", cfg.resolved_checkpoint_dir())):
        try:
            Path(path).mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ConfigError(
                f"Cannot create '{path}' (setting '{name}'): {err.strerror}. Choose a writable directory."
            ) from None
    torch.manual_seed(cfg.seed)
    select_attention_backend(cfg.sdpa_backend)

    model = GPT.from_config(cfg, half, cuda).to(d.device)
    memory.check_fits(cfg, model.num_params(), d.device, half, model.fused_loss, model.fp8_head)
    if model.fused_mlp:
        from training.fused_mlp import check_available

        check_available(d.device, cfg.bias)
    optimizer = torch.optim.AdamW(
        model.param_groups(cfg.weight_decay), lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), fused=cuda
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor(cfg))
    step, position, resumed_from = _resume(cfg, d, model, optimizer, scheduler)
    try:
        source = open_source(cfg.data, cfg.size.data_vocab, cfg.seq_len, cfg.seed)
    except (OSError, ValueError) as err:
        raise ConfigError(
            f"Cannot read training data: {err}. Set 'data' to 'synthetic' or a uint16 .bin file."
        ) from None
    data = ShardedBatches(source, d.rank, d.world_size, cfg.micro_batch, accum, position, d.device, prefetch=True)

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

    writer = MetricsWriter(Path(cfg.run_dir), d.is_main, cfg.steps, step, cfg.progress)
    flops_per_token = model.flops_per_token()
    peak = peak_tflops(d.device, cfg.peak_tflops)
    tokens_per_step = cfg.global_batch * cfg.seq_len
    if d.is_main:
        print(
            f"model {cfg.model}: {model.num_params() / 1e6:.1f}M params, world {d.world_size}, "
            f"micro_batch {cfg.micro_batch} x accum {accum} = global_batch {cfg.global_batch}, "
            f"device {d.device}, compile {use_compile}, bf16 {half}, fp8 output layer {model.fp8_head}",
            file=sys.stderr,
        )

    first_step = step
    planned = cfg.steps - first_step
    if cfg.stop_after_steps:
        planned = min(planned, cfg.stop_after_steps)
    warmup = max(0, min(cfg.timing_warmup_steps, planned - 1))
    seconds_to_first_step = None
    checkpoints_written: list[int] = []
    checkpoint_seconds = 0.0
    stop_now = False
    loss_value = float("nan")
    last_log = timed_from = (time.perf_counter(), step)
    loss_sum = torch.zeros((), device=d.device)
    while step < cfg.steps:
        batches = data.next_step()
        for micro, (inputs, targets) in enumerate(batches):
            sync_grads = micro == accum - 1
            quiet = ddp.no_sync() if ddp is not None and not sync_grads else contextlib.nullcontext()
            with quiet:
                with autocast:
                    loss = step_fn(inputs, targets) / accum
                loss.backward()
            loss_sum += loss.detach()
        if cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1

        if seconds_to_first_step is None:
            _sync(d.device)
            seconds_to_first_step = time.perf_counter() - started
        if warmup and step - first_step == warmup:
            _sync(d.device)
            timed_from = (time.perf_counter(), step)

        stop_now = d.any_true(stop.signal_name is not None)
        stopping = stop_now or step == cfg.steps or (cfg.stop_after_steps and step - first_step >= cfg.stop_after_steps)
        if step % cfg.log_every == 0 or stopping:
            loss_value = _mean_over_ranks(loss_sum, d) / (step - last_log[1])
            now = time.perf_counter()
            interval_steps = step - last_log[1]
            step_time = (now - last_log[0]) / interval_steps
            tokens_per_s = tokens_per_step / step_time
            writer.log(
                step,
                {
                    "loss": loss_value,
                    "tokens_per_s": tokens_per_s,
                    "step_time_s": step_time,
                    "mfu": mfu(flops_per_token, tokens_per_s, d.world_size, peak),
                    "lr": scheduler.get_last_lr()[0],
                },
            )
            last_log = (now, step)
            loss_sum.zero_()
        else:
            writer.advance(step)
        due = cfg.checkpoint_every and step % cfg.checkpoint_every == 0
        if due or (stopping and (stop_now or cfg.checkpoint_at_end or step < cfg.steps)):
            _sync(d.device)
            began = time.perf_counter()
            _save(cfg, d, step, model, optimizer, scheduler, data)
            checkpoints_written.append(step)
            # Checkpoint time is reported apart, not folded into step time and tokens/s.
            spent = time.perf_counter() - began
            checkpoint_seconds += spent
            last_log = (last_log[0] + spent, last_log[1])
            timed_from = (timed_from[0] + spent, timed_from[1])
        if stopping:
            break

    _sync(d.device)
    end = time.perf_counter()
    writer.close()
    timed_steps = step - timed_from[1]
    step_time = (end - timed_from[0]) / timed_steps if timed_steps else None
    tokens_per_s = tokens_per_step / step_time if step_time else 0.0
    return {
        "steps_completed": step,
        "steps_this_run": step - first_step,
        "final_loss": loss_value,
        "tokens_per_s": tokens_per_s,
        "step_time_s": step_time,
        "mfu": mfu(flops_per_token, tokens_per_s, d.world_size, peak),
        "peak_tflops": peak,
        "world_size": d.world_size,
        "global_batch": cfg.global_batch,
        "micro_batch": cfg.micro_batch,
        "accum_steps": accum,
        "seq_len": cfg.seq_len,
        "model": cfg.model,
        "n_params": model.num_params(),
        "device": torch.cuda.get_device_name(d.device) if cuda else "cpu",
        "fp8_output_layer": model.fp8_head,
        "seconds_to_first_step": seconds_to_first_step,
        "checkpoints_written": checkpoints_written,
        "checkpoint_seconds": checkpoint_seconds,
        "resumed_from_step": resumed_from,
        "stopped_by_signal": stop_now,
        "signal": stop.signal_name,
        "data_position": data.position,
    }


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    compile_cache.isolate()  # before anything imports torch._dynamo, which fixes the cache directory on import
    try:
        cfg = parse_args(argv)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        d = setup(cfg.device)
    except UnreachablePeers as err:
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
        d.close()
    if d.is_main:
        (Path(cfg.run_dir) / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        print(json.dumps(summary), flush=True)
    return EXIT_PEER_STOPPED if summary["stopped_by_signal"] and summary["signal"] is None else 0


if __name__ == "__main__":
    sys.exit(main())
