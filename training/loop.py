"""The step loop: optimizer steps from where the job starts (0, or the resumed step) until ``steps``, a stop request
or ``stop_after_steps``; each step trains on its global batch, logs every ``log_every`` steps (with the held-out loss
every ``eval_every``), checks that the loss and gradient norm stay finite, and ends with a save where one is due
(training.stopping) and, with ``keep_dir``, the step's state kept in host memory (training.last_step). The time spent in
checkpoints and validation is kept out of the step time and tokens/s; keeping the state is part of the step (it
costs the copies' set-up on a GPU: the write is off the loop)."""

from __future__ import annotations

import contextlib
import time

import torch
import torch.distributed as dist

from training.config import ConfigError, TrainConfig
from training.data import ShardedBatches
from training.distributed import Dist
from training.last_step import Keeper
from training.metrics import MetricsWriter, mfu
from training.prepare import Prepared
from training.schedule import learning_rate
from training.stopping import Saves, StopFlag, save_now


class Diverged(ConfigError):
    """The loss or the gradient norm is no longer finite: going on would only write a broken checkpoint."""


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _sum_over_ranks(values: torch.Tensor, d: Dist) -> list[float]:
    if d.enabled:
        values = values.clone()
        dist.all_reduce(values)
    return values.tolist()


@torch.no_grad()
def _evaluate(job: Prepared, data: ShardedBatches, d: Dist) -> float:
    """The mean loss over the held-out set (every rank takes its part; the model as is, not compiled)."""
    total = torch.zeros(1, device=next(job.model.parameters()).device, dtype=torch.float64)
    for micro in data.held_out():
        with job.autocast:
            total += job.model(micro.inputs, micro.targets).double() * micro.weight
    return _sum_over_ranks(total, d)[0]


class StepLoop:
    """The loop's state from step to step, and what the summary reads of it when the loop is done."""

    def __init__(self, cfg: TrainConfig, d: Dist, job: Prepared, data: ShardedBatches, writer: MetricsWriter,
                 stop: StopFlag, step: int, started: float, peak: float | None) -> None:
        self.cfg, self.d, self.job, self.data, self.writer, self.stop = cfg, d, job, data, writer, stop
        self.started = started
        self.saves = Saves(cfg, d)
        self.keeper = Keeper(cfg, d) if cfg.keep_dir else None
        self.flops_per_token = job.model.flops_per_token()
        self.peak = peak
        self.tokens_per_step = cfg.global_batch * cfg.seq_len
        self.step = self.first_step = step
        planned = cfg.steps - step
        if cfg.stop_after_steps:
            planned = min(planned, cfg.stop_after_steps)
        self.warmup = max(0, min(cfg.timing_warmup_steps, planned - 1))
        self.seconds_to_first_step: float | None = None
        self.stop_now = self.covered = False
        self.loss_value = self.val_loss = self.grad_norm = float("nan")
        self.last_log = self.timed_from = (time.perf_counter(), step)
        self.loss_sum = torch.zeros((), device=d.device, dtype=torch.float64)
        self.nonfinite = torch.zeros((), device=d.device, dtype=torch.float64)
        self.norm = torch.zeros((), device=d.device)
        self.lr = learning_rate(cfg, step)
        self.end: float | None = None

    def run(self) -> None:
        """Train until the last step or a stop; then wait for the checkpoints to be durable and close the data and
        the metrics."""
        cfg = self.cfg
        try:
            while self.step < cfg.steps:
                self._train_step()
                self._mark_times()
                self.stop_now, self.covered = self.d.any_true(self.stop.signal_name is not None,
                                                              self.saves.covers(self.stop))
                ran_out = bool(cfg.stop_after_steps) and self.step - self.first_step >= cfg.stop_after_steps
                stopping = self.stop_now or self.step == cfg.steps or ran_out
                evaluating = bool(cfg.eval_every and cfg.eval_sequences) and (
                    self.step % cfg.eval_every == 0 or self.step == cfg.steps
                )
                paused = self._log(stopping, evaluating)
                if save_now(cfg, self.step, stopping, self.stop_now, self.covered):
                    self._check_finite(self.step)
                    sync(self.d.device)
                    paused += self.saves.save(self.step, self.job.model, self.job.optimizer, self.data.position)
                if self.keeper is not None and self.step < cfg.steps:
                    self.keeper.keep(self.step, self.job.model, self.job.optimizer, self.data.position)
                # Checkpoint and validation time are reported apart, not folded into step time and tokens/s.
                self.last_log = (self.last_log[0] + paused, self.last_log[1])
                self.timed_from = (self.timed_from[0] + paused, self.timed_from[1])
                if stopping:
                    break
        except BaseException:
            self.saves.drain()
            if self.keeper is not None:  # the last finished step's copy is whole: let it reach the file
                with contextlib.suppress(Exception):
                    self.keeper.flush()
            raise
        sync(self.d.device)
        self.end = time.perf_counter()
        self.saves.finish()
        if self.keeper is not None and self.step == cfg.steps:
            self.keeper.clear()
        elif self.keeper is not None:
            self.keeper.flush()
        self.data.close()
        self.writer.close()

    def _train_step(self) -> None:
        """One optimizer step over the step's micro-batches; the loss and the non-finite flag stay on the device."""
        job = self.job
        self.lr = learning_rate(self.cfg, self.step)
        for group in job.optimizer.param_groups:
            group["lr"] = self.lr
        step_loss = torch.zeros((), device=self.d.device, dtype=torch.float64)
        for micro in self.data.next_step():
            step_loss += job.forward_backward(micro)
        self.norm = torch.nn.utils.get_total_norm([p.grad for p in job.params if p.grad is not None])
        if self.cfg.grad_clip > 0:
            torch.nn.utils.clip_grads_with_norm_(job.params, self.cfg.grad_clip, self.norm)
        self.nonfinite += (~torch.isfinite(self.norm)) | (~torch.isfinite(step_loss))
        self.loss_sum += step_loss
        if self.keeper is not None:
            self.keeper.before_update()
        job.optimizer.step()
        job.optimizer.zero_grad(set_to_none=True)
        self.step += 1

    def _mark_times(self) -> None:
        """The time to the first step, and where the timed steps begin (after ``timing_warmup_steps``)."""
        if self.seconds_to_first_step is None:
            sync(self.d.device)
            self.seconds_to_first_step = time.perf_counter() - self.started
        if self.warmup and self.step - self.first_step == self.warmup:
            sync(self.d.device)
            self.timed_from = (time.perf_counter(), self.step)

    def _log(self, stopping: bool, evaluating: bool) -> float:
        """Log the interval's metrics where due (with the held-out loss when evaluating); returns the seconds spent
        evaluating."""
        cfg, d = self.cfg, self.d
        if not (self.step % cfg.log_every == 0 or stopping or evaluating):
            self.writer.advance(self.step)
            return 0.0
        summed_loss, flagged = _sum_over_ranks(torch.stack([self.loss_sum, self.nonfinite]), d)
        interval_steps = self.step - self.last_log[1]
        self.loss_value = summed_loss / d.world_size / interval_steps
        self.grad_norm = self.norm.item()
        if flagged:
            self._check_finite(self.step)
        now = time.perf_counter()
        step_time = (now - self.last_log[0]) / interval_steps
        tokens_per_s = self.tokens_per_step / step_time
        values = {
            "loss": self.loss_value,
            "grad_norm": self.grad_norm,
            "lr": self.lr,
            "tokens_per_s": tokens_per_s,
            "step_time_s": step_time,
            "mfu": mfu(self.flops_per_token, tokens_per_s, d.world_size, self.peak),
        }
        paused = 0.0
        if evaluating:
            self.val_loss = _evaluate(self.job, self.data, d)
            values["val_loss"] = self.val_loss
            paused += time.perf_counter() - now
        self.writer.log(self.step, values)
        self.last_log = (now, self.step)
        self.loss_sum.zero_()
        return paused

    def _check_finite(self, upto: int) -> None:
        """Stop with exit 2 if any step up to ``upto`` had a non-finite loss or gradient norm (every rank agrees:
        the flag is summed over ranks)."""
        if _sum_over_ranks(self.nonfinite.reshape(1), self.d)[0]:
            raise Diverged(
                f"The loss or the gradient norm stopped being finite by step {upto} (the last logged loss was "
                f"{self.loss_value:.4g}). No checkpoint was written after it; the newest is "
                f"{max(self.saves.written, default='none from this run')}. Lower 'lr', raise 'warmup_steps' or set "
                "'grad_clip', then resume."
            )
