"""Build the pull request's single gpufleet comment from collect.py's files for the branch and its base.

Per stack: resource changes against the base (added, removed, changed by type and name), policy findings, the cost
per month with its difference to the base, and the Mermaid topology. The marker lets the workflow find and update
the comment instead of adding a new one on every push.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

MARKER = "<!-- gpufleet-plan -->"
MAX_LISTED = 15


def _load(folder: Path, stack: str, suffix: str) -> Any:
    path = folder / f"{stack}.{suffix}"
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if suffix.endswith(".json") else text


# Asset paths name the checkout they were built in; the asset's content hash is already in its key.
IGNORED_INPUTS = frozenset({"source"})


def _keyed(plan: dict | None) -> dict[tuple[str, str], dict]:
    return {(r["type"], r["name"]): {k: v for k, v in r.get("inputs", {}).items() if k not in IGNORED_INPUTS}
            for r in (plan or {}).get("resources", [])}


def resource_changes(base: dict | None, head: dict | None) -> dict[str, list[tuple[str, str]]]:
    """Resources added, removed and changed (inputs differ), keyed by (type, name)."""
    old, new = _keyed(base), _keyed(head)
    return {"added": sorted(new.keys() - old.keys()), "removed": sorted(old.keys() - new.keys()),
            "changed": sorted(k for k in new.keys() & old.keys() if new[k] != old[k])}


def _usd(value: float | None) -> str:
    return "no public price" if value is None else f"${value:,.2f}"


def cost_line(base: dict | None, head: dict | None) -> str:
    """Monthly cost of the spot mix (on-demand beside it) and the change against the base branch."""
    if head is None:
        return "cost: not available"
    now, before = head["monthly"]["spotMix"], (base or {}).get("monthly", {}).get("spotMix")
    if now is None:
        line = "cost: no public price for this type"
    else:
        line = f"cost: **{_usd(now)}/month** expected ({_usd(head['monthly']['onDemand'])} on-demand)"
    if base is None:
        line += ", no cost on the base branch"
    elif now is not None and before is not None:
        delta = now - before
        line += ", no change" if abs(delta) < 0.005 else f", **{'+' if delta > 0 else '-'}{_usd(abs(delta))}** vs base"
    price = head["price"]
    line += f"; prices of {price['date']} ({price['source']})"
    return line + "".join(f"\n> :warning: {warning}" for warning in head.get("warnings", []))


def _listing(title: str, keys: list[tuple[str, str]]) -> list[str]:
    if not keys:
        return []
    shown = [f"  - `{name}` ({kind.rsplit(':', 1)[-1]})" for kind, name in keys[:MAX_LISTED]]
    more = [f"  - ... and {len(keys) - MAX_LISTED} more"] if len(keys) > MAX_LISTED else []
    return [f"- {title} ({len(keys)}):", *shown, *more]


def stack_section(stack: str, head: Path, base: Path) -> list[str]:
    plan, base_plan = _load(head, f"{stack}", "plan.json"), _load(base, stack, "plan.json")
    lines = [f"### `{stack}`"]
    if plan is None:
        return [*lines, ":x: `fleet plan` failed for this stack; see the job log.", ""]
    changes = resource_changes(base_plan, plan)
    counts = ", ".join(f"{len(keys)} {what}" for what, keys in changes.items())
    custom = sum(1 for r in plan["resources"] if r.get("options", {}).get("custom"))
    lines.append(f"{custom} resources; against base: {counts}" if base_plan else f"{custom} resources (new stack)")
    for what, keys in changes.items():
        lines += _listing(what, keys) if base_plan else []
    lines.append(cost_line(_load(base, stack, "cost.json"), _load(head, stack, "cost.json")))
    for violation in plan.get("violations", []):
        icon = ":x:" if violation["level"] == "mandatory" else ":warning:"
        lines.append(f"- {icon} {violation['level']} `{violation['policy']}` on `{violation['resource']}`: "
                     f"{violation['message']}")
    diagram = _load(head, stack, "diagram.md")
    if diagram:
        lines += ["<details><summary>topology</summary>", "", diagram.strip(), "", "</details>"]
    return [*lines, ""]


def comment(head: Path, base: Path) -> str:
    stacks = sorted(p.name.removesuffix(".plan.json") for p in head.glob("*.plan.json"))
    status = json.loads((head / "status.json").read_text(encoding="utf-8")) if (head / "status.json").is_file() else {}
    failing = sorted(s for s, code in status.items() if code != 0)
    summary = (f":x: mandatory policy violations or errors in: {', '.join(failing)}" if failing
               else ":white_check_mark: every stack plans cleanly")
    lines = [MARKER, "## gpufleet plan", "", summary, ""]
    for stack in sorted(set(stacks) | set(status)):
        lines += stack_section(stack, head, base)
    lines.append("_Offline preview under mocks (`fleet plan`); live `pulumi preview` comments come from the "
                 "per-stack jobs where credentials exist._")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--head", type=Path, required=True)
    parser.add_argument("--base", type=Path, required=True)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    text = comment(args.head, args.base)
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
