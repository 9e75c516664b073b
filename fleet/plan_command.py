"""`fleet plan`: the program's full resource graph offline, as a table or as the JSON docs/design.md describes."""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Any

from rich.console import Console
from rich.table import Table

from fleet.diagram import mermaid
from fleet.preview import Preview, run_program
from fleet.stacks import resolve
from fleet.validate.command import print_validation, validation
from plan.candidates import chosen
from plan.fallback import launch_fallback
from plan.model import ClusterPlan, in_scaling_groups
from policy.rules import evaluate
from spec.errors import ToolchainMissing

EXIT_CLEAN, EXIT_VIOLATION, EXIT_INVALID = 0, 1, 2


def cost_of(plan: ClusterPlan) -> dict[str, Any]:
    cost = plan.cost
    return {"currency": cost.currency, "hourly": cost.expected_hourly, "onDemandHourly": cost.on_demand_hourly,
            "nodes": plan.scaling.nodes_desired, "priceDate": cost.price_date, "priceSource": cost.price_source,
            **({"ceilingHourly": cost.ceiling_hourly, "nodesCeiling": plan.scaling.nodes_max}
               if plan.scaling.policy_sized else {})}


def capacity_of(plan: ClusterPlan) -> list[dict[str, Any]]:
    """Each candidate the look-ups were asked about, in order, with its availability and whether the cluster runs
    there now; the plan's is the one chosen (plan/candidates.py)."""
    picked = chosen(plan.capacity)
    return [{"candidate": a.candidate.label, "available": a.available, "reason": a.reason, "running": a.running,
             "chosen": a is picked} for a in plan.capacity]


def capacity_line(answer: dict[str, Any]) -> str:
    """One candidate of `capacity_of` as `fleet plan` and `fleet up` print it; where the cluster runs, its capacity
    there now says whether new nodes (a replacement, a scale-out) can launch, not whether the cluster stays."""
    now = "available" if answer["available"] else f"sold out ({answer['reason']}) - new nodes may not launch"
    if answer["running"]:
        state = (f"chosen: the cluster runs here; capacity there now: {now}" if answer["chosen"]
                 else f"{now}; the cluster has instances here too")
    else:
        state = "chosen" if answer["chosen"] else "available" if answer["available"] else f"no: {answer['reason']}"
    return f"capacity: {answer['candidate']}: {state}"


def pipeline_of(plan: ClusterPlan) -> dict[str, Any]:
    """Where the stack's deploy, heal and drift check run (the workflows' runner) and how they reach its bucket."""
    pipeline = plan.pipeline
    return {"runsIn": pipeline.runs_in or None, "runner": list(pipeline.runner),
            "storeEndpoint": pipeline.store.endpoint, "needs": pipeline.needs or None}


def report(preview: Preview, plan: ClusterPlan) -> dict[str, Any]:
    """The `fleet plan --json` document (docs/design.md, "The preview JSON")."""
    return {"stack": preview.stack, "cloud": plan.cloud, "resources": preview.resources, "outputs": preview.outputs,
            "cost": cost_of(plan), "capacity": capacity_of(plan), "pipeline": pipeline_of(plan),
            "launchFallback": launch_fallback(in_scaling_groups(plan.workers), plan.worker_types),
            "warnings": preview.warnings,
            "violations": evaluate(preview.resources)}


def _table(document: dict[str, Any]) -> Table:
    resources = document["resources"]
    components = {r["name"]: r["type"] for r in resources if not r["options"].get("custom")}
    custom = [r for r in resources if r["options"].get("custom")]
    table = Table(title=f"{document['stack']} ({document['cloud']}): {len(custom)} resources")
    table.add_column("component")
    table.add_column("resource type", no_wrap=True)
    table.add_column("count", justify="right")
    counts = Counter((components.get(r["parent"], "-").rsplit(":", 1)[-1], r["type"].rsplit(":", 1)[0]) for r in custom)
    for (component, kind), count in sorted(counts.items()):
        table.add_row(component, kind, str(count))
    return table


def register(subparsers) -> None:
    from fleet.cli import add_stack_args

    parser = subparsers.add_parser("plan", help="preview a stack's resources offline (no Pulumi CLI, no credentials)")
    add_stack_args(parser)
    parser.add_argument("--diagram", action="store_true", help="print the topology as a Mermaid block instead")
    parser.add_argument("--validate", action="store_true",
                        help="also have the cloud's own provider code validate and plan the resources (AWS: "
                             "terraform-provider-aws from a filesystem mirror; no credentials, no network)")
    parser.set_defaults(run=run)


def run(args) -> int:
    stack = resolve(args.stack, args.stack_file)
    preview = run_program(stack)
    plan = preview.plan
    document = report(preview, plan)
    if args.validate:
        try:
            document["validation"] = validation(preview, plan)
        except ToolchainMissing as error:
            print(f"fleet plan --validate: {error}", file=sys.stderr)
            return EXIT_INVALID
    failed = (any(v["level"] == "mandatory" for v in document["violations"])
              or bool(document.get("validation", {}).get("errors")))
    if args.diagram:
        print(mermaid(plan))
        return EXIT_VIOLATION if failed else EXIT_CLEAN
    if args.json:
        print(json.dumps(document, indent=2, sort_keys=False, default=str))
        return EXIT_VIOLATION if failed else EXIT_CLEAN
    console = Console()
    console.print(_table(document))
    cost = document["cost"]
    hourly = ("unknown (no public price)" if cost["hourly"] is None
              else f"{cost['hourly']:,.2f} {cost['currency']}/h")
    console.print(f"cost: {hourly} for {cost['nodes']} nodes (prices of {cost['priceDate']}, {cost['priceSource']})")
    if "nodesCeiling" in cost:
        ceiling = "unknown" if cost["ceilingHourly"] is None else f"{cost['ceilingHourly']:,.2f} {cost['currency']}/h"
        console.print(f"cost at the scaling policy's ceiling: {ceiling} for {cost['nodesCeiling']} nodes (it only "
                      "scales out: a GPU-bound job keeps every GPU busy at any size, so it grows there and stays)")
    for answer in document["capacity"]:
        console.print(capacity_line(answer), markup=False)
    for nodes in document["launchFallback"]:
        console.print(f"fallback at launch: {nodes}")
    pipeline = document["pipeline"]
    console.print(f"pipeline: runs on {', '.join(pipeline['runner'])}"
                  + (f" ({pipeline['needs']})" if pipeline["needs"] else ""), markup=False)
    for nodes in document["outputs"].get("rollout", []):
        console.print(f"on a change of code or settings: {nodes}")
    for warning in document["warnings"]:
        console.print(f"[yellow]warning[/yellow] {warning}")
    for violation in document["violations"]:
        style = "red" if violation["level"] == "mandatory" else "yellow"
        console.print(f"[{style}]{violation['level']}[/{style}] {violation['policy']}: {violation['resource']}: "
                      f"{violation['message']}")
    if "validation" in document:
        print_validation(console, document["validation"])
    return EXIT_VIOLATION if failed else EXIT_CLEAN
