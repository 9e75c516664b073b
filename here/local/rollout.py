"""A code change reaching a running local cluster: `fleet up` run again while the job runs rolls the nodes the plan
says roll (plan/rollout.py ROLL), REFRESH_BATCH at a time, as a scaling group's rolling refresh does.

The second `fleet up` (`request`) writes the new bundle to the bucket and a request beside the cluster's state; the
`fleet up` that owns the nodes (`Roller`, polled by here.local.cluster) carries it out: the node hears it leaves on
its metadata endpoint (lifecycle-state Terminated, as a node its group takes away: cloud-init/clouds/local.sh), so
its spot watcher checkpoints and takes it out of the job; once its machine has ended it boots anew from the new
user-data, and the next node goes when this one is back in the job. The request file records each step's time,
which the second `fleet up` follows and reports."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from here.local import cloudconfig, instances
from here.local import state as statefile
from here.local.errors import EXIT_USAGE, LocalError
from here.local.layout import Layout, Node
from here.metadata import state as metadata
from plan.bundle import write_bundle
from plan.model import HEAD, WORKER, ClusterPlan
from plan.rollout import HOLD, REFRESH_BATCH, ROLL

REQUEST = "rollout.json"
REQUESTED, ROLLING, DONE = "requested", "rolling", "done"
LEAVING, IN_SERVICE = "Terminated", "InService"
# The head's job prints this each time it re-forms from a checkpoint (training/resume.py): the world it has now.
FORMED = re.compile(r"resumed from .*, now (\d+)\)")
POLL_S = 0.5


@dataclass
class NodeRoll:
    """One node's way through the roll, as Unix times (0 = not yet)."""

    node: str
    asked_unix: float = 0.0  # told to leave
    left_unix: float = 0.0  # its machine ended (checkpoint written)
    booted_unix: float = 0.0  # booted anew from the new user-data
    rejoined_unix: float = 0.0  # the job re-formed with it
    formed_before: int = 0  # the head's re-formations counted when it booted


@dataclass
class Request:
    code_sha256: str
    user_data: dict[str, str]  # role -> the new user-data
    nodes: list[NodeRoll]  # in the order they roll
    held: list[str]  # nodes the plan does not roll
    requested_unix: float
    phase: str = REQUESTED
    finished_unix: float = 0.0


def settings(plan: ClusterPlan) -> str:
    """A fingerprint of what the nodes are told but the code bundle: a change of it cannot reach a running job."""
    documents = [cloudconfig.document(role.user_data) for role in (plan.head, plan.worker)]
    text = json.dumps(documents, sort_keys=True).replace(plan.storage.code_sha256, "")
    return hashlib.sha256(text.encode()).hexdigest()


def mechanism(plan: ClusterPlan, node: Node) -> str:
    """How a change reaches this node, from the plan's rollout of its set (the head, or its role's groups)."""
    return next(r.mechanism for r in plan.rollout if (r.nodes == HEAD) == (node.role == HEAD))


def load(lay: Layout) -> Request | None:
    try:
        raw = json.loads((lay.directory / REQUEST).read_text())
    except FileNotFoundError:
        return None
    return Request(**raw | {"nodes": [NodeRoll(**n) for n in raw["nodes"]]})


def save(lay: Layout, request: Request) -> None:
    """Atomic, as the cluster's state: the requester reads while the owner writes."""
    tmp = lay.directory / f".{REQUEST}.tmp"
    tmp.write_text(json.dumps(asdict(request), indent=2) + "\n")
    os.replace(tmp, lay.directory / REQUEST)


def request(plan: ClusterPlan, lay: Layout, running: statefile.State, note: Callable[[str], None]) -> dict:
    """Ask the running cluster's `fleet up` to roll its nodes onto this plan's code and follow it to the end; the
    summary says which nodes rolled, when each left, booted and rejoined, and how long the roll took."""
    if running.phase != "running" or running.settings != settings(plan):
        what = "is still starting" if running.phase != "running" else "runs with other settings than the stack's"
        raise LocalError(f"cluster '{plan.name}' {what}: only a change of the code rolls a running local cluster; "
                         f"`fleet down --stack {plan.stack}` removes it first.", EXIT_USAGE)
    earlier = load(lay)
    if earlier is not None and earlier.phase != DONE:
        raise LocalError(f"cluster '{plan.name}' is already rolling onto bundle {earlier.code_sha256[:12]}; run "
                         "`fleet up` again when it is done.", EXIT_USAGE)
    if earlier is not None and earlier.code_sha256 == plan.storage.code_sha256:
        raise LocalError(f"cluster '{plan.name}' already rolled onto bundle {earlier.code_sha256[:12]}; "
                         f"`fleet down --stack {plan.stack}` removes it first.", EXIT_USAGE)
    write_bundle(lay.bucket / "code", plan.storage.code_sha256)
    rolled = [n.name for n in lay.nodes if mechanism(plan, n) == ROLL]
    held = [n.name for n in lay.nodes if mechanism(plan, n) == HOLD]
    started = time.time()
    save(lay, Request(plan.storage.code_sha256, {HEAD: plan.head.user_data, WORKER: plan.worker.user_data},
                      [NodeRoll(name) for name in rolled], held, started))
    note(f"new code (bundle {plan.storage.code_sha256[:12]}): rolling {', '.join(rolled) or 'no node'} "
         f"{REFRESH_BATCH} at a time while the job goes on" + (f"; {', '.join(held)} keeps the job" if held else ""))
    told: set[tuple[str, str]] = set()
    while True:
        current = load(lay)
        for item in current.nodes:
            for what, at in (("left (checkpoint written)", item.left_unix), ("booted with the new bundle",
                             item.booted_unix), ("rejoined the job", item.rejoined_unix)):
                if at and (item.node, what) not in told:
                    told.add((item.node, what))
                    note(f"{item.node} {what} at +{at - started:.1f} s")
        if current.phase == DONE:
            return summary(plan, current)
        owner = statefile.load(lay.state_file)
        if owner is None or owner.phase != "running":
            left = [n.node for n in current.nodes if not n.rejoined_unix]
            raise LocalError(f"the job ended ({owner.phase if owner else 'no cluster'}) before the roll was done; "
                             f"not rolled: {', '.join(left)}. The next `fleet up` starts every node with the new "
                             "code.")
        time.sleep(POLL_S)


def summary(plan: ClusterPlan, done: Request) -> dict:
    start = done.requested_unix
    return {"cluster": plan.name, "code_sha256": done.code_sha256, "held": done.held,
            "rolled": [{"node": n.node, "left_s": round(n.left_unix - start, 2), "booted_s": round(n.booted_unix
                        - start, 2), "rejoined_s": round(n.rejoined_unix - start, 2),
                        "out_of_job_s": round(n.rejoined_unix - n.asked_unix, 2)} for n in done.nodes],
            "seconds_roll": round(done.finished_unix - start, 2)}


def formations(head: Node) -> list[int]:
    """The world size of each time the head's job re-formed from a checkpoint, oldest first."""
    try:
        lines = head.log.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return []
    return [int(m.group(1)) for line in lines if (m := FORMED.search(line))]


@dataclass
class Roller:
    """The owner's side: one poll at a time (here.local.cluster._follow), so the job is watched while nodes roll."""

    plan: ClusterPlan
    lay: Layout
    boot: Callable[[Node, str], subprocess.Popen]  # a fresh machine for the node from this user-data
    event: Callable[[str], None]
    leaving: set[str] = field(default_factory=set)

    def poll(self, procs: dict) -> None:
        current = load(self.lay)
        if current is None or current.phase == DONE:
            return
        if current.phase == REQUESTED:
            current.phase = ROLLING
            self.event(f"rolling onto bundle {current.code_sha256[:12]}: {', '.join(n.node for n in current.nodes)}")
        batch = [n for n in current.nodes if not n.rejoined_unix][:REFRESH_BATCH]
        for item in batch:
            self._advance(current, item, procs)
        if all(n.rejoined_unix for n in current.nodes):
            current.phase, current.finished_unix = DONE, time.time()
            self.event(f"rolled {len(current.nodes)} node(s) in {current.finished_unix - current.requested_unix:.1f} s")
        save(self.lay, current)

    def _advance(self, current: Request, item: NodeRoll, procs: dict) -> None:
        node = self.lay.node(item.node)
        instance_id = instances.instance(self.plan, node).instance_id
        if not item.asked_unix:
            metadata.set_lifecycle_state(self.lay.metadata, instance_id, LEAVING)
            item.asked_unix = time.time()
            self.leaving.add(node.name)
        elif not item.left_unix:
            if node.name in procs:
                return
            item.left_unix = time.time()
            self.leaving.discard(node.name)
            metadata.set_lifecycle_state(self.lay.metadata, instance_id, IN_SERVICE)
            item.formed_before = len(formations(self.lay.nodes[0]))
            procs[node.name] = self.boot(node, current.user_data[node.role])
            item.booted_unix = time.time()
        else:
            world = len(procs) * self.plan.ranks_per_node
            if world in formations(self.lay.nodes[0])[item.formed_before:]:
                item.rejoined_unix = time.time()
                self.event(f"{node.name} rolled onto the new bundle and rejoined the job (world {world})")
