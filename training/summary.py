"""The run's summary: the last JSON line rank 0 prints and writes to ``<run_dir>/summary.json``, from the step loop
once it is done (throughput over the timed steps only: after ``timing_warmup_steps``, without checkpoints and
validation)."""

from __future__ import annotations

import torch

from training.config import TrainConfig
from training.distributed import Dist
from training.loop import StepLoop
from training.metrics import mfu


def summary(cfg: TrainConfig, d: Dist, loop: StepLoop) -> dict:
    job, cuda = loop.job, d.device.type == "cuda"
    timed_steps = loop.step - loop.timed_from[1]
    step_time = (loop.end - loop.timed_from[0]) / timed_steps if timed_steps else None
    tokens_per_s = loop.tokens_per_step / step_time if step_time else 0.0
    return {
        "steps_completed": loop.step,
        "steps_this_run": loop.step - loop.first_step,
        "final_loss": loop.loss_value,
        "val_loss": loop.val_loss,
        "grad_norm": loop.grad_norm,
        "lr": loop.lr,
        "tokens_per_s": tokens_per_s,
        "step_time_s": step_time,
        "mfu": mfu(loop.flops_per_token, tokens_per_s, d.world_size, loop.peak),
        "peak_tflops": loop.peak,
        "world_size": d.world_size,
        "global_batch": cfg.global_batch,
        "micro_batch": job.split.micro_batch,
        "micro_steps": job.split.micro_steps,
        "seq_len": cfg.seq_len,
        "model": cfg.model,
        "n_params": job.model.num_params(),
        "device": torch.cuda.get_device_name(d.device) if cuda else "cpu",
        "kernels": job.model.fused.names(),
        "fp8_output_layer": job.model.fused.fp8_head,
        "memory_estimate_bytes": job.footprint.peak if job.footprint else None,
        "memory_peak_bytes": torch.cuda.max_memory_allocated(d.device) if cuda else None,
        "compiled_graphs": torch._dynamo.utils.counters["stats"]["unique_graphs"] if job.compiled else 0,
        "graph_breaks": sum(torch._dynamo.utils.counters["graph_break"].values()) if job.compiled else 0,
        "seconds_to_first_step": loop.seconds_to_first_step,
        "checkpoints_written": loop.saves.written,
        "checkpoint_seconds": loop.saves.blocking_seconds,
        "checkpoint_write_seconds": loop.saves.write_seconds,
        "kept_steps": loop.keeper.kept if loop.keeper else None,
        "keep_offered_steps": loop.keeper.offered if loop.keeper else None,
        "keep_wait_seconds": loop.keeper.seconds if loop.keeper else None,
        "resumed_from_step": loop.first_step if job.resumed else None,
        "stopped_by_signal": loop.stop_now,
        "stop_covered_by_earlier_save": loop.stop_now and loop.covered,
        "signal": loop.stop.signal_name,
        "data_position": loop.data.position,
    }
