"""`fleet plan --validate`: the provider's verdict as a part of the plan document, and as lines for the table view."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from rich.console import Console

from components.plan.model import ClusterPlan
from fleet.preview import Preview
from fleet.validate.check import check
from fleet.validate.toolchain import ToolchainMissing


def validation(preview: Preview, plan: ClusterPlan) -> dict[str, Any]:
    """The `validation` entry of `fleet plan --json`; ToolchainMissing when it cannot run here."""
    if plan.cloud != "aws":
        raise ToolchainMissing(f"--validate runs terraform-provider-aws on AWS stacks; {preview.stack} is on "
                               f"{plan.cloud} (its provider rules are checked by the test suite)")
    report = check(preview.resources, plan.region)
    return {"provider": f"hashicorp/aws {report.provider_version}", "resources": report.resources,
            "planned": report.planned, "errors": len(report.errors),
            "findings": [asdict(finding) for finding in report.findings],
            "notChecked": [asdict(skipped) for skipped in report.skipped]}


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
