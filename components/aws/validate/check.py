"""Run `terraform validate` and `terraform plan` on a preview's AWS resources and report in our names.

The provider runs with fake credentials and every start-up call skipped (account id, credentials, metadata, region),
so nothing leaves the machine; a plan then runs each resource's own validation and CustomizeDiff on known values.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.aws.validate.convert import Conversion, Skipped, convert
from components.aws.validate.document import dump
from components.aws.validate.toolchain import (
    Toolchain,
    find_toolchain,
    init,
    required_providers,
    resource_schemas,
    terraform,
)

CONFIG_FILE = "main.tf.json"


@dataclass(frozen=True)
class Finding:
    """One diagnostic of the provider (or of the conversion), at one of our resources and input fields."""

    stage: str
    severity: str
    resource: str
    field: str
    summary: str
    detail: str

    def __str__(self) -> str:
        where = f"{self.resource}.{self.field}" if self.field else self.resource
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.stage} {self.severity}: {where or '(configuration)'}: {self.summary}{detail}"


@dataclass
class Report:
    """What the provider said about a stack, and what it could not check."""

    provider_version: str
    findings: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    resources: int = 0
    planned: int | None = None

    @property
    def errors(self) -> list[Finding]:
        return [finding for finding in self.findings if finding.severity == "error"]


def provider_block(region: str) -> dict[str, Any]:
    """Fake credentials and every start-up look-up off: the provider configures without a network."""
    return {"aws": {"region": region, "access_key": "gpufleet-offline", "secret_key": "gpufleet-offline",
                    "skip_credentials_validation": True, "skip_requesting_account_id": True,
                    "skip_metadata_api_check": True, "skip_region_validation": True}}


class _Locator:
    """Terraform address and configuration line -> our resource name and input field."""

    def __init__(self, conversion: Conversion, lines: dict[int, tuple]) -> None:
        self.conversion, self.lines = conversion, lines

    def locate(self, diagnostic: dict[str, Any]) -> tuple[str, str]:
        path = self.lines.get(diagnostic.get("range", {}).get("start", {}).get("line", 0), ())
        path = path[1:] if path[:1] == ("resource",) else ()
        resource = ""
        if len(path) >= 2:
            resource = self.conversion.names.get(f"{path[0]}.{path[1]}", "")
        elif diagnostic.get("address"):
            resource = self.conversion.names.get(diagnostic["address"].split("[")[0], diagnostic["address"])
        for end in range(len(path), 2, -1):
            if path[:end] in self.conversion.paths:
                return resource, self.conversion.paths[path[:end]]
        return resource, ""

    def finding(self, stage: str, diagnostic: dict[str, Any]) -> Finding:
        resource, where = self.locate(diagnostic)
        return Finding(stage, diagnostic.get("severity", "error"), resource, where, diagnostic.get("summary", ""),
                       " ".join(diagnostic.get("detail", "").split()))


def _messages(stdout: str) -> list[dict[str, Any]]:
    """`terraform plan -json` prints one JSON message a line."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def check(records: list[dict[str, Any]], region: str, toolchain: Toolchain | None = None,
          cache: Path | None = None) -> Report:
    """The provider's verdict on the preview's AWS resources; raises ToolchainMissing without Terraform."""
    toolchain = toolchain or find_toolchain()
    with tempfile.TemporaryDirectory(prefix="gpufleet-tf-") as tmp:
        workdir = Path(tmp)
        base = {"terraform": required_providers(toolchain), "provider": provider_block(region)}
        (workdir / CONFIG_FILE).write_text(json.dumps(base))
        init(toolchain, workdir)
        conversion = convert(records, resource_schemas(toolchain, workdir, cache), region)
        text, lines = dump({**base, "resource": conversion.resources})
        (workdir / CONFIG_FILE).write_text(text)
        report = Report(toolchain.provider_version, skipped=conversion.skipped,
                        resources=sum(len(named) for named in conversion.resources.values()))
        report.findings += [Finding("convert", "error", resource, where, "no known stand-in for this reference",
                                    f"{value} (add its resource type to components/aws/validate/standins.py)")
                            for resource, where, value in conversion.unresolved]
        locator = _Locator(conversion, lines)
        validated = terraform(toolchain, workdir, "validate", "-json", "-no-color")
        report.findings += [locator.finding("validate", d)
                            for d in json.loads(validated.stdout or "{}").get("diagnostics", [])]
        if report.errors:
            return report
        planned = terraform(toolchain, workdir, "plan", "-json", "-input=false", "-lock=false", "-refresh=false",
                            "-no-color")
        messages = _messages(planned.stdout)
        report.findings += [locator.finding("plan", m["diagnostic"]) for m in messages if m.get("type") == "diagnostic"]
        report.planned = next((m["changes"]["add"] for m in messages if m.get("type") == "change_summary"), None)
        if planned.returncode != 0 and not report.errors:
            report.findings.append(Finding("plan", "error", "", "", "terraform plan failed", planned.stderr.strip()))
        return report
