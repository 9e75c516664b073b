"""This rank's last finished step, kept in host memory that outlives the worker: a file in the node's tmpfs
(``keep_dir``), which torchrun restarting the worker leaves alone and a reboot clears. A job re-formed after a node
was lost goes on from it (``training.recovery``) instead of the last periodic checkpoint.

Each rank keeps its own RNG streams and step; the node's first rank also keeps the weights and AdamW's state (the
same on every rank of a data-parallel job, so one copy per node). The loop never waits for the file: the state is
copied into one of two preallocated host slots (training.host_copy: pinned, on a side stream, on a GPU) and a writer
thread saves it and renames it into place, so a worker killed mid-write leaves the previous step's file whole. While
the writer is busy with an older step, the newest offered step waits in the other slot and replaces any step still
waiting there; the replaced steps are never written, so the kept file may lag the loop by a step or two where a
write takes longer than a step (``kept`` against ``offered`` counts it).
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from pathlib import Path

import torch

from training import checkpoint
from training.config import TrainConfig
from training.distributed import Dist
from training.host_copy import HostSlot, SideCopies

_KEPT = re.compile(r"^local(\d+)-step(\d{8,})\.pt$")


def kept_path(directory: Path, local_rank: int, step: int) -> Path:
    return directory / f"local{local_rank}-step{step:08d}.pt"


def kept_step(directory: Path, local_rank: int) -> int | None:
    """The step of the state this local rank keeps (its name says it: nothing is read), or None."""
    steps = [int(m.group(2)) for p in directory.glob(f"local{local_rank}-step*.pt")
             if (m := _KEPT.match(p.name)) and int(m.group(1)) == local_rank] if directory.is_dir() else []
    return max(steps, default=None)


class Keeper:
    """Keeps this rank's state after every step it can: ``seconds``, the time the loop waited for it; ``offered``,
    the steps handed to it; ``kept``, the steps written."""

    def __init__(self, cfg: TrainConfig, d: Dist) -> None:
        self.cfg, self.d = cfg, d
        self.directory = Path(cfg.keep_dir)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._copies = SideCopies(d.device)
        self._slots = [self._copies.slot(), self._copies.slot()]
        self._changed = threading.Condition()
        self._waiting: tuple[int, HostSlot, dict] | None = None
        self._writing: HostSlot | None = None
        self._error: BaseException | None = None
        self.seconds = 0.0
        self.offered = self.kept = 0
        threading.Thread(target=self._write_forever, name="keep-writer", daemon=True).start()

    def keep(self, step: int, model: torch.nn.Module, optimizer: torch.optim.Optimizer, position: int) -> float:
        """Copy the state of ``step`` into a free host slot for the writer; returns the seconds the loop waited (the
        copies' set-up on a GPU, the copies themselves on the CPU; never the write)."""
        began = time.perf_counter()
        self._raise()
        with self._changed:
            if self._waiting is not None:  # the writer never started it: the newer step takes its place
                slot = self._waiting[1]
                self._waiting = None
            else:
                slot = next(s for s in self._slots if s is not self._writing)
        state = {"step": step, "data_position": position, "rank": self.d.rank, "world_size": self.d.world_size,
                 "rng": checkpoint.rng_state(), "config": self.cfg.to_dict()}
        if self.d.is_node_main:
            state |= self._copies.copy({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, slot)
        with self._changed:
            self._waiting = (step, slot, state)
            self._changed.notify_all()
        self.offered += 1
        spent = time.perf_counter() - began
        self.seconds += spent
        return spent

    def before_update(self) -> None:
        """Call before the optimizer changes the weights: the copies of the kept step must have read them first."""
        self._copies.before_update()

    def _write_forever(self) -> None:
        while True:
            with self._changed:
                while self._waiting is None:
                    self._changed.wait()
                step, slot, state = self._waiting
                self._waiting, self._writing = None, slot
            written = 0
            try:
                slot.wait()
                self._write(step, state)
                written = 1
            except BaseException as err:  # re-raised on the training thread by keep() or flush()
                self._error = err
            with self._changed:
                self._writing = None
                self.kept += written
                self._changed.notify_all()

    def _write(self, step: int, state: dict) -> None:
        final = kept_path(self.directory, self.d.local_rank, step)
        tmp = final.with_suffix(".tmp")
        torch.save(state, tmp)
        os.replace(tmp, final)
        for old in self.directory.glob(f"local{self.d.local_rank}-step*.pt"):
            if old != final:
                old.unlink(missing_ok=True)

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def flush(self) -> None:
        """Wait until the newest offered step is written (a stop: the worker is about to exit)."""
        with self._changed:
            while self._waiting is not None or self._writing is not None:
                self._changed.wait()
        self._raise()

    def clear(self) -> None:
        """The run is done: nothing to go on from (the next run starts from its checkpoint, as after a reboot)."""
        with contextlib.suppress(Exception):
            self.flush()
        for old in self.directory.glob(f"local{self.d.local_rank}-step*.pt"):
            old.unlink(missing_ok=True)
