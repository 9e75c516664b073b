"""`fleet up --boot`: a stack's boot rehearsed on this machine: a cloud stack's nodes boot the exact user-data the
realizers hand the cloud, through the cloud's own cloud-init datasource (here/boot), before it costs GPU hours;
the local stack's nodes boot as machines (NoCloud, cloud mode) instead of running as processes. The machines and the
harness's services end with the command; `--keep` keeps their disks and logs to read.

Exit 0 when every node trains and the job logged its first step, 1 when a node failed or did not get there in time
(each such node's report on stderr), 2 for bad options or a machine that cannot boot machines.
"""

from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.table import Table

from fleet.stacks import resolve, spec_and_plan
from here.boot import host, rehearsal
from here.local.errors import EXIT_FAILED, EXIT_USAGE


def run_boot(args) -> int:
    stack = resolve(args.stack, args.stack_file)
    if args.tiny_job:
        stack = rehearsal.with_job(stack, rehearsal.TINY_JOB)
    plan = spec_and_plan(stack, booted=True)[1]
    if args.workers < 0:
        print(f"fleet: --workers must be 0 or more, got {args.workers}", file=sys.stderr)
        return EXIT_USAGE
    reason = host.why_not_here()
    if reason is not None:
        print(f"fleet: --boot cannot boot machines here: {reason}.", file=sys.stderr)
        return EXIT_USAGE
    console = Console(stderr=True)
    gpus = "fake GPUs" if plan.instance.gpus else "CPU nodes"
    console.print(f"[bold]•[/] booting {plan.name} ({plan.cloud} {plan.instance.name}): the head and "
                  f"{args.workers} worker(s), real cloud-init and systemd, {gpus}")
    try:
        result = rehearsal.rehearse(plan, workers=args.workers, timeout=args.boot_timeout, keep=args.keep,
                                    note=lambda text: console.print(f"[bold]•[/] {text}"))
    except ValueError as error:  # the stack names a baked image this machine has not baked
        print(f"fleet: {error}", file=sys.stderr)
        return EXIT_USAGE
    except RuntimeError as error:  # a harness service (store, metadata, mirrors) that did not start
        print(f"fleet: the boot harness did not start: {error}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("fleet: interrupted; the booted machines and the harness's services are removed.", file=sys.stderr)
        return 130
    summary = {"cluster": plan.name, "mode": "boot", **result}
    for name, node in result["nodes"].items():
        if "report" in node:
            console.print(f"[yellow]![/] {name} did not train:\n{node['report']}")
    if args.json:
        print(json.dumps(summary))
    else:
        _print_table(summary)
    return 0 if rehearsal.trained(result) else EXIT_FAILED


def _print_table(summary: dict) -> None:
    """A row per phase, a column per node: the phases' names stay whole on an 80-column terminal."""
    nodes = summary["nodes"]
    table = Table(title=f"{summary['cluster']}: booted in {summary['seconds_total']} s (seconds from power-on)")
    table.add_column("")
    for name in nodes:
        table.add_column(name, justify="right")
    table.add_row("outcome", *(node["outcome"] for node in nodes.values()))
    for phase in summary["cluster_phases"]:
        table.add_row(phase, *("-" if node["phases"][phase] is None else str(node["phases"][phase])
                               for node in nodes.values()))
    Console().print(table)
