"""A stack's boot rehearsed on this machine: the head and some workers booted in the harness (real cloud-init and
systemd, the cloud's emulated metadata service and store, fake GPUs), each node followed to its outcome and, when
every node trains, to the job's first step. `fleet up --boot` and benchmarks/boot_harness.py both run it."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping

from here.boot import report
from here.boot.cluster import Boot
from plan.model import ClusterPlan
from spec.stackfile import CLUSTER_KEY, StackFile

# The local stack's tiny model: a CPU-only host (the harness fakes GPUs, torch runs on CPU) reaches the first step in
# seconds instead of a GPT-2 job's minutes.
TINY_JOB = {"model": "tiny", "steps": 20, "seqLen": 128, "globalBatch": 24, "microBatch": 4, "checkpointEvery": 10,
            "logEvery": 1}
FIRST_STEP_POLL_S = 5


def with_job(stack: StackFile, job: Mapping) -> StackFile:
    """The stack with its job replaced; the rest of the cluster, and so every other rendered line, as written."""
    return with_setting(stack, "job", dict(job))


def with_setting(stack: StackFile, key: str, value: object) -> StackFile:
    """The stack with one cluster setting replaced (its job, its image), the rest as written."""
    config = dict(stack.config)
    config[CLUSTER_KEY] = {**config[CLUSTER_KEY], key: value}
    return dataclasses.replace(stack, config=config)


def rehearse(plan: ClusterPlan, *, workers: int = 1, driver: str | None = None, timeout: float = 900,
             keep: bool = False, note: Callable[[str], None] = lambda _: None) -> dict:
    """Boot the plan's head and `workers` workers; each node's outcome ("training", "warming", "failed: WHY",
    "undecided after T s"), seconds from power-on to each phase and bytes fetched from outside the cluster's network
    (here.boot.fetched), the cluster's first moment of each phase, and the run's directory. `driver`: the fake GPU
    stack's driver instead of the image's."""
    started = time.monotonic()
    with Boot(plan, workers=workers, driver=driver, keep=keep) as boot:
        note(f"booted {len(boot.nodes)} machines ({', '.join(n.name for n in boot.nodes)}), run {boot.tag}")
        outcomes = {}
        for node in boot.nodes:
            outcomes[node.name] = report.wait_outcome(node, max(1.0, timeout - (time.monotonic() - started)))
            note(f"{node.name}: {outcomes[node.name]}")
        if set(outcomes.values()) == {"training"}:
            _wait_first_step(boot, started + timeout)
        reports = {node.name: report.collect(node) for node in boot.nodes}
        outside = boot.fetched_outside()
    nodes = {name: {"role": r.role, "outcome": outcomes[name],
                    "phases": {k: None if v is None else round(v, 1) for k, v in r.phases.items()},
                    "fetched_outside_bytes": outside[name]}
             | ({} if outcomes[name] == "training" else {"report": r.summary()})
             for name, r in reports.items()}
    phases = {phase: min((n["phases"][phase] for n in nodes.values() if n["phases"][phase] is not None), default=None)
              for phase in report.PHASES}
    return {"cloud": plan.cloud, "instance_type": plan.instance.name, "nodes": nodes, "cluster_phases": phases,
            "seconds_total": round(time.monotonic() - started, 1), "run": str(boot.directory) if keep else None}


def trained(result: Mapping) -> bool:
    """Every node trains and the job logged its first step."""
    return (all(n["outcome"] == "training" for n in result["nodes"].values())
            and result["cluster_phases"]["first-step"] is not None)


def _wait_first_step(boot: Boot, deadline: float) -> None:
    """Polls the one file that says so (a full report per node per poll runs ten systemctl/journalctl calls)."""
    while time.monotonic() < deadline:
        if any(report.first_step(node) is not None for node in boot.nodes):
            return
        time.sleep(FIRST_STEP_POLL_S)
