"""The AWS bake stack (`fleet image build`'s program in phase `image`) through terraform-provider-aws: the bake's
one-node cluster and the AMI made from its head convert through the provider's schema and pass `terraform validate`
and `terraform plan`, like the cluster stacks."""

from __future__ import annotations

from components.aws.validate.check import check
from components.bake_program import IMAGE_PHASE, bake
from fleet.preview import run_program
from plan.paths import PROJECT_ROOT
from spec.stackfile import load_stack_file


def test_the_aws_bake_stack_passes_the_provider(toolchain):
    stack = load_stack_file(PROJECT_ROOT / "stacks/Pulumi.aws-p5.yaml")
    preview = run_program(stack, program=lambda: bake(IMAGE_PHASE))
    report = check(preview.resources, preview.plan.region, toolchain)
    (ami,) = [r["name"] for r in preview.resources if r["type"] == "aws:ec2/amiFromInstance:AmiFromInstance"]
    assert not [s for s in report.skipped if ami in str(s)], "the AMI itself went through the provider"
    assert not report.errors, [str(e) for e in report.errors]
    assert report.planned == report.resources
