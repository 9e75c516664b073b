"""The cluster acceptance test, once the rendezvous has formed and before the job's first step: an all-reduce across
every node at the job's DDP bucket size, and pairs of nodes to name the one that is slow or cannot be reached.

1. Reachability: training.preflight's node mesh (each node listens on a port of its range, every other node
   connects); a node the others cannot reach is named by the failures it collects.
2. The world: all-reduce bus bandwidth at the bucket size (nccl-tests' busbw, health_allreduce.busbw) against the
   plan's cross-node threshold (the catalog's cross-node baseline x its share, plan/thresholds.py), where
   the row has a baseline.
3. Pairs, when the world is below that or there is no baseline (or `deep`): every node all-reduces with its two
   ring neighbours (nodes 0+1, 2+3, ... then 1+2, 3+4, ..., N-1+0: two rounds, three for an odd N, the pairs of a
   round at once, each the best of a few trials). A node's figure is its best pair; the limit is
   PAIR_PEER_FRACTION of the nodes' median figure (and the baseline's share). A node below it is a suspect and gets
   one more pair with a node above it; a node that reaches the limit with no partner is named. When none reaches
   it, the fabric is slow, not a node, and no node is named.
   Ring pairs name every slow node in two or three rounds whatever N is, where halving would take log2(N) rounds
   and find one.

Where it runs: in the job's own world (`accept(d, plan)` on training.distributed.setup's Dist, after the preflight
that setup runs): every rendezvous round, including one that admits a replacement node, is tested with exactly the
nodes and the communicator the job will use, and no second rendezvous can wait on a node that joins later. The same
function runs as its own torchrun (`main`, tests and by hand):
    torchrun --nnodes=N --nproc-per-node=G --rdzv-backend=c10d --rdzv-endpoint=HEAD:29400 -m health.acceptance \\
        --out /var/lib/gpufleet/health/acceptance.json [--config /etc/gpufleet/node.json] [--bucket-mb 100]
Every rank exits 0 once the test ran (a node that exits non-zero would keep the healthy nodes' torchrun agents in
their exit barrier for five minutes); this node's verdict is the report's `ok` and the reason file.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import health_allreduce
import torch
import torch.distributed as dist

from health import result
from health.config import LEVELS, UsageError, load_config
from health.result import Check, Report, judge
from health.thresholds import PAIR_PEER_FRACTION
from training import distributed, preflight
from training.config import TrainConfig

Pair = tuple[int, int]


@dataclass(frozen=True)
class Plan:
    """What to measure and what to hold it to."""

    bucket_bytes: int
    baseline_gbs: float | None = None  # the cluster's threshold (node.json's health.thresholds.cross_node_busbw_gbs)
    level: str = "light"
    peer_fraction: float = PAIR_PEER_FRACTION
    dtype: torch.dtype = torch.float32  # DDP reduces the gradients in the parameters' dtype

    @property
    def sizes(self) -> tuple[int, ...]:
        return (self.bucket_bytes, 4 * self.bucket_bytes) if self.level == "deep" else (self.bucket_bytes,)

    @property
    def iters(self) -> tuple[int, int, int]:
        """(timed calls, warmup calls, trials) per measurement; the figure is the best trial's, so a moment's
        contention elsewhere does not make a node slow, while a slow link is slow in every trial."""
        return (10, 3, 5) if self.level == "deep" else (3, 1, 3)


def ring_rounds(nodes: int) -> list[list[Pair]]:
    """Each node with both ring neighbours, in rounds of disjoint pairs: two rounds for an even count, three for an
    odd one (its last edge closes the ring alone); one pair for two nodes."""
    if nodes < 2:
        return []
    if nodes == 2:
        return [[(0, 1)]]
    edges = [(i, (i + 1) % nodes) for i in range(nodes)]
    if nodes % 2 == 0:
        return [edges[0::2], edges[1::2]]
    return [edges[0:-1:2], edges[1:-1:2], [edges[-1]]]


def confirm_rounds(suspects: list[int], good: list[int]) -> list[list[Pair]]:
    """Each suspect with a node that passed, in rounds of disjoint pairs (a good node partners one suspect a round)."""
    rounds = []
    for start in range(0, len(suspects), len(good)):
        batch = suspects[start:start + len(good)]
        rounds.append([(suspect, partner) for suspect, partner in zip(batch, good, strict=False)])
    return rounds


def node_limit(best: dict[int, float], baseline: float | None, fraction: float) -> float:
    """The busbw a node's best pair must reach: the baseline's threshold, and ``fraction`` of the nodes' median best
    (robust to a lucky pair, and fast while fewer than half the nodes are slow)."""
    return max(baseline or 0.0, fraction * statistics.median(best.values()))


def best_per_node(figures: dict[Pair, float], nodes: int) -> dict[int, float]:
    """Each node's best pair: what it showed it can do with some partner."""
    best = dict.fromkeys(range(nodes), 0.0)
    for (a, b), figure in figures.items():
        best[a], best[b] = max(best[a], figure), max(best[b], figure)
    return best


def named(best: dict[int, float], limit: float) -> list[int]:
    """The nodes below the limit with every partner, unless no node reached it (then the fabric is slow: none)."""
    below = [node for node, figure in best.items() if figure < limit]
    return below if len(below) < len(best) else []


def unreachable(failures: list[dict], nodes: int) -> list[int]:
    """From training.preflight's failures: the nodes no other node could reach (a node's inbound rules drop the
    range), else those that reached no other, else every node in a failure."""
    others = nodes - 1
    to = {n: {f["from"] for f in failures if f["to"] == n} for n in range(nodes)}
    sent = {n: {f["to"] for f in failures if f["from"] == n} for n in range(nodes)}
    return ([n for n in range(nodes) if len(to[n]) == others] or [n for n in range(nodes) if len(sent[n]) == others]
            or sorted({f["to"] for f in failures} | {f["from"] for f in failures}))


def mesh_report(failures: list[dict], node: int, nodes: int, started: float, level: str = "light") -> Report:
    """The acceptance as the reachability check ended it: one row per node, the nodes that could not reach it."""
    culprits = unreachable(failures, nodes)
    rows = []
    for n in range(nodes):
        mine = [f for f in failures if f["to"] == n]
        detail = "; ".join(f"from node {f['from']} ({f['from_address']}) to {f['target']}: {f['why']}" for f in mine)
        rows.append(Check("mesh", f"node{n}", float(len(mine)), "nodes", 0.0, "<=", n not in culprits,
                          detail or "reached by every node"))
    return result.timed_report("acceptance", f"node{node}", level, started, rows, ok=node not in culprits)


class _Cluster:
    """The world as nodes: which ranks each node has and what to call it."""

    def __init__(self, d: distributed.Dist) -> None:
        self.d = d
        address = preflight.local_address(os.environ.get("MASTER_ADDR", "127.0.0.1"))
        identity = d.all_gather_object((d.node_rank, socket.gethostname(), address))
        self.ranks: dict[int, list[int]] = {}
        self.names: dict[int, str] = {}
        for rank, (node, host, addr) in enumerate(identity):
            self.ranks.setdefault(node, []).append(rank)
            self.names[node] = f"{host} ({addr})"
        self.nodes = len(self.ranks)

    def busbw(self, size: int, plan: Plan, group=None) -> float:
        timed, warmup, trials = plan.iters
        return max(health_allreduce.busbw(size, plan.dtype, self.d.device, timed, warmup, group)["busbw_gbps"]
                   for _ in range(trials))

    def measure(self, pairs: list[Pair], plan: Plan) -> dict[Pair, float]:
        """Every pair of the round at once, each in its own process group; the figures on every rank, keyed by the
        pair's nodes in ascending order."""
        groups = [self.ranks[a] + self.ranks[b] for a, b in pairs]
        mine, _ = dist.new_subgroups_by_enumeration(groups)
        figure = self.busbw(plan.bucket_bytes, plan, mine) if mine is not None else None
        gathered = self.d.all_gather_object(figure)
        if mine is not None:
            dist.destroy_process_group(mine)
        return {(min(pair), max(pair)): gathered[ranks[0]] for pair, ranks in zip(pairs, groups, strict=True)}


def accept(d: distributed.Dist, plan: Plan) -> Report:
    """Run the test in ``d``'s world (every rank calls it); the report as this node sees it."""
    started, cluster = time.time(), _Cluster(d)
    me = f"node{d.node_rank}"
    if cluster.nodes < 2:
        rows = [result.skipped("acceptance-world", "world", "one node: nothing crosses the fabric")]
        return result.timed_report("acceptance", me, plan.level, started, rows)
    world = {size: cluster.busbw(size, plan) for size in plan.sizes}
    figure = world[plan.bucket_bytes]
    sizes = ", ".join(f"{size >> 20} MiB {gbs:g}" for size, gbs in world.items())
    rows = [judge("acceptance-world", "world", figure, "GB/s", plan.baseline_gbs, ">=",
                  f"busbw over {cluster.nodes} nodes, {d.world_size} ranks at {sizes}")]
    low = plan.baseline_gbs is None or figure < plan.baseline_gbs
    if cluster.nodes < 3 or not (low or plan.level == "deep"):
        return result.timed_report("acceptance", me, plan.level, started, rows, ok=True)
    figures: dict[Pair, float] = {}

    def measure(pairs: list[Pair]) -> None:  # a pair measured twice keeps its better figure
        for pair, gbs in cluster.measure(pairs, plan).items():
            figures[pair] = max(gbs, figures.get(pair, 0.0))

    for pairs in ring_rounds(cluster.nodes):
        measure(pairs)
    best = best_per_node(figures, cluster.nodes)
    limit = node_limit(best, plan.baseline_gbs, plan.peer_fraction)
    suspects = [n for n, gbs in best.items() if gbs < limit]
    good = [n for n, gbs in best.items() if gbs >= limit]
    if suspects and good:
        for pairs in confirm_rounds(suspects, good):
            measure(pairs)
        best = best_per_node(figures, cluster.nodes)
        limit = node_limit(best, plan.baseline_gbs, plan.peer_fraction)
    culprits = named(best, limit)
    at = f"busbw at {plan.bucket_bytes >> 20} MiB"
    rows += [judge("acceptance-pair", f"node{a}+node{b}", gbs, "GB/s", limit, ">=", at)
             for (a, b), gbs in figures.items()]
    rows += [judge("acceptance-node", f"node{n}", best[n], "GB/s", limit, ">=",
                   f"{cluster.names[n]}: best pair" + ("; named" if n in culprits else ""))
             for n in range(cluster.nodes)]
    return result.timed_report("acceptance", me, plan.level, started, rows, ok=d.node_rank not in culprits)


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="torchrun ... -m health.acceptance", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bucket-mb", type=int, default=TrainConfig.bucket_cap_mb,
                   help=f"the job's DDP bucket size in MiB (default: the job's default, {TrainConfig.bucket_cap_mb})")
    p.add_argument("--config", type=Path, help="the gate's config: its cross-node threshold and its level")
    p.add_argument("--baseline-gbs", type=float, help="the cluster's busbw threshold in GB/s (default: the config's)")
    p.add_argument("--level", choices=LEVELS, help="default: the config's, else light")
    p.add_argument("--peer-fraction", type=float, default=PAIR_PEER_FRACTION)
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    p.add_argument("--out", type=Path, help="write this node's report as JSON here (the node's first rank)")
    p.add_argument("--metrics", type=Path, help="write node-exporter textfile metrics here")
    p.add_argument("--reason-file", type=Path, help="write why this node failed here (removed when it passed)")
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    started = time.time()
    try:
        config = load_config(args.config) if args.config else None
    except UsageError as error:
        print(f"gpufleet acceptance: {error}", file=sys.stderr)
        return result.EXIT_USAGE
    baseline = config.limits.cross_node_busbw_gbs if config and args.baseline_gbs is None else args.baseline_gbs
    plan = Plan(bucket_bytes=args.bucket_mb << 20, baseline_gbs=baseline,
                level=args.level or (config.level if config else "light"), peer_fraction=args.peer_fraction)
    leader = int(os.environ.get("LOCAL_RANK", 0)) == 0
    try:
        d = distributed.setup(args.device)
    except preflight.UnreachablePeers as error:
        world, local = int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_WORLD_SIZE", 1))
        report = mesh_report(error.failures, int(os.environ.get("GROUP_RANK", 0)), world // local, started,
                             plan.level)
    else:
        report = accept(d, plan)
        d.close()
    if leader:
        result.write(report, args.out, args.metrics, args.reason_file)
        verdict = "passed" if report.ok else f"FAILED ({report.reason()})"
        print(f"gpufleet acceptance: {report.node} {verdict}", file=sys.stderr)
    return result.EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
