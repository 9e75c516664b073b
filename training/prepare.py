"""Set-up: everything the job needs before its first step, in the order every rank runs it (the collectives in it,
the resume's look-up, the kernels' agreement and the micro-batch's measurement, come in the same order on every
rank): the directories, the memory budget (read before the job allocates anything), the data, the state to resume
from (a survivor's memory, else the checkpoint), the model with its kernels, AdamW, DDP and torch.compile, and the
micro-batch that fits."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from training import memory, recovery, resume
from training.batching import StepSplit
from training.config import ConfigError, TrainConfig
from training.data import MicroBatch, SyntheticTokens, TokenFiles, open_source
from training.distributed import Dist
from training.model import GPT, Fused, select_attention_backend


@dataclass
class Prepared:
    """The job as set up on this rank, ready for its first step."""

    source: SyntheticTokens | TokenFiles
    resumed: resume.Resumed | None
    model: GPT
    params: list[torch.nn.Parameter]
    optimizer: torch.optim.Optimizer
    forward_backward: Callable[[MicroBatch], torch.Tensor]
    """One micro-step, as the job runs it (compiled, under DDP): returns its weighted loss."""
    autocast: torch.autocast
    half: bool
    """bf16 autocast."""
    compiled: bool
    split: StepSplit
    footprint: memory.Footprint | None
    """The measured footprint of the micro-batch (None where nothing is measured: the CPU)."""


def _make_dirs(cfg: TrainConfig) -> None:
    for name, path in (("run_dir", cfg.run_dir), ("checkpoint_dir", cfg.resolved_checkpoint_dir())):
        try:
            Path(path).mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ConfigError(
                f"Cannot create '{path}' (setting '{name}'): {err.strerror}. Choose a writable directory."
            ) from None


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


def _micro_step(model: GPT, ddp: DDP | None, compiled: bool, autocast: torch.autocast, cfg: TrainConfig
                ) -> Callable[[MicroBatch], torch.Tensor]:
    step_fn = ddp or model
    if compiled:
        step_fn = torch.compile(step_fn, mode=cfg.compile_mode)

    def forward_backward(micro: MicroBatch) -> torch.Tensor:
        """One micro-step; gradients all-reduced only on the rank's last one. Under torch.compile the rows are
        marked dynamic, and the first call (the memory probe's) has the rows the job trains on: the compiler's
        size-dependent choices are taken for them, and one graph serves every micro-step. A last chunk on the other
        side of one of those choices (Inductor's mix-order reduction starts at 5 Mi elements: 7 rows of gpt2 at
        1024 tokens) gets one more graph, and so do chunks of 1 row."""
        if compiled:
            for tensor in (micro.inputs, micro.targets):
                torch._dynamo.maybe_mark_dynamic(tensor, 0)
        quiet = ddp.no_sync() if ddp is not None and not micro.last else contextlib.nullcontext()
        with quiet:
            with autocast:
                loss = step_fn(micro.inputs, micro.targets) * micro.weight
            loss.backward()
        return loss.detach()

    return forward_backward


def _measure(cfg: TrainConfig, d: Dist, forward_backward: Callable[[MicroBatch], torch.Tensor],
             params: list[torch.nn.Parameter], optimizer: torch.optim.Optimizer) -> Callable[[int], memory.Footprint]:
    """``measure(rows)``: the footprint of the job's own micro-steps at ``rows`` random sequences."""

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

    return measure


def prepare(cfg: TrainConfig, d: Dist) -> Prepared:
    """Set the job up on this rank; ConfigError for settings that cannot run here (the message says which)."""
    cuda = d.device.type == "cuda"
    half = cfg.dtype == "bf16" or (cfg.dtype == "auto" and cuda)
    compiled = cfg.compile == "on" or (cfg.compile == "auto" and cuda)
    _make_dirs(cfg)
    available = memory.budget(cfg, d.device)  # before this job allocates anything
    source = open_source(cfg)
    resumed = recovery.load(cfg, d) or resume.load(cfg, d)  # a survivor's memory first, else the disk
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
    autocast = torch.autocast(device_type=d.device.type, dtype=torch.bfloat16, enabled=half)
    forward_backward = _micro_step(model, ddp, compiled, autocast, cfg)

    StepSplit(cfg.global_batch, d.world_size, 1)  # more ranks than sequences fails here, before the probe
    if not cuda:
        memory.check_state_fits(cfg, params, d.device, available)
    measure = _measure(cfg, d, forward_backward, params, optimizer) if cuda else None
    micro_batch, footprint = memory.pick_micro_batch(cfg, d, available, measure)
    return Prepared(source=source, resumed=resumed, model=model, params=params, optimizer=optimizer,
                    forward_backward=forward_backward, autocast=autocast, half=half, compiled=compiled,
                    split=StepSplit(cfg.global_batch, d.world_size, micro_batch), footprint=footprint)


def announce(cfg: TrainConfig, d: Dist, job: Prepared) -> None:
    """The run's shape on stderr, from the first rank."""
    if not d.is_main:
        return
    estimate = job.footprint.peak if job.footprint else None
    memory_line = f", memory estimate {estimate / memory.GIB:.1f} GiB" if estimate else ""
    print(
        f"model {cfg.model}: {job.model.num_params() / 1e6:.1f}M params, world {d.world_size}, "
        f"micro_batch {job.split.micro_batch} ({job.split.micro_steps} micro-steps, shares of {job.split.share(0)} "
        f"sequences or fewer) = global_batch {cfg.global_batch}, device {d.device}, compile {job.compiled}, "
        f"bf16 {job.half}, kernels {', '.join(job.model.fused.names()) or 'none'}{memory_line}",
        file=sys.stderr,
    )
