"""This rank's last finished step, kept in host memory that outlives the worker: a file in the node's tmpfs
(``keep_dir``), which torchrun restarting the worker leaves alone and a reboot clears. A job re-formed after a node
was lost goes on from it (``training.recovery``) instead of the last periodic checkpoint.

Each rank keeps its own RNG streams and step; the node's first rank also keeps the weights and AdamW's state (the
same on every rank of a data-parallel job, so one copy per node). The loop waits only for the copy to host memory
(``checkpoint.snapshot``); the file is written on a background thread and renamed into place, so a worker killed
mid-write leaves the previous step's file whole.
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

_KEPT = re.compile(r"^local(\d+)-step(\d{8,})\.pt$")


def kept_path(directory: Path, local_rank: int, step: int) -> Path:
    return directory / f"local{local_rank}-step{step:08d}.pt"


def kept_step(directory: Path, local_rank: int) -> int | None:
    """The step of the state this local rank keeps (its name says it: nothing is read), or None."""
    steps = [int(m.group(2)) for p in directory.glob(f"local{local_rank}-step*.pt")
             if (m := _KEPT.match(p.name)) and int(m.group(1)) == local_rank] if directory.is_dir() else []
    return max(steps, default=None)


class Keeper:
    """Keeps this rank's state after every step; ``seconds``: the time the loop waited for it."""

    def __init__(self, cfg: TrainConfig, d: Dist) -> None:
        self.cfg, self.d = cfg, d
        self.directory = Path(cfg.keep_dir)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self.seconds = 0.0

    def keep(self, step: int, model: torch.nn.Module, optimizer: torch.optim.Optimizer, position: int) -> float:
        """Copy the state of ``step`` to host memory and write it on the background thread; returns the seconds the
        loop waited (the copy, and a write of the step before still under way)."""
        began = time.perf_counter()
        self.wait()
        state = {"step": step, "data_position": position, "rank": self.d.rank, "world_size": self.d.world_size,
                 "rng": checkpoint.rng_state(), "config": self.cfg.to_dict()}
        if self.d.is_node_main:
            state |= {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
        copy = checkpoint.snapshot(state)
        self._thread = threading.Thread(target=self._write, args=(step, copy), name=f"keep-{step}", daemon=True)
        self._thread.start()
        spent = time.perf_counter() - began
        self.seconds += spent
        return spent

    def _write(self, step: int, state: dict) -> None:
        try:
            final = kept_path(self.directory, self.d.local_rank, step)
            tmp = final.with_suffix(".tmp")
            torch.save(state, tmp)
            os.replace(tmp, final)
            for old in self.directory.glob(f"local{self.d.local_rank}-step*.pt"):
                if old != final:
                    old.unlink(missing_ok=True)
        except BaseException as err:  # re-raised on the training thread by wait()
            self._error = err

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def clear(self) -> None:
        """The run is done: nothing to go on from (the next run starts from its checkpoint, as after a reboot)."""
        with contextlib.suppress(Exception):
            self.wait()
        for old in self.directory.glob(f"local{self.d.local_rank}-step*.pt"):
            old.unlink(missing_ok=True)
