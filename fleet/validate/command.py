"""`fleet plan --validate`: the provider's verdict as a part of the plan document, and as lines for the table view."""

from __future__ import annotations

import importlib
from typing import Any

from rich.console import Console

from clouds import CLOUDS, profile
from fleet.preview import Preview
from plan.model import ClusterPlan
from spec.errors import ToolchainMissing


def validation(preview: Preview, plan: ClusterPlan) -> dict[str, Any]:
    """The `validation` entry of `fleet plan --json`, from the cloud's validator; ToolchainMissing when the cloud has
    none, or its tools are not installed here."""
    validator = profile(plan.cloud).validator
    if not validator:
        have = ", ".join(cloud.title for cloud in CLOUDS.values() if cloud.validator)
        raise ToolchainMissing(f"--validate runs the provider's own checks offline on {have} stacks; {preview.stack} "
                               f"is on {profile(plan.cloud).title} (its provider rules are checked by the test suite)")
    return importlib.import_module(validator).validation(preview.resources, plan.region)


def print_validation(console: Console, document: dict[str, Any]) -> None:
    findings = document["findings"]
    verdict = "[red]rejected[/red]" if document["errors"] else "[green]accepted[/green]"
    console.print(f"{document['provider']}: {verdict} ({document['resources']} resources validated, "
                  f"{document['planned']} planned)")
    for finding in findings:
        where = ".".join(part for part in (finding["resource"], finding["field"]) if part)
        console.print(f"  {finding['stage']} {finding['severity']}: {where}: {finding['summary']} {finding['detail']}",
                      markup=False)
    for skipped in document["notChecked"]:
        where = ".".join(part for part in (skipped["resource"], skipped["field"]) if part)
        console.print(f"  not checked: {where}: {skipped['reason']}", markup=False)
