"""`fleet up / down / status` for a local plan: build the network, boot the nodes from their user-data, follow the
job to its end and say what happened. Every resource is recorded in the state file before it is made; a run that
fails or is stopped removes its processes and network itself, and one that crashed is cleared by the next `up`."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from components.local import lookups as places
from here.local import cloudconfig, firewall, host, instances, network, processes, progress, rollout
from here.local import state as statefile
from here.local.errors import EXIT_USAGE, LocalError
from here.local.layout import Layout, Node, layout
from plan.bundle import write_bundle
from plan.model import ClusterPlan

LOOPBACK = "127.0.0.1"
POLL_S = 0.2
# The local stand-in for the cloud's two-minute warning: a node that saw its notice is terminated this long after.
SPOT_WARNING_S = 15.0
# Once one node reports peers it cannot reach, the others get this long to write their own acceptance verdicts
# before the cluster comes down, so that `fleet health` shows every node's.
VERDICTS_GRACE_S = 10.0


class Reporter(Protocol):
    """Where `up` tells its progress (a rich display in the CLI, a list in tests)."""

    def phase(self, text: str) -> None: ...
    def step(self, step: int, loss: float) -> None: ...
    def note(self, text: str) -> None: ...


@dataclass(frozen=True)
class Options:
    total_steps: int
    first_step_timeout_s: float = 60.0  # no training step by then: fail and say which node could not reach what
    close_ports: tuple[tuple[str, int, int], ...] = ()  # fault drill: (node, low, high) closed in that node's firewall
    slow_links: tuple[tuple[str, str], ...] = ()  # fault drill: (node, rate) that node's link is shaped to


@dataclass
class _Run:
    lay: Layout
    plan: ClusterPlan
    st: statefile.State
    namespaced: bool
    metadata_address: str
    started: float = field(default_factory=time.time)
    unreachable_since: float | None = None
    events: list[str] = field(default_factory=list)


def _require_local(plan: ClusterPlan) -> None:
    if plan.cloud != "local":
        raise LocalError(f"stack '{plan.stack}' is for cloud '{plan.cloud}'; `fleet up` brings up local stacks only "
                         "(cloud: local). Use `pulumi up` for clouds.", EXIT_USAGE)


def _save(run: _Run) -> None:
    statefile.save(run.lay.state_file, run.st)


def _build_network(run: _Run, opts: Options) -> None:
    lay = run.lay
    taken = network.existing() & {lay.bridge_namespace, *(n.namespace for n in lay.nodes)}
    if taken:
        raise LocalError(f"network namespaces {', '.join(sorted(taken))} already exist (left by an earlier run?); "
                         f"`fleet down --stack {run.plan.stack}` removes them.", EXIT_USAGE)
    run.st.namespaces.append(lay.bridge_namespace)
    _save(run)
    network.create_bridge(lay)
    rules = firewall.ruleset(run.plan.firewall, lay.members)
    for node in lay.nodes:
        run.st.namespaces.append(node.namespace)
        _save(run)
        network.create_node(lay, node, run.plan.network.mtu)
        firewall.apply(node.namespace, rules)
    for name, low, high in opts.close_ports:
        firewall.close_ports(lay.node(name).namespace, low, high)
    for name, rate in opts.slow_links:
        network.slow_link(lay.node(name).namespace, rate)


def _boot(run: _Run, node: Node, user_data: str | None = None) -> subprocess.Popen:
    """A fresh machine: an empty root, the role's user-data (or the given one) executed into it, then its local-mode
    entry."""
    shutil.rmtree(node.root, ignore_errors=True)
    endpoint = f"{run.metadata_address}:{instances.port(run.lay, node)}"
    user_data = user_data or (run.plan.head if node.role == "head" else run.plan.worker).user_data
    entry = cloudconfig.execute(user_data, node.root, {"metadata": endpoint})
    if not run.namespaced:
        _loopback_overrides(node)
    proc = processes.start_node(node, entry, run.namespaced)
    run.st.processes[node.name] = proc.pid
    _save(run)
    return proc


def _loopback_overrides(node: Node) -> None:
    """Without namespaces every node shares this machine's network: the head is reached on loopback, gloo and NCCL
    use lo, and the MTU and the ephemeral port range (this machine's own settings then) are left alone."""
    etc = node.root / "etc/gpufleet"
    with open(etc / "node.env", "a") as env:
        env.write(f"GF_HEAD_ADDRESS='{LOOPBACK}'\nGF_PORT_RANGE=()\nGF_MTU=''\n")
    with open(etc / "nccl.env", "a") as env:
        env.write("NCCL_SOCKET_IFNAME=lo\nGLOO_SOCKET_IFNAME=lo\n")


def _clear_earlier(plan: ClusterPlan, lay: Layout, report: Reporter) -> None:
    """A cluster that is up (its job finished, its network kept until `down`) or whose `fleet up` still runs stays
    (`up` rolls new code onto a running one instead: here.local.rollout); what a failed, stopped or crashed run
    left is removed, its checkpoints kept (as a cloud keeps its bucket), so `up` runs again and resumes from them."""
    earlier = statefile.load(lay.state_file)
    if earlier is not None and (earlier.phase == "finished" or _live(earlier)):
        owner = f", `fleet up` is process {earlier.owner}" if earlier.phase != "finished" else ""
        raise LocalError(f"cluster '{plan.name}' is already up ({earlier.phase}{owner}); "
                         f"`fleet down --stack {plan.stack}` removes it first.", EXIT_USAGE)
    removed = down(plan, keep_bucket=True)
    if earlier is not None:
        report.note(f"an earlier run of cluster '{plan.name}' ended {earlier.phase}: removed what it left "
                    f"({', '.join(removed)})")


def _live(st: statefile.State) -> bool:
    """The run is still going: not ended, and the `fleet up` that owns it is there."""
    if st.phase not in ("starting", "running") or st.owner <= 0:
        return False
    try:
        os.kill(st.owner, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: there all the same
    return True


def up(plan: ClusterPlan, opts: Options, report: Reporter) -> dict:
    """Bring the cluster up, run the job to its end and return the summary; the network stays until `down`."""
    _require_local(plan)
    lay = layout(plan)
    lacking = host.node_tools()
    if lacking is not None:
        raise LocalError(f"the node scripts need tools this machine lacks: {lacking.what}; {lacking.fix}.")
    running = statefile.load(lay.state_file)
    if running is not None and _live(running) and running.code_sha256 != plan.storage.code_sha256:
        return rollout.request(plan, lay, running, report.note)
    _clear_earlier(plan, lay, report)
    without = host.namespaces()
    namespaced = without is None
    if without is not None:
        report.note(f"{without.what}: no network namespaces, so the nodes run as processes on loopback and the "
                    f"firewall emulation is off ({without.fix})")
    st = statefile.State(cluster=plan.name, stack=plan.stack, mode="namespaces" if namespaced else "loopback",
                         started_unix=time.time(), owner=os.getpid(), code_sha256=plan.storage.code_sha256,
                         settings=rollout.settings(plan))
    run = _Run(lay, plan, st, namespaced, lay.metadata_address if namespaced else LOOPBACK)
    _save(run)
    try:
        write_bundle(lay.bucket / "code", plan.storage.code_sha256)
        if namespaced:
            report.phase(f"network: {len(lay.nodes)} namespaces on a bridge, {len(plan.firewall)} firewall rules")
            _build_network(run, opts)
        instances.write(plan, lay, run.metadata_address)
        metadata = processes.start_metadata(lay, namespaced, run.metadata_address)
        st.processes["metadata"] = metadata.pid
        report.phase("nodes: booting from user-data (gate, then torchrun)")
        places.record(plan.identity, plan.zone, plan.instance.name)  # the next `up` keeps this place
        procs = {node.name: _boot(run, node) for node in lay.nodes}
        st.phase = "running"
        _save(run)
        _follow(run, procs, opts, report)
        summary = _summary(run)
        st.phase, st.message = "finished", ""
        return summary
    except BaseException as error:
        st.phase = "stopped" if isinstance(error, KeyboardInterrupt) else "failed"
        st.message = str(error)
        raise
    finally:
        processes.end(list(st.processes.values()), st.namespaces)
        if st.phase != "finished":
            for namespace in reversed(st.namespaces):
                network.delete(namespace)
            st.namespaces.clear()
            places.forget(plan.identity)
        _save(run)


def _follow(run: _Run, procs: dict, opts: Options, report: Reporter) -> None:
    """Watch the nodes until the head's job ends; act like the cloud would on what happens on the way."""
    lay, shown, terminate_at = run.lay, 0, {}
    roller = rollout.Roller(run.plan, lay, lambda node, user_data: _reboot(run, node, user_data),
                            lambda text: _event(run, report, text))
    while True:
        history = progress.steps(lay)
        for item in history[shown:]:
            report.step(item.step, item.loss)
        shown = len(history)
        if not history:
            _raise_if_unreachable(run)
            if time.time() - run.started > opts.first_step_timeout_s:
                raise LocalError(_no_step_message(run, opts))
        for node in lay.nodes:
            proc = procs.get(node.name)
            if proc is None or proc.poll() is None:
                continue
            del procs[node.name]
            named = progress.named_by_acceptance(node)
            if named and node.role != "head":
                _event(run, report, f"{node.name} ({node.address}) was named by the cluster acceptance ({named}) "
                                    "and left; the job re-forms without it")
                continue
            reason = progress.failure(node) or named
            if reason:
                raise LocalError(f"node {node.name} ({node.address}) failed its health gate: {reason}\n"
                                 f"{progress.log_tail(node)}")
            if node.role == "head":
                if proc.returncode != 0:
                    raise LocalError(f"the job failed on node {node.name} (exit {proc.returncode}):\n"
                                     f"{progress.log_tail(node)}")
                return
            _worker_exit(run, node, proc.returncode, report, roller.leaving)
        _terminate_noticed(run, procs, terminate_at)
        _replace_requested(run, procs, report)
        roller.poll(procs)
        time.sleep(POLL_S)


def _terminate_noticed(run: _Run, procs: dict, terminate_at: dict) -> None:
    """Like the cloud, end a noticed node's machine when its warning runs out, whatever its processes are doing
    (torchrun's exit barrier would wait for the job's other nodes for minutes)."""
    for node in run.lay.nodes:
        if node.name not in procs or not progress.left_on_notice(node):
            terminate_at.pop(node.name, None)  # gone, or a fresh machine: a later notice starts a fresh warning
            continue
        when = terminate_at.setdefault(node.name, time.time() + SPOT_WARNING_S)
        if time.time() >= when:
            del terminate_at[node.name]
            _end_machine(run, node)


def _replace_requested(run: _Run, procs: dict, report: Reporter) -> None:
    """Like the scaling group, boot a fresh machine for a node that left once a drill asks for it: an empty root and
    the same user-data, so it joins the running job the way a replacement or a scale-out node does. A request for a
    node that is still running waits until its machine has ended."""
    for node in run.lay.nodes:
        request = run.lay.replacements / node.name
        if node.name in procs or not request.is_file():
            continue
        request.unlink()
        procs[node.name] = _boot(run, node)
        _event(run, report, f"{node.name} booted again (a fresh machine) and joins the running job")


def _reboot(run: _Run, node: Node, user_data: str) -> subprocess.Popen:
    """The node's machine ends (whatever it left running) and a fresh one boots from this user-data."""
    _end_machine(run, node)
    return _boot(run, node, user_data)


def _end_machine(run: _Run, node: Node) -> None:
    if run.namespaced:
        processes.kill_namespace(node.namespace)
    else:
        processes.end([run.st.processes[node.name]], [], grace_s=0)


def _worker_exit(run: _Run, node: Node, rc: int, report: Reporter, rolling: set[str]) -> None:
    if progress.left_on_notice(node):
        notice = "rollout" if node.name in rolling else "spot"
        _event(run, report, f"{node.name} left after its {notice} notice (checkpoint written, job continues)")
        instances.clear_spot_notice(run.plan, run.lay, node.name)
    elif (run.lay.cut_off / node.name).is_file():
        _event(run, report, f"{node.name} was cut off the network (exit {rc}); the job re-forms with the nodes left")
    elif rc < 0 or rc >= 128:
        _event(run, report, f"{node.name} was lost (exit {rc}); the job re-forms with the nodes left")
    elif rc != 0:
        raise LocalError(f"node {node.name} ({node.address}) failed (exit {rc}):\n{progress.log_tail(node)}")


def _event(run: _Run, report: Reporter, text: str) -> None:
    run.events.append(text)
    report.note(text)


def _raise_if_unreachable(run: _Run) -> None:
    """Fail as soon as the job's preflight finds nodes that cannot reach each other (a worker's firewall closing the
    collectives' ports, which the health gate cannot see from that worker), naming the nodes behind the addresses,
    once every node wrote its acceptance verdict or VERDICTS_GRACE_S passed."""
    for node in run.lay.nodes:
        report = progress.unreachable_peers(node)
        if report:
            run.unreachable_since = run.unreachable_since or time.time()
            pending = not all(progress.has_acceptance(n) for n in run.lay.nodes)
            if pending and time.time() - run.unreachable_since < VERDICTS_GRACE_S:
                return
            names = ", ".join(f"{n.name} = {n.address}" for n in run.lay.nodes)
            raise LocalError(f"the nodes cannot form the job ({names}):\n{report.removeprefix('error: ')}")


def _no_step_message(run: _Run, opts: Options) -> str:
    tails = "\n".join(f"--- {n.name}:\n{progress.log_tail(n, 5)}" for n in run.lay.nodes)
    return (f"no training step after {opts.first_step_timeout_s:.0f} s; the nodes could not form the job. "
            f"Last lines of each node:\n{tails}")


def _summary(run: _Run) -> dict:
    history = progress.steps(run.lay)
    job = progress.job_summary(run.lay) or {}
    world = job.get("world_size", 0)
    return {
        "cluster": run.plan.name,
        "instance_type": run.plan.instance.name,  # the chosen candidate's (fleet up says why where not the stack's)
        "mode": run.st.mode,
        "nodes": world // run.plan.ranks_per_node,
        "ranks": world,
        "steps_completed": job.get("steps_completed", 0),
        "final_loss": job.get("final_loss"),
        "tokens_per_s": job.get("tokens_per_s"),
        "seconds_to_first_step": round(history[0].time - run.started, 2) if history else None,
        "seconds_total": round(time.time() - run.started, 2),
        "checkpoints": progress.checkpoints(run.lay),
        "resumed_from_step": job.get("resumed_from_step"),
        "segments": [[seg[0].step, seg[-1].step] for seg in progress.segments(history)],
        "events": run.events,
        "logs": str(run.lay.directory / "nodes"),
    }


def down(plan: ClusterPlan, keep_bucket: bool = False) -> list[str]:
    """Remove every process, namespace (with its links and rules) and file `up` made; safe to run twice.
    keep_bucket leaves the checkpoints and code bundle, as deleting a cloud cluster leaves its bucket."""
    _require_local(plan)
    lay = layout(plan)
    st = statefile.load(lay.state_file)
    names = [lay.bridge_namespace, *(n.namespace for n in lay.nodes)]
    present = network.existing() & set(names) if host.can_remove_namespaces() else set()
    groups = list(st.processes.values()) if st else []
    processes.end(groups, sorted(present))
    for namespace in sorted(present):
        network.delete(namespace)
    removed = [f"namespace {ns}" for ns in sorted(present)]
    places.forget(plan.identity)
    kept = {lay.bucket} if keep_bucket else set()
    if lay.directory.exists():
        try:
            _remove_files(lay.directory, kept)
        except PermissionError:
            raise LocalError(f"{lay.directory} holds another user's files (an earlier run as root?); "
                             f"`sudo .venv/bin/fleet down --stack {plan.stack}` removes them.", EXIT_USAGE) from None
        removed.append(f"directory {lay.directory}" + (" (bucket kept)" if kept else ""))
    return removed


def _remove_files(directory: Path, kept: set[Path]) -> None:
    """Everything under directory but what is kept, and the directory itself when nothing is."""
    for path in directory.iterdir():
        if path in kept:
            continue
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()
    if not kept:
        directory.rmdir()


def status(plan: ClusterPlan) -> dict | None:
    """The cluster as it is now, or None when it is not up."""
    _require_local(plan)
    lay = layout(plan)
    st = statefile.load(lay.state_file)
    if st is None:
        return None
    history = progress.steps(lay)
    nodes = []
    for node in lay.nodes:
        pids = network.pids(node.namespace) if st.mode == "namespaces" and os.geteuid() == 0 else []
        nodes.append({"name": node.name, "address": node.address, "namespace": node.namespace if
                      st.mode == "namespaces" else None, "processes": len(pids), "failure": progress.failure(node)})
    return {"cluster": st.cluster, "mode": st.mode, "phase": st.phase, "message": st.message,
            "since_s": round(time.time() - st.started_unix, 1), "nodes": nodes,
            "last_step": history[-1].step if history else None,
            "loss": history[-1].loss if history else None, "checkpoints": progress.checkpoints(lay)}


def machines(plan: ClusterPlan) -> dict[str, bool]:
    """Whether each node's machine runs (any process in its namespace, or its process group's leader alive), for
    `fleet heal`; the cluster must be running."""
    lay = layout(plan)
    st = statefile.load(lay.state_file)
    if st is None or not _live(st):
        raise LocalError(f"cluster '{plan.name}' is not running", EXIT_USAGE)
    if st.mode == "namespaces":
        return {node.name: bool(network.pids(node.namespace)) for node in lay.nodes}
    return {node.name: processes.alive(st.processes.get(node.name, 0)) for node in lay.nodes}


def kill_node(plan: ClusterPlan, name: str) -> None:
    """Fault drill: the node's machine dies (every process in its namespace, SIGKILL)."""
    lay = layout(plan)
    st = statefile.load(lay.state_file)
    if st is None or st.phase != "running":
        raise LocalError(f"cluster '{plan.name}' is not running", EXIT_USAGE)
    _end_machine(_Run(lay, plan, st, st.mode == "namespaces", ""), lay.node(name))


def spot_notice(plan: ClusterPlan, name: str) -> None:
    """Fault drill: the cloud announces the node's interruption on its (fake) metadata endpoint."""
    lay = layout(plan)
    if not lay.node(name).spot:
        raise LocalError(f"node {name} is not a spot node (market.spotPercent makes workers spot)", EXIT_USAGE)
    instances.set_spot_notice(plan, lay, name, SPOT_WARNING_S)


def cut_node(plan: ClusterPlan, name: str) -> None:
    """Fault drill: the node's network is cut (its processes go on, unheard and hearing nothing)."""
    lay = layout(plan)
    st = statefile.load(lay.state_file)
    if st is None or st.phase != "running":
        raise LocalError(f"cluster '{plan.name}' is not running", EXIT_USAGE)
    if st.mode != "namespaces":
        raise LocalError("a network cut needs the nodes in network namespaces (root, iproute2 and nftables)",
                         EXIT_USAGE)
    node = lay.node(name)
    lay.cut_off.mkdir(parents=True, exist_ok=True)
    (lay.cut_off / name).touch()
    network.cut(lay, node)


def rejoin_node(plan: ClusterPlan, name: str) -> None:
    """Fault drill: a node that left (killed, or gone after its spot notice) comes back as a fresh machine, as the
    scaling group replaces it; `up` boots it once the old machine has ended."""
    lay = layout(plan)
    node = lay.node(name)
    st = statefile.load(lay.state_file)
    if st is None or st.phase != "running":
        raise LocalError(f"cluster '{plan.name}' is not running", EXIT_USAGE)
    if node.role == "head":
        raise LocalError("the head hosts the rendezvous and the job's end; only a worker can rejoin", EXIT_USAGE)
    lay.replacements.mkdir(parents=True, exist_ok=True)
    (lay.replacements / name).touch()
