"""Offline validation of a preview's AWS resources by terraform-provider-aws itself (the code pulumi-aws bridges):
AWS's `CloudProfile.validator`, which `fleet plan --validate` runs."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from components.aws.validate.check import check


def validation(resources: list[dict[str, Any]], region: str) -> dict[str, Any]:
    """The `validation` entry of `fleet plan --json`; ToolchainMissing without Terraform or the provider."""
    report = check(resources, region)
    return {"provider": f"hashicorp/aws {report.provider_version}", "resources": report.resources,
            "planned": report.planned, "errors": len(report.errors),
            "findings": [asdict(finding) for finding in report.findings],
            "notChecked": [asdict(skipped) for skipped in report.skipped]}
