"""How far a booted node got, from the node itself: cloud-init's status and result.json, the gpufleet units' states
and journal, the node scripts' failure record, and the seconds from power-on to each phase of the boot.

Phases, each the first moment it is true, in seconds since the machine was started:
  user-data    cloud-config.service finished (datasource read, write_files written; runcmd comes next)
  cloud-init   cloud-final.service finished (user-data's runcmd done)
  bundle       the code bundle fetched (and then checked and unpacked: gpufleet-node install)
  gate         gpufleet-gate.service active (driver, fabric and health checks passed)
  rendezvous   torchrun's process group formed (the job's first line, printed by rank 0 after init)
  first-step   the job's first logged training step (metrics.jsonl on the rank-0 node)
systemd's timestamps are CLOCK_MONOTONIC, which the machine shares with the host (no time namespace).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from here.boot.cluster import BootNode

UNITS = ("cloud-config.service", "cloud-final.service", "gpufleet-gate.service", "gpufleet-train.service",
         "gpufleet-spot.service", "gpufleet-ckpt-sync.service", "gpufleet-monitor.service", "gpufleet-discover.timer")
PHASES = ("user-data", "cloud-init", "bundle", "gate", "rendezvous", "first-step")
RENDEZVOUS_MARK = " params, world "
# A line that no retry can change: a tool the image does not have.
FATAL_OUTPUT = ("command not found",)
WARMING_MARK = "in the warm pool"  # gpufleet-node wait-in-service, while the target lifecycle state is Warmed:*


@dataclass
class NodeReport:
    name: str
    role: str
    cloud_init: dict
    units: dict[str, dict[str, str]]
    failure: str
    health: str
    journal: str
    phases: dict[str, float | None] = field(default_factory=dict)

    def unit(self, name: str) -> dict[str, str]:
        return self.units.get(name, {})

    def summary(self) -> str:
        errors = "; ".join(self.cloud_init.get("errors", []))
        lines = [f"{self.name} ({self.role}): cloud-init {self.cloud_init.get('status', '?')}"
                 + (f", errors: {errors}" if errors else "")]
        for unit, props in self.units.items():
            lines.append(f"  {unit}: {props.get('ActiveState')}/{props.get('SubState')} result={props.get('Result')} "
                         f"status={props.get('ExecMainStatus')} restarts={props.get('NRestarts')}")
        if self.failure:
            lines.append(f"  /run/gpufleet/failure: {self.failure}")
        timings = (f"{name} {'-' if at is None else f'{at:.1f}s'}" for name, at in self.phases.items())
        lines.append("  phases: " + ", ".join(timings))
        return "\n".join(lines)


def _props(node: BootNode, unit: str) -> dict[str, str]:
    out = node.machine.run("systemctl", "show", unit, "-p", "ActiveState,SubState,Result,ExecMainStatus,NRestarts,"
                           "ActiveEnterTimestampMonotonic,InactiveEnterTimestampMonotonic,LoadState").stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def _read(node: BootNode, path: str) -> str:
    try:
        return node.machine.path(path).read_text(errors="replace").strip()
    except OSError:
        return ""


def _since_start(node: BootNode, monotonic_usec: str | int | None) -> float | None:
    if not monotonic_usec or int(monotonic_usec) == 0:
        return None
    return int(monotonic_usec) / 1e6 - node.machine.started


def _journal_first(node: BootNode, unit: str, mark: str) -> float | None:
    out = node.machine.run("journalctl", "-u", unit, "-o", "json", "--no-pager", "-g", mark, timeout=30).stdout
    for line in out.splitlines():
        entry = json.loads(line)
        return _since_start(node, entry.get("__MONOTONIC_TIMESTAMP"))
    return None


def first_step(node: BootNode) -> float | None:
    """The node's first logged step: gpufleet-train keeps each node's metrics beside the checkpoints, in
    <checkpoint dir>/runs/<node id>/metrics.jsonl (only rank 0's node writes them)."""
    node_id = _read(node, "/var/lib/gpufleet/node-id")
    if not node_id:
        return None
    text = _read(node, f"{node.settings['GF_CHECKPOINT_DIR']}/runs/{node_id}/metrics.jsonl")
    for line in text.splitlines():
        return json.loads(line)["time"] - node.machine.started_wall
    return None


def _bundle(node: BootNode) -> float | None:
    """When the download finished, once it was checked and unpacked (the code directory exists): the archive's
    ctime, as the aws CLI sets its mtime to the object's LastModified."""
    if not node.machine.path(f"/var/lib/gpufleet/code/{node.settings['GF_CODE_SHA256']}").is_dir():
        return None
    try:
        return node.machine.path("/var/lib/gpufleet/code/bundle.tar.gz").stat().st_ctime - node.machine.started_wall
    except OSError:
        return None


def collect(node: BootNode) -> NodeReport:
    status = node.machine.run("cloud-init", "status", "--format", "json").stdout
    try:
        cloud_init = json.loads(status)
    except json.JSONDecodeError:
        cloud_init = {"status": "unknown", "errors": [status.strip()]}
    units = {unit: _props(node, unit) for unit in UNITS}
    journal = node.machine.run("journalctl", "--no-pager", "-o", "short-monotonic", "-u", "cloud-final.service",
                               "-u", "gpufleet-*", timeout=30).stdout
    gate = units["gpufleet-gate.service"]
    phases = {
        "user-data": _since_start(node, units["cloud-config.service"].get("ActiveEnterTimestampMonotonic")),
        "cloud-init": _since_start(node, units["cloud-final.service"].get("ActiveEnterTimestampMonotonic")),
        "bundle": _bundle(node),
        "gate": _since_start(node, gate.get("ActiveEnterTimestampMonotonic")) if gate.get("ActiveState") == "active"
        else None,
        "rendezvous": _journal_first(node, "gpufleet-train.service", RENDEZVOUS_MARK),
        "first-step": first_step(node),
    }
    return NodeReport(name=node.name, role=node.role, cloud_init=cloud_init, units=units,
                      failure=_read(node, "/run/gpufleet/failure"),
                      health=_read(node, "/var/lib/gpufleet/metrics/health.prom"), journal=journal, phases=phases)


def outcome(node: BootNode) -> str | None:
    """"training" once the job runs, "warming" while it waits in a warm pool, "failed: WHY" once the boot cannot get
    there, None while it may."""
    if node.machine.run("systemctl", "is-active", "gpufleet-train.service").stdout.strip() == "active":
        return "training"
    if node.machine.run("systemctl", "is-active", "gpufleet-in-service.service").stdout.strip() == "activating" \
            and WARMING_MARK in node.machine.run("journalctl", "--no-pager", "-o", "cat", "-u",
                                                 "gpufleet-in-service.service").stdout:
        return "warming"
    for unit in ("cloud-final.service", "gpufleet-gate.service"):
        if node.machine.run("systemctl", "is-failed", unit).stdout.strip() == "failed":
            why = _read(node, "/run/gpufleet/failure") or f"{unit} failed"
            return f"failed: {why}"
    for line in _read(node, "/var/log/cloud-init-output.log").splitlines():
        if any(mark in line for mark in FATAL_OUTPUT):
            return f"failed: {line.strip()}"
    return None


def wait_outcome(node: BootNode, timeout: float, poll_s: float = 2) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (result := outcome(node)) is not None:
            return result
        time.sleep(poll_s)
    return f"undecided after {timeout:.0f} s"
