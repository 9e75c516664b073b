"""`fleet health`: the last health-gate and acceptance result of every node, as a table (or JSON).

Where the results come from:
- a local stack: each node's root (here.local.layout), the files the gate and the acceptance test write there:
  <root>/var/lib/gpufleet/health/{gate,acceptance}.json;
- a cloud stack: the head's Prometheus (`--prometheus URL`, e.g. through an SSH tunnel to the head's private address),
  which scrapes the same results from every node as node-exporter textfile metrics (gpufleet_health_*). A node that
  failed is also tagged gpufleet:health=failed:<reason> by gpufleet-report; reading tags needs the cloud's API and
  credentials, so this command does not.
Exit 0 when every node has a passing gate result, 1 otherwise, 2 for a wrong stack or flag.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from rich.console import Console
from rich.table import Table

from clouds import profile
from fleet.stacks import resolve, spec_and_plan
from here.local.layout import layout
from here.local.progress import RESULTS
from plan.userdata import PROMETHEUS_PORT

KINDS = ("gate", "acceptance")
METRICS = ("gpufleet_health_check_ok", "gpufleet_health_figure", "gpufleet_health_threshold", "gpufleet_health_ok",
           "gpufleet_health_timestamp_seconds", "gpufleet_health_duration_seconds")  # fmt: skip


class HealthError(Exception):
    """What the user wrote cannot be read; the message says what and the fix."""


def register(subparsers) -> None:
    from fleet.cli import add_stack_args

    parser = subparsers.add_parser("health", help="the last health gate and acceptance result of every node")
    add_stack_args(parser)
    parser.add_argument("--checks", action="store_true", help="every check's figure, not only the failed ones")
    parser.add_argument("--prometheus", metavar="URL", help="a cloud stack's head Prometheus, e.g. http://HEAD:9090")
    parser.set_defaults(run=run)


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def local_nodes(plan) -> list[dict]:
    """Each node of a local cluster with the results its root holds (None where it has none yet)."""
    return [{"node": node.name, "address": node.address,
             **{kind: _read(node.root / RESULTS / f"{kind}.json") for kind in KINDS}} for node in layout(plan).nodes]


def _query(url: str, metric: str) -> list[dict]:
    address = f"{url.rstrip('/')}/api/v1/query?{urllib.parse.urlencode({'query': metric})}"
    try:
        with urllib.request.urlopen(address, timeout=10) as response:
            body = json.loads(response.read())
    except (urllib.error.URLError, OSError, json.JSONDecodeError) as error:
        raise HealthError(f"--prometheus {url}: {getattr(error, 'reason', error)}; is the head's Prometheus "
                          "reachable from here (an SSH tunnel to its private address)?") from None
    if body.get("status") != "success":
        raise HealthError(f"--prometheus {url}: {body.get('error', 'the query failed')}")
    return body["data"]["result"]


_REPORT_FIELDS = {"gpufleet_health_ok": "ok", "gpufleet_health_timestamp_seconds": "started",
                  "gpufleet_health_duration_seconds": "duration_s"}  # fmt: skip
_ROW_FIELDS = {"gpufleet_health_check_ok": "ok", "gpufleet_health_figure": "figure",
               "gpufleet_health_threshold": "threshold"}  # fmt: skip


def prometheus_nodes(url: str) -> list[dict]:
    """The same results, rebuilt per node (Prometheus' `instance`) from the gpufleet_health_* series; rows carry no
    detail text (metrics hold numbers)."""
    reports: dict[tuple[str, str], dict] = {}
    rows: dict[tuple[str, str, str, str], dict] = {}
    for metric in METRICS:
        for series in _query(url, metric):
            labels, value = series["metric"], float(series["value"][1])
            key = (labels.get("instance", "?"), labels.get("kind", "gate"))
            report = reports.setdefault(key, {"kind": key[1], "level": labels.get("level", ""), "checks": []})
            if metric in _REPORT_FIELDS:
                report[_REPORT_FIELDS[metric]] = bool(value) if metric == "gpufleet_health_ok" else value
                report["level"] = labels.get("level", report["level"])
                continue
            row = rows.get((*key, labels["check"], labels["subject"]))
            if row is None:
                row = {"check": labels["check"], "subject": labels["subject"], "unit": "", "figure": None,
                       "threshold": None, "rule": ">=", "ok": True, "detail": ""}  # fmt: skip
                rows[(*key, labels["check"], labels["subject"])] = row
                report["checks"].append(row)
            row[_ROW_FIELDS[metric]] = bool(value) if metric == "gpufleet_health_check_ok" else value
            row["unit"], row["rule"] = labels.get("unit", row["unit"]), labels.get("rule", row["rule"])
    instances = sorted({instance for instance, _ in reports})
    return [{"node": instance, "address": instance.rsplit(":", 1)[0],
             **{kind: reports.get((instance, kind)) for kind in KINDS}} for instance in instances]


def node_ok(node: dict) -> bool:
    return bool(node["gate"] and node["gate"].get("ok")) and not (node["acceptance"] and not node["acceptance"]["ok"])


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _row_text(row: dict) -> str:
    figure = f"{_number(row['figure'])} {row.get('unit', '')}".strip()
    if row.get("threshold") is None:
        return f"{row['check']} {row['subject']}: {figure if row['figure'] is not None else row.get('detail', '')}"
    return f"{row['check']} {row['subject']}: {figure} (needs {row['rule']} {_number(row['threshold'])})"


def _verdict(result: dict | None) -> str:
    if result is None:
        return "[dim]no result[/]"
    return "[green]ok[/]" if result.get("ok") else "[red]FAILED[/]"


def _age(result: dict | None, now: float) -> str:
    if not result or "started" not in result:
        return "-"
    seconds = max(0, now - result["started"])
    return f"{seconds:.0f} s ago" if seconds < 120 else f"{seconds / 60:.0f} min ago"


def failed_rows(result: dict | None) -> list[dict]:
    """The rows that failed this node: the ok=false rows of a result whose verdict failed. A passing acceptance
    still holds the rows of the node it named and of that node's pairs (the acceptance is judged per node); those
    belong to the named node's line, and every row to the --checks table."""
    return [r for r in result["checks"] if not r["ok"]] if result and not result.get("ok") else []


def summary(title: str, nodes: list[dict], now: float) -> Table:
    table = Table(title=title)
    for column in ("node", "gate", "ran", "took", "acceptance", "failed checks"):
        table.add_column(column)
    for node in nodes:
        gate, accept = node["gate"], node["acceptance"]
        failed = [_row_text(r) for result in (gate, accept) for r in failed_rows(result)]
        took = f"{gate['duration_s']:.0f} s" if gate and "duration_s" in gate else "-"
        table.add_row(node["node"], _verdict(gate), _age(gate, now), took, _verdict(accept), "\n".join(failed))
    return table


def checks_table(node: dict) -> Table:
    table = Table(title=f"{node['node']}: every check")
    for column in ("kind", "check", "subject", "figure", "threshold", "verdict", "detail"):
        table.add_column(column)
    for kind in KINDS:
        for row in (node[kind] or {}).get("checks", []):
            verdict = "[green]ok[/]" if row["ok"] else "[red]FAILED[/]"
            threshold = "-" if row["threshold"] is None else f"{row['rule']} {_number(row['threshold'])}"
            table.add_row(kind, row["check"], row["subject"], f"{_number(row['figure'])} {row.get('unit', '')}",
                          threshold, verdict, row.get("detail", ""))
    return table


def run(args) -> int:
    stack = resolve(args.stack, args.stack_file)
    _, plan = spec_and_plan(stack)
    try:
        if args.prometheus:
            source, nodes = args.prometheus, prometheus_nodes(args.prometheus)
        elif profile(plan.cloud).runs_here:
            source, nodes = "node roots", local_nodes(plan)
        else:
            raise HealthError(f"stack '{plan.stack}' runs on {plan.cloud}: its results are on its nodes. Pass "
                              f"--prometheus http://{plan.network.head_address}:{PROMETHEUS_PORT} (the head's "
                              "Prometheus, through a tunnel to the head: SSH where the stack allows it, else the "
                              "cloud's session manager) to read them.")
    except HealthError as error:
        print(f"fleet health: {error}", file=sys.stderr)
        return 2
    ok = bool(nodes) and all(node_ok(node) for node in nodes)
    if args.json:
        print(json.dumps({"stack": plan.stack, "cloud": plan.cloud, "source": source, "ok": ok, "nodes": nodes}))
        return 0 if ok else 1
    console = Console()
    console.print(summary(f"{plan.name}: health ({source})", nodes, time.time()))
    for node in nodes if args.checks else []:
        console.print(checks_table(node))
    return 0 if ok else 1
