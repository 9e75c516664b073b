"""Resuming: find the newest trusted checkpoint any node holds, check that it belongs to this run, restore it.

A resume is the run it says it is. Settings that fix what the weights and the data order mean (the model, its
biases, the sequence length, the global batch, the data and the seed) must match the checkpoint's: a change is
refused with exit 2, naming both values. Settings of the optimizer and the schedule (learning rate and its floor,
warm-up, total steps, weight decay, betas, clipping) are applied from this run on purpose, and said so; the new
checkpoints record them.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path
from typing import NamedTuple

import torch

from training import checkpoint
from training.config import ConfigError, TrainConfig
from training.distributed import Dist

FIXED = ("model", "bias", "seq_len", "global_batch", "data", "seed")
"""What the weights and the data order depend on."""
FIXED_FOR_FILES = ("data_dtype", "eval_sequences")
"""What the order of token files also depends on (the held-out set is cut from their end)."""
APPLIED = ("lr", "min_lr_ratio", "warmup_steps", "steps", "weight_decay", "beta1", "beta2", "grad_clip")
LEGACY = {"bias": True, "data_dtype": "uint16", "eval_sequences": 0}
"""Values of settings that checkpoints from before the setting existed were written with."""


class Newest(NamedTuple):
    """Where the newest trusted checkpoint is, as every rank agrees on it."""

    step: int
    digest: str
    """The sha256 of its state file that the nodes' ledgers vouch for."""
    source: int
    """The lowest rank whose node holds it."""
    here: bool
    """This rank's node holds it."""
    everywhere: bool
    """Every node holds it."""


def trusted(nodes: dict[int, tuple[dict[int, str], dict[int, str]]], rejected: set) -> tuple[tuple[int, str] | None,
                                                                                              list[str]]:
    """The newest (step, digest) that the nodes offer (node -> (offered, attested)) and their ledgers vouch for, and
    why newer ones were passed over. A digest is vouched for when no ledger records another one for its step and at
    least two ledgers record it (one, where only one node keeps a ledger; none, where no node does: a cluster
    started afresh from the bucket). So a node alone, or another writer to the bucket, cannot get a checkpoint of
    its making trusted by the others."""
    ledgers = [ledger for _, ledger in nodes.values() if ledger]
    needed = min(2, len(ledgers))
    offers = sorted({(step, digest) for held, _ in nodes.values() for step, digest in held.items()} - rejected,
                    reverse=True)
    passed = []
    for step, digest in offers:
        records = [ledger[step] for ledger in ledgers if step in ledger]
        if any(record != digest for record in records):
            passed.append(f"step {step}: a node recorded another digest for it than {digest[:12]}")
        elif len(records) < needed:
            passed.append(f"step {step}: {len(records)} of the nodes' ledgers vouch for digest {digest[:12]}, "
                          f"{needed} needed")
        else:
            return (step, digest), passed
    return None, passed


def newest_checkpoint(cfg: TrainConfig, d: Dist) -> Newest | None:
    """The newest trusted checkpoint any node holds intact, or None where there is none (or resume is off).

    Only each node's first rank reads its directory and ledger; every rank then makes the same choice from what all
    of them report. The chosen copy is verified (every byte) on each node that offers it; where none is intact, the
    next one is chosen.
    """
    root = Path(cfg.resolved_checkpoint_dir())
    mine = None
    if cfg.resume and d.is_node_main:
        mine = (d.node_rank, checkpoint.offered(root), checkpoint.attested(root))
    nodes = {node: (held, ledger) for node, held, ledger in filter(None, d.all_gather_object(mine))}
    rejected: set[tuple[int, str]] = set()
    while True:
        choice, passed = trusted(nodes, rejected)
        if d.is_main:
            for reason in passed:
                print(f"warning: checkpoint not trusted, {reason}; falling back to an older one", file=sys.stderr)
        if choice is None:
            return None
        intact = None
        if d.is_node_main and nodes[d.node_rank][0].get(choice[0]) == choice[1]:
            problem = checkpoint.verify(checkpoint.step_path(root, choice[0]))
            if problem:
                print(f"warning: skipping checkpoint {checkpoint.step_path(root, choice[0])}: {problem}; falling "
                      "back to an older one", file=sys.stderr)
            intact = problem is None
        reports = d.all_gather_object((d.node_rank, intact) if d.is_node_main else None)
        holders = {report[0] for report in reports if report and report[1]}
        if holders:
            source = next(rank for rank, report in enumerate(reports) if report and report[1])
            return Newest(*choice, source, d.node_rank in holders, holders == set(nodes))
        rejected.add(choice)


def _theirs(config: dict, name: str):
    return config.get(name, LEGACY.get(name, TrainConfig.__dataclass_fields__[name].default))


def check_compatible(cfg: TrainConfig, state: dict, where: str) -> list[str]:
    """Refuse a checkpoint whose FIXED settings differ from this run's; the APPLIED settings that changed, as
    'name old -> new' (they take effect from the resumed step on)."""
    config = state["config"]
    fixed = FIXED + (FIXED_FOR_FILES if cfg.data != "synthetic" else ())
    differ = [name for name in fixed if _theirs(config, name) != getattr(cfg, name)]
    if differ:
        theirs = ", ".join(f"{name}={_theirs(config, name)!r}" for name in differ)
        ours = ", ".join(f"{name}={getattr(cfg, name)!r}" for name in differ)
        raise ConfigError(
            f"Checkpoint {where} was written with {theirs}, but this run has {ours}: its weights and data order "
            "belong to another run. Use the checkpoint's settings, or another 'checkpoint_dir' (or 'resume' false) "
            "to start afresh."
        )
    return [f"{name} {_theirs(config, name)!r} -> {getattr(cfg, name)!r}" for name in APPLIED
            if _theirs(config, name) != getattr(cfg, name)]


def _receive(d: Dist, newest: Newest, root: Path) -> tuple[bytes, str]:
    """(bytes, description) of the newest checkpoint's state file, sent by the source rank to every rank.

    Cost: the whole file (about 12 bytes per parameter with AdamW) goes pickled through the gloo control group to
    each rank, and every rank holds it in host memory twice (bytes and state) while loading: slow for large models,
    but it happens once, only after a node lost its newest checkpoint or joined empty.
    """
    path = checkpoint.step_path(root, newest.step)
    mine = (path / checkpoint.STATE).read_bytes() if d.rank == newest.source else None
    return d.broadcast_object(mine, src=newest.source), f"{path.name} of rank {newest.source}'s node, sent to the " \
        "nodes without it"


def _load(read, where: str) -> dict:
    try:
        return read()
    except checkpoint.UnsafeCheckpoint as err:
        raise ConfigError(
            f"Checkpoint {where} is refused: {err}. This job writes only tensors and plain values, so another "
            "program wrote it: remove it (and its copy in the bucket) to resume from the one before."
        ) from None


class Resumed(NamedTuple):
    state: dict
    where: str
    changes: list[str]
    """The APPLIED settings this run changes, as 'name old -> new'."""


def load(cfg: TrainConfig, d: Dist) -> Resumed | None:
    """The newest valid checkpoint any node holds, read and checked against this run's settings (on the CPU).

    Where every node holds it, each rank reads its own node's copy; otherwise it is sent from a node that has it, and
    the nodes that lacked it write its bytes, so they hold an identical copy from now on.
    """
    newest = newest_checkpoint(cfg, d)
    if newest is None:
        return None
    root = Path(cfg.resolved_checkpoint_dir())
    if newest.everywhere:
        path = checkpoint.step_path(root, newest.step)
        where = str(path)
        state = _load(lambda: checkpoint.read(path), where)
        changes = check_compatible(cfg, state, where)
    else:
        data, where = _receive(d, newest, root)
        if hashlib.sha256(data).hexdigest() != newest.digest:
            raise ConfigError(f"Checkpoint {where} does not match the digest the nodes' ledgers vouch for; the node "
                              "that sent it holds another file than it reported. Check that node.")
        state = _load(lambda: checkpoint.loads(data), where)
        changes = check_compatible(cfg, state, where)
        if d.is_node_main and not newest.here:
            shutil.rmtree(checkpoint.step_path(root, newest.step), ignore_errors=True)  # a copy not trusted
            checkpoint.save_bytes(root, newest.step, data, cfg.keep_checkpoints)
    return Resumed(state, where, changes)


def restore(cfg: TrainConfig, d: Dist, resumed: Resumed, model: torch.nn.Module,
            optimizer: torch.optim.Optimizer) -> tuple[int, int]:
    """Load the weights, AdamW's state and this rank's RNG streams (where the checkpoint's run had this rank); this
    run's optimizer settings replace the checkpoint's (the learning rate is set at every step). Returns (step, data
    position)."""
    state = resumed.state
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    for group, wanted in zip(optimizer.param_groups, model.param_groups(cfg.weight_decay), strict=True):
        group["betas"] = (cfg.beta1, cfg.beta2)
        group["weight_decay"] = wanted["weight_decay"]
    rngs = state["rng"]
    if d.rank < len(rngs) and rngs[d.rank] is not None:  # a rank the run it was kept by lacked: its fresh stream
        checkpoint.set_rng_state(rngs[d.rank])
    if d.is_main:
        print(
            f"resumed from {resumed.where} (step {state['step']}, written by {state['world_size']} ranks, now "
            f"{d.world_size})",
            file=sys.stderr,
        )
        if resumed.changes:
            print(f"resume: applying changed settings from step {state['step']} on: {'; '.join(resumed.changes)}",
                  file=sys.stderr)
    return state["step"], state["data_position"]
