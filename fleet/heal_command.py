"""`fleet heal --stack NAME` and `fleet roll --stack NAME`: the nodes no group replaces, replaced through Pulumi.

heal: refreshes the stack's node instances (the cloud's describe call says which are gone or stopped), reads each
one's mark in the bucket (fleet/node_marks.py) and, for a running node without one, how long ago heal first saw it so
(recording it the first time), decides (plan/heal.py) and replaces the failed, the dead and the hung, one `pulumi up
--target <urn> --replace <urn>` each, the head last. Run every 10 minutes by .github/workflows/heal.yml.

roll: `pulumi up` on everything but the fixed workers, then each fixed worker by its own targeted `pulumi up` (its
user-data's replace rule fires there), waiting until the new node's mark says it passed its gate before the next
goes: a code change reaches Alibaba's and Tencent's fixed workers one at a time (plan/rollout.py FLEET_ROLL). Then
each Alibaba ESS group, whose configuration that `pulumi up` changed in place: for each member launched from older
settings, one at a time, the group grows by one, launches its successor, and the old member is removed once the
successor passed its gate (fleet/ess_groups.py; plan/rollout.py GROUP_ROLL, plan/group_roll.py).

On the local cluster heal boots a worker whose machine ended anew (the running `fleet up` does, as for `fleet drill
rejoin`); the head, which holds the job, is not replaced; `fleet up` again rolls local nodes, so roll refuses it.

Exit 0 done, 1 a node refused (past the failure budget, or the local head) or a roll that stopped or a Pulumi step
that failed, 2 a bad stack, a local cluster that is not running, or roll on the local cluster."""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from functools import partial

from clouds import CLOUDS
from fleet import as_groups
from fleet.as_groups import AsFailed, Refreshes, RefreshRecords, TencentRefreshes, refresh_records
from fleet.cli import add_stack_args
from fleet.ess_groups import AlibabaGroups, EssFailed, Groups, groups_in
from fleet.node_marks import UnmarkedRecords, marks_reader, s3_client
from fleet.stack_nodes import Pulumi, PulumiFailed, node_resources, nodes_seen, stack_output
from fleet.stacks import resolve, spec_and_plan
from here.local.errors import EXIT_FAILED, EXIT_USAGE
from plan.group_refresh import PAUSED, RUNNING, SUCCESSFUL, refreshed_to, refreshes_groups
from plan.group_roll import SERVING, rolls_groups, settled, stale, successor, successors, surge
from plan.heal import NodeSeen, awaiting_mark, decide_heal, node_marks, roll_order, unmarked_records
from plan.lifecycle import MARK_DEADLINE_S
from plan.model import HEAD, WORKER
from plan.software import FAILURE_BUDGET, PERMANENT_FAILURES

POLL_S = 30


def ess_groups(region: str) -> Groups:
    """The ESS calls of a roll (a stand-in in tests)."""
    return AlibabaGroups(region)


def as_refreshes(region: str) -> Refreshes:
    """The AS calls of a roll's group refreshes (a stand-in in tests)."""
    return TencentRefreshes(region)


def register(subparsers) -> None:
    heal = subparsers.add_parser("heal", help="replace the stack's failed or dead nodes that no group replaces")
    add_stack_args(heal, json_flag=False)
    heal.set_defaults(run=run_heal)
    roll = subparsers.add_parser("roll", help="`pulumi up`, with the fixed workers replaced one at a time")
    add_stack_args(roll, json_flag=False)
    roll.add_argument("--timeout", type=int, default=3600,
                      help="seconds a replaced worker's successor may take to pass its gate (default 3600)")
    roll.set_defaults(run=run_roll)


def _stack(args, local_ok: bool = False):
    """The stack, its plan and its cloud's profile; None (said) for the local cluster unless `local_ok`."""
    stack_file = resolve(args.stack, args.stack_file)
    spec, plan = spec_and_plan(stack_file)
    cloud = CLOUDS[spec.cloud]
    if cloud.runs_here and not local_ok:
        print(f"fleet: {stack_file.name} runs on this machine: `fleet up` again rolls its nodes.", file=sys.stderr)
        return None
    return Pulumi(args.stack or stack_file.name), spec, plan, cloud


def _reader(plan, deployment):
    return marks_reader(s3_client(plan.pipeline.store, plan.region),
                        node_marks(stack_output(deployment, "checkpointUri")))


def run_heal(args) -> int:
    pulumi, spec, plan, cloud = _stack(args, local_ok=True)
    if cloud.runs_here:
        return _heal_here(plan, cloud)
    try:
        before = node_resources(pulumi.export(), spec.cloud)
        if not before:
            print(f"{pulumi.stack} holds no node instance: nothing to heal (an instance an earlier refresh dropped "
                  "from the state is made anew by `fleet roll` or `pulumi up`)")
            return 0
        pulumi.refresh(r["urn"] for r in before)
        after = pulumi.export()
        records = UnmarkedRecords.at(s3_client(plan.pipeline.store, plan.region),
                                     unmarked_records(stack_output(after, "checkpointUri")))
        seen = _timed(nodes_seen(before, after, spec.cloud, _reader(plan, after)), records, cloud.dead_states)
        decision = decide_heal(plan.rollout, seen, cloud.dead_states, budget=FAILURE_BUDGET,
                               permanent=PERMANENT_FAILURES, deadline_s=MARK_DEADLINE_S,
                               planned={HEAD: plan.head.user_data, WORKER: plan.worker.user_data})
        for how in decision.groups:
            print(f"left to its group: {how}")
        for node, why in decision.refused:
            print(f"fleet: {node.name} ({node.instance_id}) is not replaced: {why}", file=sys.stderr)
        for replacement in decision.replace:
            node = replacement.node
            print(f"replacing {node.name} ({node.instance_id}): {replacement.why}")
            pulumi.up(target=[node.resource], replace=[] if replacement.gone else [node.resource])
            records.forget(node.instance_id)
    except PulumiFailed as error:
        print(f"fleet: {error}", file=sys.stderr)
        return EXIT_FAILED
    if not decision.replace and not decision.refused:
        waiting = sum(node.unmarked_s is not None for node in seen)
        print(f"all {len(seen)} node(s) outside groups are running and none is marked failed"
              + (f"; {waiting} not marked yet, within {MARK_DEADLINE_S} s of first seen" if waiting else ""))
    return EXIT_FAILED if decision.refused else 0


def _timed(seen: list[NodeSeen], records: UnmarkedRecords, dead_states) -> list[NodeSeen]:
    """Each node awaiting its mark with how long ago heal first saw it so (recorded now the first time); the record
    of a node that marked itself since goes."""
    now = datetime.now(UTC)
    timed = []
    for node in seen:
        if awaiting_mark(node, dead_states):
            node = dataclasses.replace(node, unmarked_s=records.age(node.instance_id, now))
        elif node.mark:
            records.forget(node.instance_id)
        timed.append(node)
    return timed


def _heal_here(plan, cloud) -> int:
    """The local cluster: a node whose machine ended is dead; a worker's is booted anew by the `fleet up` that owns
    the cluster (as `fleet drill rejoin` asks), and joins the running job."""
    from here.local import cluster
    from here.local.errors import LocalError
    from here.local.layout import layout

    try:
        running = cluster.machines(plan)
    except LocalError as error:
        print(f"fleet: {error}", file=sys.stderr)
        return error.code
    roles = {node.name: node.role for node in layout(plan).nodes}
    seen = [NodeSeen(name, name, roles[name], name, "running" if up else "ended", None) for name, up in running.items()]
    # Local nodes write no mark (the `fleet up` that owns them watches them), so none is timed as hung.
    decision = decide_heal(plan.rollout, seen, cloud.dead_states, budget=FAILURE_BUDGET, permanent=PERMANENT_FAILURES,
                           deadline_s=MARK_DEADLINE_S)
    for node, why in decision.refused:
        print(f"fleet: {node.name} is not replaced: {why}", file=sys.stderr)
    for replacement in decision.replace:
        cluster.rejoin_node(plan, replacement.node.name)
        print(f"replacing {replacement.node.name}: {replacement.why}; the cluster's `fleet up` boots it anew")
    if not decision.replace and not decision.refused:
        print(f"all {len(seen)} local nodes run")
    return EXIT_FAILED if decision.refused else 0


def run_roll(args) -> int:
    found = _stack(args)
    if found is None:
        return EXIT_USAGE
    pulumi, spec, plan, _ = found
    try:
        deployment = before = pulumi.export()
        nodes = nodes_seen(node_resources(deployment, spec.cloud), deployment, spec.cloud, lambda _: None)
        workers = roll_order(plan.rollout, nodes)
        pulumi.up(exclude=[w.resource for w in workers])
        for index, worker in enumerate(workers, 1):
            print(f"rolling {worker.name} ({index} of {len(workers)})")
            pulumi.up(target=[worker.resource])
            deployment = pulumi.export()
            instance_id = next(r["id"] for r in node_resources(deployment, spec.cloud)
                               if r["urn"] == worker.resource)
            if not _in_service(partial(_marks, _reader(plan, deployment), (instance_id,)), worker.name, args.timeout):
                return EXIT_FAILED
        if rolls_groups(plan.rollout) and not _roll_groups(plan, pulumi.export(), args.timeout):
            return EXIT_FAILED
        if refreshes_groups(plan.rollout) and not _refresh_groups(plan, before, pulumi.export(), args.timeout):
            return EXIT_FAILED
    except (PulumiFailed, EssFailed, AsFailed) as error:
        print(f"fleet: {error}", file=sys.stderr)
        return EXIT_FAILED
    return 0


def _roll_groups(plan, deployment: dict, timeout: int) -> bool:
    """Each ESS group's members launched from older settings, one at a time, the longest-serving first: the group
    grows by one and launches the successor from its current configuration, and once that one is in service the old
    member is removed with the expected number lowered (plan/group_roll.py). False (said) where a successor failed or
    the time ran out: the group is put back at the stack's size and the old member stays in the job."""
    held = groups_in(deployment)
    if not held:
        return True
    groups, mark_of = ess_groups(plan.region), _reader(plan, deployment)
    for group in held:
        old = stale(groups.members(group.group_id), group.user_data)
        for index, member in enumerate(old, 1):
            before = {m.instance_id: m.state for m in groups.members(group.group_id)}
            if before.get(member.instance_id) != SERVING:
                continue  # it left the group, or is leaving, since
            print(f"rolling {member.instance_id} of {group.name} ({index} of {len(old)})")
            groups.resize(group.group_id, surge(group))
            look = partial(_successor_marks, groups, group.group_id, tuple(before), mark_of)
            passed = _in_service(look, f"{member.instance_id}'s successor in {group.name}", timeout)
            if passed:
                groups.remove(group.group_id, member.instance_id)
            # Back at the stack's size: after a removal only the maximum changes; after a failure ESS removes the
            # surplus instance by the group's removal policy, NewestInstance first: the successor.
            groups.resize(group.group_id, settled(group))
            if not passed:
                print(f"fleet: {group.name} is back at {group.desired} instances (ESS removes the surplus one, the "
                      f"newest); {member.instance_id} stays in the job", file=sys.stderr)
                return False
    return True


def _refresh_groups(plan, before: dict, after: dict, timeout: int) -> bool:
    """Each AS group whose members run older launch settings than its configuration now holds (plan/group_refresh.py:
    never one this roll's `pulumi up` made), refreshed by AS, one member at a time, after the up; the record of what
    it was refreshed to moves only when the refresh succeeded. False (said) where a refresh ended otherwise or ran
    past the timeout; a held refresh is cancelled first, so the group is never left disabled."""
    held, had = as_groups.groups_in(after), as_groups.groups_in(before)
    if not held:
        return True
    records = RefreshRecords(s3_client(plan.pipeline.store, plan.region),
                             refresh_records(stack_output(after, "checkpointUri")))
    refreshes = as_refreshes(plan.region)
    for group in held.values():
        recorded = records.read(group.group_id)
        previous = had[group.group_id].user_data if group.group_id in had else None
        members_run = refreshed_to(recorded, previous, group.user_data)
        if recorded is None:  # first seen: what its members run now, kept until a refresh succeeds
            records.write(group.group_id, members_run)
        if members_run == group.user_data:
            continue
        print(f"refreshing {group.name}: its members run older launch settings; AS reinstalls them one at a time")
        activity = refreshes.start(group.group_id)
        deadline = time.monotonic() + timeout
        while (status := refreshes.status(activity)) in RUNNING and time.monotonic() <= deadline:
            time.sleep(POLL_S)
        if status == SUCCESSFUL:
            records.write(group.group_id, group.user_data)
            print(f"{group.name} refreshed ({activity})")
            continue
        if status in RUNNING:
            print(f"fleet: {group.name}'s refresh {activity} did not end within {timeout} s; it goes on (AS keeps the "
                  "group disabled until it ends): `fleet roll` again once it ended", file=sys.stderr)
            return False
        if status in PAUSED:
            refreshes.cancel(group.group_id, activity)
        print(f"fleet: {group.name}'s refresh {activity} ended {status}{' (cancelled)' * (status in PAUSED)}: the "
              "group is enabled again and members not reinstalled keep the older settings; a member whose reinstall "
              "failed stays in standby (the AS console's refresh activity names it): remove it from the group, then "
              "`fleet roll` again refreshes the rest", file=sys.stderr)
        return False
    return True


def _marks(mark_of: Callable[[str], str | None], instance_ids: Iterable[str]) -> dict[str, str | None]:
    return {instance_id: mark_of(instance_id) for instance_id in instance_ids}


def _successor_marks(groups: Groups, group_id: str, before: tuple[str, ...],
                     mark_of: Callable[[str], str | None]) -> dict[str, str | None]:
    """The marks of the members the group added since it held `before`."""
    return _marks(mark_of, successors(before, groups.members(group_id)))


def _in_service(look: Callable[[], Mapping[str, str | None]], name: str, timeout: int) -> bool:
    """Waits until a node's mark says it passed its gate (`look`: the nodes that may, with their marks); False (said)
    when one failed it or the time ran out: the roll stops there, so no second node leaves the job (`fleet heal`, or
    for a group's node the group, replaces a failed one)."""
    deadline = time.monotonic() + timeout
    while not (outcome := successor(look())).passed:
        if outcome.failed:
            instance_id, mark = outcome.failed
            print(f"fleet: {name} ({instance_id}) failed its gate ({mark}); the roll stops here, `fleet heal` "
                  "replaces it", file=sys.stderr)
            return False
        if time.monotonic() > deadline:
            print(f"fleet: {name} did not pass its gate within {timeout} s; the roll stops here (its console log "
                  "says why)", file=sys.stderr)
            return False
        time.sleep(POLL_S)
    print(f"{name} ({outcome.passed}) is in service")
    return True
