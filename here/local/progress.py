"""What the job has done so far, read from the files the node scripts and the training job write under each node
root: metrics lines (one per logged step, with wall time), the job's summary.json, checkpoints, gate failures."""

from __future__ import annotations

import json
from dataclasses import dataclass

from here.local.layout import Layout, Node

RUN = "run/gpufleet"
RESULTS = "var/lib/gpufleet/health"
"""Under a node's root: gpufleet-health writes $STATE/health/gate.json, the acceptance acceptance.json."""
METRICS = "var/lib/gpufleet/checkpoints/runs"
CHECKPOINT_DIR = "step_"


@dataclass(frozen=True)
class Step:
    step: int
    time: float
    loss: float
    tokens_per_s: float


def steps(lay: Layout) -> list[Step]:
    """Every logged step of every node's rank 0 run, oldest first: a restart shows as a step that goes back."""
    found = []
    for path in sorted((lay.directory / "nodes").glob(f"*/{METRICS}/*/metrics.jsonl")):
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            found.append(Step(row["step"], row["time"], row.get("loss", float("nan")), row.get("tokens_per_s", 0.0)))
    return sorted(found, key=lambda s: s.time)


def segments(history: list[Step]) -> list[list[Step]]:
    """Split the history where the job resumed (its step went back or stayed): one segment per job incarnation."""
    runs: list[list[Step]] = []
    for item in history:
        if not runs or item.step <= runs[-1][-1].step:
            runs.append([])
        runs[-1].append(item)
    return runs


def job_summary(lay: Layout) -> dict | None:
    """The newest summary.json the job's rank 0 wrote on any node."""
    found = sorted((lay.directory / "nodes").glob(f"*/{METRICS}/*/summary.json"), key=lambda p: p.stat().st_mtime)
    return json.loads(found[-1].read_text()) if found else None


def checkpoints(lay: Layout) -> list[int]:
    """Steps of the checkpoints that exist now, in the bucket or on any node."""
    places = [lay.bucket / "checkpoints", *((n.root / "var/lib/gpufleet/checkpoints") for n in lay.nodes)]
    return sorted({int(p.name[len(CHECKPOINT_DIR):]) for place in places if place.is_dir()
                   for p in place.iterdir() if p.name.startswith(CHECKPOINT_DIR) and p.is_dir()})


def failure(node: Node) -> str | None:
    """Why the node's gate failed (the reason gpufleet-lib's `die` recorded), if it did."""
    path = node.root / RUN / "failure"
    return path.read_text().strip() if path.is_file() else None


def named_by_acceptance(node: Node) -> str | None:
    """The reason the cluster acceptance named this node (cloud-init/health/job.py wrote it), if it did."""
    path = node.root / RUN / "acceptance-reason"
    return path.read_text().strip() if path.is_file() else None


def has_acceptance(node: Node) -> bool:
    """Whether the node's cluster acceptance wrote its verdict (cloud-init/health/acceptance.py)."""
    return (node.root / RESULTS / "acceptance.json").is_file()


def left_on_notice(node: Node) -> bool:
    """The node's spot watcher saw a notice and took the node out of the job."""
    return (node.root / RUN / "spot-notice").is_file()


def unreachable_peers(node: Node) -> str | None:
    """The job's latest preflight report in the node's log (training.preflight: nodes that cannot reach each
    other on the collectives' ports), or None. The job fails it on every restart; the report is the same each time."""
    try:
        lines = node.log.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return None
    starts = [i for i, line in enumerate(lines) if "gpufleet preflight:" in line]
    if not starts:
        return None
    report = [lines[starts[-1]]]
    for line in lines[starts[-1] + 1 :]:
        if not (line.startswith("  node ") or line.startswith("Open that range")):
            break
        report.append(line)
    return "\n".join(report)


def log_tail(node: Node, lines: int = 15) -> str:
    try:
        return "\n".join(node.log.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return ""
