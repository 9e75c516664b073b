"""terraform-provider-aws itself validates and plans every shipped AWS stack, and rejects wrong inputs in our names."""

from __future__ import annotations

import copy
import json
import subprocess
import tempfile
from pathlib import Path

from components.aws.validate.check import CONFIG_FILE, check, provider_block
from components.aws.validate.convert import convert
from components.aws.validate.document import dump
from components.aws.validate.toolchain import init, required_providers, terraform


def test_every_shipped_aws_stack_is_accepted_and_planned(aws_stack, previews, toolchain):
    plan, preview = previews[aws_stack]
    report = check(preview.resources, plan.region, toolchain)
    assert report.findings == []
    assert report.skipped == [], "every field we set exists in the pinned provider"
    custom = [r for r in preview.resources if r["options"].get("custom")]
    assert report.resources == report.planned == len(custom)


def _templates(records):
    return [r for r in records if r["type"] == "aws:ec2/launchTemplate:LaunchTemplate"]


def test_wrong_interface_type_and_http_tokens_are_rejected_at_our_fields(previews, toolchain):
    plan, preview = previews["aws-p5"]
    records = copy.deepcopy(preview.resources)
    worker = next(r for r in _templates(records) if r["name"] == "aws-p5-worker-lt")
    worker["inputs"]["networkInterfaces"][3]["interfaceType"] = "efa-plus"
    worker["inputs"]["metadataOptions"]["httpTokens"] = "sometimes"
    report = check(records, plan.region, toolchain)
    assert {(f.stage, f.resource, f.field) for f in report.errors} == {
        ("validate", "aws-p5-worker-lt", "networkInterfaces[3].interfaceType"),
        ("validate", "aws-p5-worker-lt", "metadataOptions.httpTokens")}
    details = " ".join(f"{f.summary} {f.detail}" for f in report.errors)
    assert "efa-plus" in details and "sometimes" in details


def test_a_policy_document_the_provider_cannot_parse_is_rejected(previews, toolchain):
    """Our IAM documents go through the provider's own policy validator."""
    plan, preview = previews["aws-g4dn-dev"]
    records = copy.deepcopy(preview.resources)
    role = next(r for r in records if r["type"] == "aws:iam/rolePolicy:RolePolicy")
    role["inputs"]["policy"] = "{not json"
    report = check(records, plan.region, toolchain)
    assert [(f.resource, f.field) for f in report.errors] == [("aws-g4dn-dev-node-policy", "policy")]


def test_an_unknown_reference_would_hide_the_error(previews, schemas, toolchain):
    """Why ids are known stand-ins: with the subnet left as a reference the provider skips the whole interface block."""
    plan, preview = previews["aws-p5"]
    records = copy.deepcopy(preview.resources)
    for template in _templates(records):
        template["inputs"]["networkInterfaces"][0]["interfaceType"] = "efa-plus"
    conversion = convert(records, schemas, plan.region)
    templates = conversion.resources["aws_launch_template"]
    templates["aws-p5-head-lt"]["network_interfaces"][0]["subnet_id"] = "${aws_subnet.aws-p5-private.id}"
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        document = {"terraform": required_providers(toolchain), "provider": provider_block(plan.region),
                    "resource": conversion.resources}
        (workdir / CONFIG_FILE).write_text(dump(document)[0])
        init(toolchain, workdir)
        result = terraform(toolchain, workdir, "validate", "-json", "-no-color")
    rejected = {d.get("address") for d in json.loads(result.stdout)["diagnostics"] if "efa-plus" in d["summary"]}
    assert rejected == {"aws_launch_template.aws-p5-worker-lt"}


def test_terraform_is_what_the_tests_ran(toolchain):
    version = subprocess.run([toolchain.terraform, "version", "-json"], capture_output=True, text=True, check=True)
    assert json.loads(version.stdout)["terraform_version"]
    assert toolchain.provider_version.count(".") == 2
