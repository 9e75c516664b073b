"""`fleet plan --validate` as users and CI runners call it: the verdict in the document, exit 2 without Terraform."""

from __future__ import annotations

import copy
import json

import components.aws.validate as aws_validate
from components.aws.validate.check import check
from fleet.cli import main


def test_missing_terraform_is_exit_2_with_what_to_install(monkeypatch, capsys):
    monkeypatch.setenv("GPUFLEET_TERRAFORM", "/nonexistent/terraform")
    assert main(["plan", "--stack", "aws-g4dn-dev", "--validate"]) == 2
    error = capsys.readouterr().err
    assert "terraform is not installed" in error and "Traceback" not in error


def test_missing_provider_is_exit_2_naming_the_mirror(monkeypatch, capsys, tmp_path, toolchain):
    monkeypatch.setenv("GPUFLEET_TF_MIRROR", str(tmp_path))
    assert main(["plan", "--stack", "aws-g4dn-dev", "--validate"]) == 2
    error = capsys.readouterr().err
    assert "no terraform-provider-aws" in error and str(tmp_path) in error


def test_other_clouds_are_exit_2(capsys):
    assert main(["plan", "--stack", "ali-spot", "--validate"]) == 2
    assert "AWS stacks" in capsys.readouterr().err


def test_the_verdict_is_part_of_the_json_document(capsys, toolchain):
    assert main(["plan", "--stack", "aws-g4dn-dev", "--json", "--validate"]) == 0
    validation = json.loads(capsys.readouterr().out)["validation"]
    assert validation["provider"] == f"hashicorp/aws {toolchain.provider_version}"
    assert validation["errors"] == 0 and validation["planned"] == validation["resources"] > 20


def test_a_rejection_fails_the_plan_and_names_our_field(monkeypatch, capsys, toolchain):
    def with_bad_tokens(records, region):
        records = copy.deepcopy(records)
        for record in records:
            if record["type"] == "aws:ec2/launchTemplate:LaunchTemplate":
                record["inputs"]["metadataOptions"]["httpTokens"] = "never"
        return check(records, region)

    monkeypatch.setattr(aws_validate, "check", with_bad_tokens)
    assert main(["plan", "--stack", "aws-g4dn-dev", "--validate"]) == 1
    out = capsys.readouterr().out
    assert "rejected" in out and "aws-g4dn-dev-head-lt.metadataOptions.httpTokens" in out
