"""`fleet heal --stack NAME` and `fleet roll --stack NAME`: the nodes no group replaces, replaced through Pulumi.

heal: refreshes the stack's node instances (the cloud's describe call says which are gone or stopped), reads each
one's mark in the bucket (fleet/node_marks.py), decides (plan/heal.py) and replaces the failed and the dead, one
`pulumi up --target <urn> --replace <urn>` each, the head last. Run every 10 minutes by .github/workflows/heal.yml.

roll: `pulumi up` on everything but the fixed workers, then each fixed worker by its own targeted `pulumi up` (its
user-data's replace rule fires there), waiting until the new node's mark says it passed its gate before the next
goes: a code change reaches Alibaba's and Tencent's fixed workers one at a time (plan/rollout.py FLEET_ROLL).

On the local cluster heal boots a worker whose machine ended anew (the running `fleet up` does, as for `fleet drill
rejoin`); the head, which holds the job, is not replaced; `fleet up` again rolls local nodes, so roll refuses it.

Exit 0 done, 1 a node refused (past the failure budget, or the local head) or a roll that stopped or a Pulumi step
that failed, 2 a bad stack, a local cluster that is not running, or roll on the local cluster."""

from __future__ import annotations

import sys
import time

from clouds import CLOUDS
from fleet.cli import add_stack_args
from fleet.node_marks import marks_reader, s3_client
from fleet.stack_nodes import Pulumi, PulumiFailed, node_resources, nodes_seen, stack_output
from fleet.stacks import resolve, spec_and_plan
from here.local.errors import EXIT_FAILED, EXIT_USAGE
from plan.heal import FAILED, IN_SERVICE, OVER_BUDGET, NodeSeen, decide_heal, node_marks, roll_order
from plan.software import FAILURE_BUDGET, PERMANENT_FAILURES

POLL_S = 30


def register(subparsers) -> None:
    heal = subparsers.add_parser("heal", help="replace the stack's failed or dead nodes that no group replaces")
    add_stack_args(heal, json_flag=False)
    heal.set_defaults(run=run_heal)
    roll = subparsers.add_parser("roll", help="`pulumi up`, with the fixed workers replaced one at a time")
    add_stack_args(roll, json_flag=False)
    roll.add_argument("--timeout", type=int, default=3600,
                      help="seconds a replaced worker may take to pass its gate (default 3600)")
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


def _reader(spec, deployment):
    return marks_reader(s3_client(spec.cloud, spec.region),
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
        seen = nodes_seen(before, after, spec.cloud, _reader(spec, after))
        decision = decide_heal(plan.rollout, seen, cloud.dead_states, budget=FAILURE_BUDGET,
                               permanent=PERMANENT_FAILURES)
        for how in decision.groups:
            print(f"left to its group: {how}")
        for node, why in decision.refused:
            print(f"fleet: {node.name} ({node.instance_id}) is not replaced: {why}", file=sys.stderr)
        for replacement in decision.replace:
            node = replacement.node
            print(f"replacing {node.name} ({node.instance_id}): {replacement.why}")
            pulumi.up(target=[node.resource], replace=[] if replacement.gone else [node.resource])
    except PulumiFailed as error:
        print(f"fleet: {error}", file=sys.stderr)
        return EXIT_FAILED
    if not decision.replace and not decision.refused:
        print(f"all {len(seen)} node(s) outside groups are running and none is marked failed")
    return EXIT_FAILED if decision.refused else 0


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
    decision = decide_heal(plan.rollout, seen, cloud.dead_states, budget=FAILURE_BUDGET, permanent=PERMANENT_FAILURES)
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
        deployment = pulumi.export()
        nodes = nodes_seen(node_resources(deployment, spec.cloud), deployment, spec.cloud, lambda _: None)
        workers = roll_order(plan.rollout, nodes)
        pulumi.up(exclude=[w.resource for w in workers])
        for index, worker in enumerate(workers, 1):
            print(f"rolling {worker.name} ({index} of {len(workers)})")
            pulumi.up(target=[worker.resource])
            deployment = pulumi.export()
            instance_id = next(r["id"] for r in node_resources(deployment, spec.cloud)
                               if r["urn"] == worker.resource)
            if not _in_service(_reader(spec, deployment), worker.name, instance_id, args.timeout):
                return EXIT_FAILED
    except PulumiFailed as error:
        print(f"fleet: {error}", file=sys.stderr)
        return EXIT_FAILED
    return 0


def _in_service(mark_of, name: str, instance_id: str, timeout: int) -> bool:
    """Waits until the node's mark says it passed its gate; False (said) when it failed it or the time ran out:
    the roll stops there, so no second node leaves the job (`fleet heal` replaces a failed one)."""
    deadline = time.monotonic() + timeout
    while (mark := mark_of(instance_id)) != IN_SERVICE:
        if mark and mark.startswith((FAILED, OVER_BUDGET)):
            print(f"fleet: {name} ({instance_id}) failed its gate ({mark}); the roll stops here, `fleet heal` "
                  "replaces it", file=sys.stderr)
            return False
        if time.monotonic() > deadline:
            print(f"fleet: {name} ({instance_id}) did not pass its gate within {timeout} s; the roll stops here "
                  "(its console log says why)", file=sys.stderr)
            return False
        time.sleep(POLL_S)
    print(f"{name} ({instance_id}) is in service")
    return True
