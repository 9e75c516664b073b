"""Going on from a survivor's memory: after the job re-formed (a node lost, cut off, or gone after a spot notice; a
node joining), the newest step any surviving node keeps (``training.last_step``) is sent from that node to every rank,
a joining or replacement node included, over the job's control group; the disk checkpoint is read only where no
node keeps a step at least as new (the whole cluster was lost, or ``keep_dir`` is off).

Every surviving rank finished the same steps, or one more where a collective of the last one completed on some ranks
only: that newer state is as valid (its gradients were reduced over every rank), so the newest kept step wins. A
peer's memory is trusted as its gradients are: a data-parallel job already takes every rank's gradients as they come.
"""

from __future__ import annotations

import sys
from pathlib import Path

from training import checkpoint, last_step, resume
from training.config import TrainConfig
from training.distributed import Dist


def _report(cfg: TrainConfig, d: Dist) -> dict:
    """What this rank can offer: its kept step, and (on a node's first rank) the newest step on the node's disk."""
    directory = Path(cfg.keep_dir)
    step = last_step.kept_step(directory, d.local_rank)
    disk = max(checkpoint.offered(Path(cfg.resolved_checkpoint_dir())), default=-1) if d.is_node_main else -1
    return {"rank": d.rank, "node": d.node_rank, "step": step, "whole": d.is_node_main and step is not None,
            "disk": disk}


def choose(reports: list[dict]) -> tuple[int, int] | None:
    """(step, source rank): the newest whole state (weights and AdamW's) any rank keeps, sent by the lowest rank that
    keeps it; None where none is kept or a node's disk holds a newer checkpoint."""
    whole = [(r["step"], -r["rank"]) for r in reports if r["whole"]]
    if not whole:
        return None
    step, source = max(whole)
    if step < max(r["disk"] for r in reports):
        return None
    return step, -source


def load(cfg: TrainConfig, d: Dist) -> resume.Resumed | None:
    """The newest kept state as a resume (on the CPU), with every rank's own RNG streams where it kept them; None
    where the disk checkpoint is to be resumed instead."""
    if not (cfg.keep_dir and cfg.resume):
        return None
    reports = d.all_gather_object(_report(cfg, d))
    chosen = choose(reports)
    if chosen is None:
        return None
    step, source = chosen
    directory = Path(cfg.keep_dir)
    mine = last_step.kept_path(directory, d.local_rank, step).read_bytes() if d.rank == source else None
    where = f"the memory of rank {source} (node {reports[source]['node']}, step {step})"
    state = checkpoint.loads(d.broadcast_object(mine, src=source))
    changes = resume.check_compatible(cfg, state, where)
    own = last_step.kept_path(directory, d.local_rank, step)
    kept = checkpoint.loads(own.read_bytes()) if own.is_file() else None
    streams = dict(filter(None, d.all_gather_object((kept["rank"], kept["rng"]) if kept else None)))
    rngs = [streams.get(rank) for rank in range(1 + max(streams, default=-1))]
    state["rng"] = rngs
    if d.is_main:
        print(f"recovery: going on from {where}, sent to {d.world_size} ranks", file=sys.stderr)
    return resume.Resumed(state, where, changes)
