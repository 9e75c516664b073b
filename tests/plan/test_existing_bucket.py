"""A bucket the stack does not own (`existingBucket`, which other clusters or people may use): the cluster keeps every
object under a prefix of its identity (its checkpoints, code bundle, failure records and node marks), its nodes'
grants are limited to that prefix (tests/policy/test_grants_scoped.py), spot on it passes the mandatory bucket rule;
the stack's own default bucket named as existing, and a Tencent bucket of another account, are refused."""

from __future__ import annotations

import pytest
from spec_cases import write

from fleet.cli import main
from fleet.preview import run_program
from fleet.stacks import spec_and_plan
from plan.heal import node_marks
from plan.software import failure_records
from policy.rules import evaluate
from spec.errors import SpecError
from spec.stackfile import load_stack_file

EXISTING = {"aws": "team-shared-checkpoints", "alicloud": "team-shared-checkpoints",
            "tencentcloud": "team-shared-1250000000"}
SCHEME = {"aws": "s3", "alicloud": "oss", "tencentcloud": "cos"}


def _existing(tmp_path, cloud: str, bucket: str, **changes):
    return write(tmp_path, cloud, {"storage": {"existingBucket": bucket, "checkpointBucket": None}, **changes})


@pytest.mark.parametrize("cloud", sorted(EXISTING))
def test_the_cluster_keeps_its_objects_under_its_identity_in_a_bucket_it_does_not_own(cloud, tmp_path):
    plan = spec_and_plan(load_stack_file(_existing(tmp_path, cloud, EXISTING[cloud])))[1]
    root = f"{SCHEME[cloud]}://{EXISTING[cloud]}/{plan.identity}"
    assert plan.storage.prefix == f"{plan.identity}/"
    assert plan.storage.checkpoint_uri == f"{root}/checkpoints"
    assert plan.storage.code_uri == f"{root}/{plan.storage.code_key}"
    assert plan.storage.code_key.startswith(plan.storage.prefix)
    assert failure_records(plan.storage.checkpoint_uri).startswith(f"{root}/")
    assert node_marks(plan.storage.checkpoint_uri).startswith(f"{root}/")
    own = spec_and_plan(load_stack_file(write(tmp_path, cloud)))[1]
    assert own.storage.prefix == "" and own.storage.checkpoint_uri == f"{SCHEME[cloud]}://{own.storage.bucket}/checkpoints"


@pytest.mark.parametrize("cloud", sorted(EXISTING))
def test_spot_on_an_existing_bucket_passes_the_mandatory_bucket_rule(cloud, tmp_path):
    market = {"market": {"onDemandBase": 1, "spotPercent": 100, **({"maxSpotPrice": 2.5} if cloud != "aws" else {})}}
    preview = run_program(load_stack_file(_existing(tmp_path, cloud, EXISTING[cloud], **market)))
    assert preview.plan.workers and any(group.market != "on-demand" for group in preview.plan.workers)
    assert not [v for v in evaluate(preview.resources) if v["policy"] == "spot-needs-checkpoint-bucket"]


@pytest.mark.parametrize("cloud", sorted(EXISTING))
def test_the_stacks_own_default_bucket_is_refused_as_an_existing_one(cloud, tmp_path, capsys):
    own = spec_and_plan(load_stack_file(write(tmp_path, cloud, {"storage": {"checkpointBucket": None}})))[1]
    path = _existing(tmp_path, cloud, own.storage.bucket)
    assert main(["plan", "--stack-file", str(path)]) == 2
    err = capsys.readouterr().err
    assert "storage.existingBucket" in err and "is the bucket this stack makes itself" in err


def test_a_tencent_bucket_of_another_account_is_refused(tmp_path):
    with pytest.raises(SpecError) as refused:
        spec_and_plan(load_stack_file(_existing(tmp_path, "tencentcloud", "team-shared-1259999999")))
    (problem,) = refused.value.problems
    assert problem.path.endswith("storage.existingBucket")
    assert "ends in account 1259999999" in problem.message and "1250000000" in problem.fix
