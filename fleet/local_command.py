"""`fleet up | down | status | drill`: the local cluster (cloud: local) on this machine.

`up` shows its progress on stderr and ends with a summary (`--json`: the summary alone on stdout); the cluster's
network stays until `down`. `drill` injects the faults the cluster must survive into a running cluster. `up --boot`
boots the stack's nodes as machines instead, a cloud stack's or the local one's (fleet.boot_command).
"""

from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.table import Table

from fleet.plan_command import capacity_line, capacity_of
from fleet.stacks import resolve, spec_and_plan
from here.local import cluster
from here.local.errors import LocalError


class RichReporter:
    """Progress lines on stderr: phases, notes, and one line per logged step (throttled to every tenth)."""

    def __init__(self, console: Console, total: int) -> None:
        self.console, self.total = console, total

    def phase(self, text: str) -> None:
        self.console.print(f"[bold]•[/] {text}")

    def note(self, text: str) -> None:
        self.console.print(f"[yellow]![/] {text}")

    def step(self, step: int, loss: float) -> None:
        if step == 1 or step % 10 == 0 or step == self.total:
            self.console.print(f"  step {step}/{self.total}  loss {loss:.4f}")


def _port_range(text: str) -> tuple[str, int, int]:
    node, _, ports = text.partition(":")
    low, _, high = ports.partition("-")
    try:
        return node, int(low), int(high or low)
    except ValueError:
        raise SystemExit(f"fleet up: --close-port wants NODE:PORT or NODE:LOW-HIGH, got '{text}'") from None


def _slow_link(text: str) -> tuple[str, str]:
    node, _, rate = text.partition(":")
    return node, rate or "20mbit"


def register(subparsers) -> None:
    from fleet.cli import add_stack_args

    up = subparsers.add_parser("up", help="bring a local stack up on this machine and run its job")
    add_stack_args(up)
    up.add_argument("--first-step-timeout", type=float, default=60.0, metavar="S",
                    help="fail when no training step happened after S seconds (default 60)")
    up.add_argument("--close-port", action="append", default=[], type=_port_range, metavar="NODE:PORTS",
                    help="fault drill: close TCP PORT or LOW-HIGH in NODE's firewall (e.g. head:29400)")
    up.add_argument("--slow-link", action="append", default=[], type=_slow_link, metavar="NODE[:RATE]",
                    help="fault drill: shape NODE's link to RATE (tc units, default 20mbit)")
    up.add_argument("--boot", action="store_true",
                    help="boot the stack's head and workers as machines here (real cloud-init and systemd, the "
                         "cloud's emulated metadata and store, fake GPUs; the local stack's CPU nodes too) to the "
                         "job's first step; needs root")
    up.add_argument("--workers", type=int, default=1, metavar="N", help="--boot: workers beside the head (default 1)")
    up.add_argument("--tiny-job", action="store_true",
                    help="--boot: the local stack's tiny model instead of the stack's job (seconds to the first step "
                         "on a CPU instead of minutes)")
    up.add_argument("--boot-timeout", type=float, default=900.0, metavar="S",
                    help="--boot: seconds the boot may take to the first step (default 900)")
    up.add_argument("--keep", action="store_true", help="--boot: keep the run's disks and service logs")
    up.set_defaults(run=run_up)
    down = subparsers.add_parser("down", help="remove every namespace, rule, process and file `fleet up` made")
    add_stack_args(down, json_flag=False)
    down.add_argument("--keep-bucket", action="store_true", help="keep the checkpoints and code bundle")
    down.set_defaults(run=run_down)
    status = subparsers.add_parser("status", help="show the local cluster: nodes, namespaces, processes, last step")
    add_stack_args(status)
    status.set_defaults(run=run_status)
    drill = subparsers.add_parser("drill", help="inject a fault into the running local cluster")
    add_stack_args(drill, json_flag=False)
    drill.add_argument("fault", choices=["kill", "spot", "cut", "rejoin"],
                       help="kill: the node dies; spot: an interruption notice; cut: the node's network is cut; "
                            "rejoin: a node that left boots again (a fresh machine, as the scaling group replaces it) "
                            "and joins the running job")
    drill.add_argument("node", help="node name, e.g. worker-1")
    drill.set_defaults(run=run_drill)


def _plan(args):
    spec, plan = spec_and_plan(resolve(args.stack, args.stack_file))
    return spec, plan


def _fail(error: LocalError) -> int:
    print(f"fleet: {error}", file=sys.stderr)
    return error.code


def run_up(args) -> int:
    if args.boot:
        from fleet.boot_command import run_boot

        return run_boot(args)
    spec, plan = _plan(args)
    total = spec.job.steps
    console = Console(stderr=True)
    reporter = RichReporter(console, total)
    shown = capacity_of(plan)
    # The stack's own place was not taken, or is kept without capacity: say where the cluster is and why.
    if shown and not (shown[0]["chosen"] and shown[0]["available"]):
        for answer in shown:
            reporter.note(capacity_line(answer))
    opts = cluster.Options(total_steps=total, first_step_timeout_s=args.first_step_timeout,
                           close_ports=tuple(args.close_port), slow_links=tuple(args.slow_link))
    try:
        summary = cluster.up(plan, opts, reporter)
    except LocalError as error:
        return _fail(error)
    except KeyboardInterrupt:
        print(f"fleet: interrupted; the cluster's processes and network are removed (its logs and checkpoints stay "
              f"until the next `fleet up` or `fleet down --stack {plan.stack}`).", file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps(summary))
    else:
        done = "rolled onto the new code" if "rolled" in summary else "job finished"
        table = Table(title=f"{plan.name}: {done}", show_header=False)
        for key, value in summary.items():
            table.add_row(key, "\n".join(value) if key == "events" else str(value))
        Console().print(table)
        console.print(f"The cluster's network stays up: `fleet status --stack {plan.stack}`, "
                      f"`fleet down --stack {plan.stack}`.")
    return 0


def run_down(args) -> int:
    _, plan = _plan(args)
    try:
        removed = cluster.down(plan, args.keep_bucket)
    except LocalError as error:
        return _fail(error)
    print(f"removed {', '.join(removed)}" if removed else f"cluster '{plan.name}' is not up; nothing to remove")
    return 0


def run_status(args) -> int:
    _, plan = _plan(args)
    try:
        current = cluster.status(plan)
    except LocalError as error:
        return _fail(error)
    if current is None:
        print(f"cluster '{plan.name}' is not up", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(current))
        return 0
    table = Table(title=f"{current['cluster']} ({current['mode']}): {current['phase']}, {current['since_s']} s, "
                        f"last step {current['last_step']}, checkpoints {current['checkpoints']}")
    for column in ("node", "address", "namespace", "processes", "gate"):
        table.add_column(column)
    for node in current["nodes"]:
        table.add_row(node["name"], node["address"], node["namespace"] or "-", str(node["processes"]),
                      node["failure"] or "ok")
    Console().print(table)
    if current["message"]:
        print(current["message"])
    return 0


def run_drill(args) -> int:
    _, plan = _plan(args)
    try:
        drills = {"kill": cluster.kill_node, "spot": cluster.spot_notice, "cut": cluster.cut_node,
                  "rejoin": cluster.rejoin_node}
        drills[args.fault](plan, args.node)
    except LocalError as error:
        return _fail(error)
    except KeyError:
        print(f"fleet: no node '{args.node}' in cluster '{plan.name}'", file=sys.stderr)
        return 2
    return 0
