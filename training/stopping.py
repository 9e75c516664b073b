"""Checkpoints and stops: the stop request a signal leaves (SIGTERM / SIGUSR1: the spot watcher, torchrun re-forming
the job), this rank's side of the checkpoints, and when a step ends with a save.

A stop ends at a step boundary with a checkpoint; where a save was under way when the request came (a background
write still busy, or the snapshot being taken), that save is the stop's checkpoint and no second one is written.
"""

from __future__ import annotations

import contextlib
import signal
import time
from pathlib import Path

from training import checkpoint
from training.config import TrainConfig
from training.distributed import Dist


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


def ignore_stops() -> None:
    """The job is over: a stop request now has nothing to stop. Ignored rather than left to Python, which puts the
    default action (death by the signal) back while the interpreter shuts down."""
    for sig in (signal.SIGTERM, signal.SIGUSR1):
        signal.signal(sig, signal.SIG_IGN)


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


def save_now(cfg: TrainConfig, step: int, stopping: bool, stop_now: bool, covered: bool) -> bool:
    """Whether the step just taken ends with a save: every ``checkpoint_every`` steps, and when the job stops (a
    signal, the last step with ``checkpoint_at_end``, or ``stop_after_steps``), unless a save under way when the stop
    came is its checkpoint."""
    if stop_now and covered:
        return False
    due = cfg.checkpoint_every and step % cfg.checkpoint_every == 0
    return bool(due or (stopping and (stop_now or cfg.checkpoint_at_end or step < cfg.steps)))
