"""Noticing a lost peer in seconds: every rank bumps a counter of its own in the job's store (rank 0's TCPStore) each
``BEAT_S``, and reads every other rank's. A peer whose counter has not moved for ``peer_timeout`` seconds (its node
died, or the network to it is cut), or a store that has not answered for as long (this rank is the one cut off, or
rank 0 is gone), ends this worker with ``EXIT_PEER_LOST``: its torchrun agent then re-forms the job without the
lost node at once. Without it a collective waiting on a peer behind a cut network waits for the process group's
timeout (30 minutes by default); a killed peer's closed sockets fail the collectives at once, so this matters for the
cut, and costs nothing for the kill.

The counters run on a thread, apart from the training thread, so a long step, a compile or a checkpoint does not
stop them; the largest gap between a rank's beats is reported (``max_gap``) to set ``peer_timeout`` from.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from datetime import timedelta

import torch.distributed as dist

from training.distributed import Dist

BEAT_S = 0.5
# EX_PROTOCOL: a peer stopped answering; torchrun counts it as a failed worker and re-forms the job.
EXIT_PEER_LOST = 76


class PeerWatch:
    """The heartbeat thread of this rank; ``stop()`` before the job's store goes away (the job's end)."""

    def __init__(self, store: dist.Store, rank: int, world_size: int, timeout_s: float) -> None:
        self.store, self.rank, self.world_size, self.timeout_s = store, rank, world_size, timeout_s
        self.max_gap = 0.0
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peer-watch", daemon=True)

    def start(self) -> PeerWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2 * BEAT_S + 1)

    def _run(self) -> None:
        now = time.monotonic()
        seen = {rank: (-1, now) for rank in range(self.world_size) if rank != self.rank}
        answered = last_beat = now
        while not self._stopped.wait(BEAT_S):
            now = time.monotonic()
            self.max_gap = max(self.max_gap, now - last_beat)
            last_beat = now
            try:
                self.store.add(f"beat/{self.rank}", 1)
                counts = {rank: self.store.add(f"beat/{rank}", 0) for rank in seen}
            except (dist.DistError, RuntimeError) as error:
                silent = time.monotonic() - answered
                if silent > self.timeout_s:
                    self._lost(f"the job's store did not answer for {silent:.1f} s ({str(error).splitlines()[0]}): "
                               "this node is cut off, or rank 0's node is gone")
                continue
            answered = time.monotonic()
            for rank, count in counts.items():
                if count != seen[rank][0]:
                    seen[rank] = (count, answered)
                elif answered - seen[rank][1] > self.timeout_s:
                    self._lost(f"rank {rank} sent no heartbeat for {answered - seen[rank][1]:.1f} s: its node is "
                               "lost or cut off")

    def _lost(self, why: str) -> None:
        if self._stopped.is_set():
            return
        print(f"rank {self.rank}: {why}; ending this worker (exit {EXIT_PEER_LOST}) so the job re-forms without it",
              file=sys.stderr, flush=True)
        os._exit(EXIT_PEER_LOST)


def _store(timeout_s: float) -> dist.Store:
    """A client of the job's store of its own, whose operations give up after ``timeout_s`` (the job's own waits up to
    the preflight's bound); under an agent's shared store, which outlives rounds, its keys under the round's prefix."""
    client = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False,
                           timeout=timedelta(seconds=timeout_s))
    shared = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"  # as training.distributed._shared_store
    return dist.PrefixStore(f"gpufleet/watch/{os.environ['TORCHELASTIC_RESTART_COUNT'] if shared else 'job'}", client)


def start(d: Dist, timeout_s: float) -> PeerWatch | None:
    """The running heartbeat of this rank, or None in a job of one rank or with the watch off (0)."""
    if not d.enabled or timeout_s <= 0:
        return None
    return PeerWatch(_store(timeout_s), d.rank, d.world_size, timeout_s).start()
