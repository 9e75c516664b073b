"""The cluster acceptance inside the training job: once the job's world forms and before its first step, every rank
runs `acceptance.accept` (or the node mesh names a node no other reaches); a node it names reports itself and leaves,
the others restart so their torchrun agents re-form the world without it. The node's command runs the job through
`health.run_job`, which hands `accepted_world` to the job as the hook that forms its world.

gpufleet-train sets GF_HEALTH_CONFIG (the node plan, /etc/gpufleet/node.json) and puts cloud-init/ on PYTHONPATH;
gpufleet-lib.sh exports the node's STATE, RUN and BIN directories. On a named node the first rank writes the reason
to $RUN/acceptance-reason (gpufleet-train will not start the job again while it is there), calls `gpufleet-report
REASON` (the node's metric, tag and the group's unhealthy path) and sends SIGTERM to its torchrun agent: an agent
stopped by a signal leaves the rendezvous open for the others (torch.distributed.launcher.api), where one whose
workers failed would close it for every node.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from health import result
from health.acceptance import Plan, accept, mesh_report
from health.config import load_config
from health.result import Report
from training import preflight
from training.distributed import Dist


class NodeFailed(preflight.UnreachablePeers):
    """The acceptance named a node: the message says which and with what figure. On the named node the job stops
    for good; on the others it stops so torchrun re-forms the world without that node."""


def plan_for(config_path: Path, bucket_mb: int) -> Plan:
    config = load_config(config_path)
    return Plan(bucket_bytes=bucket_mb << 20, baseline_gbs=config.limits.cross_node_busbw_gbs, level=config.level)


def _node_dirs() -> tuple[Path, Path, Path]:
    root = Path(os.environ.get("ROOT", "/"))
    state = os.environ.get("STATE", root / "var/lib/gpufleet")
    return Path(state), Path(os.environ.get("RUN", root / "run/gpufleet")), Path(os.environ.get("BIN", root / "bin"))


def _stop_agent() -> None:
    if "TORCHELASTIC_RUN_ID" in os.environ:
        os.kill(os.getppid(), signal.SIGTERM)


def _leave(report: Report, run_dir: Path, bin_dir: Path) -> None:
    """This node was named: report it through the node's own path, then stop its torchrun agent."""
    reporter = bin_dir / "gpufleet-report"
    if reporter.exists():
        subprocess.run([str(reporter), report.reason()], check=False, timeout=120)
    _stop_agent()


def settle(report: Report, local_rank: int) -> None:
    """Write this node's report (its first rank); a node the report names is reported and its agent stopped."""
    state, run_dir, bin_dir = _node_dirs()
    if local_rank == 0:
        result.write(report, state / "health/acceptance.json", state / "metrics/health-acceptance.prom",
                     run_dir / "acceptance-reason")
        if not report.ok:
            _leave(report, run_dir, bin_dir)


def accepted_world(setup: Callable[[str], Dist], device: str, bucket_mb: int) -> Dist:
    """``setup(device)``'s world once it passed the acceptance; NodeFailed (or the mesh's UnreachablePeers, which
    names the node and port) after this node's report otherwise."""
    started = time.time()
    plan = plan_for(Path(os.environ["GF_HEALTH_CONFIG"]), bucket_mb)
    named = _node_dirs()[1] / "acceptance-reason"
    if named.is_file() and named.read_text().strip():
        # Named in an earlier round, and its agent restarted its workers (the others' new round asked it to) before
        # the stop reached it: leave again without joining, or the round would wait on it and name it once more.
        _stop_agent()
        raise NodeFailed(f"this node was named by the cluster acceptance ({named.read_text().strip()}) and stays "
                         "out of the job", [])
    try:
        d = setup(device)
    except preflight.UnreachablePeers as error:
        world, local = int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_WORLD_SIZE", 1))
        report = mesh_report(error.failures, int(os.environ.get("GROUP_RANK", 0)), world // local, started, plan.level)
        settle(report, int(os.environ.get("LOCAL_RANK", 0)))
        raise
    report = accept(d, plan)
    settle(report, d.local_rank)
    culprits = sorted({c.subject for c in report.failed if c.check == "acceptance-node"})
    if culprits or not report.ok:
        d.close()
        who = "this node" if not report.ok else ", ".join(culprits)
        raise NodeFailed(f"the cluster acceptance named {who} ({report.reason() or report.failed[0].subject}): "
                         "the job re-forms without it", [])
    return d
