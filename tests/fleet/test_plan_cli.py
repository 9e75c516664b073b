"""`fleet plan` as users run it: exit codes, JSON shape, no traceback, schema kept current."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fleet.cli import main
from fleet.schema_command import SCHEMA_PATH, schema_text

ROOT = Path(__file__).resolve().parents[2]


def test_json_shape_and_exit_code(capsys):
    assert main(["plan", "--stack", "aws-p5", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert set(document) == {"stack", "cloud", "resources", "outputs", "cost", "capacity", "launchFallback",
                             "pipeline", "warnings", "violations"}
    assert document["warnings"] == []
    assert document["pipeline"] == {"runsIn": None, "runner": ["ubuntu-latest"], "storeEndpoint": None, "needs": None}
    (place,) = document["capacity"]
    assert place["chosen"] and place["candidate"] == "p5.48xlarge in us-east-1a", "no candidates: its own place"
    assert document["stack"] == "aws-p5" and document["cloud"] == "aws"
    resource = next(r for r in document["resources"] if r["type"] == "aws:ec2/launchTemplate:LaunchTemplate")
    assert set(resource) == {"type", "name", "parent", "inputs", "options"}
    assert resource["parent"] == "aws-p5-compute" and "metadataOptions" in resource["inputs"]
    assert resource["options"]["dependsOn"]
    assert document["cost"]["hourly"] > 0 and document["violations"] == []


def test_a_mainland_alibaba_stack_says_its_pipeline_runs_in_the_region(capsys):
    """The deploy, heal and drift workflows read this to pick the stack's runner (docs/gitops.md)."""
    assert main(["plan", "--stack", "ali-erdma", "--json"]) == 0
    pipeline = json.loads(capsys.readouterr().out)["pipeline"]
    assert pipeline["runsIn"] == "cn-wulanchabu" and pipeline["runner"] == ["self-hosted", "gpufleet-cn-wulanchabu"]
    assert pipeline["storeEndpoint"] == "https://s3.oss-cn-wulanchabu-internal.aliyuncs.com"
    assert main(["plan", "--stack", "ali-erdma"]) == 0
    assert "pipeline: runs on self-hosted, gpufleet-cn-wulanchabu" in capsys.readouterr().out


def _notes(capsys, stack_file, prefix: str = "monitoring needs network.registryMirror") -> list[str]:
    """The preview's warnings that start with `prefix` (a mainland stack also warns about its code bundle and the
    other mirrors)."""
    assert main(["plan", "--stack-file", str(stack_file), "--json"]) == 0
    return [w for w in json.loads(capsys.readouterr().out)["warnings"] if w.startswith(prefix)]


def test_plan_says_monitoring_needs_a_registry_mirror_where_the_cloud_has_none(capsys, write_stack):
    """Alibaba's Docker Hub accelerator is per account: a mainland stack without network.registryMirror is told to
    set one; one with it, one outside the mainland and a Tencent stack (its in-VPC mirror) are not."""
    (note,) = _notes(capsys, ROOT / "stacks/Pulumi.ali-spot.yaml")
    assert note.startswith("monitoring needs network.registryMirror in cn-hangzhou: Alibaba Cloud")
    assert "https://<id>.mirror.aliyuncs.com" in note
    ali = {"cloud": "alicloud", "zone": "cn-hangzhou-h", "instanceType": "ecs.gn7i-c32g1.8xlarge", "nodes": 2}
    mirrored = ali | {"network": {"registryMirror": "https://abc123.mirror.aliyuncs.com"}}
    assert _notes(capsys, write_stack(mirrored, region=None, extra={"alicloud:region": "cn-hangzhou"})) == []
    abroad = ali | {"zone": "ap-southeast-1a"}
    assert _notes(capsys, write_stack(abroad, region=None, extra={"alicloud:region": "ap-southeast-1"}), "") == []
    assert _notes(capsys, ROOT / "stacks/Pulumi.tencent-spot.yaml") == []


@pytest.mark.parametrize("stack", ["ali-spot", "tencent-spot"])
def test_plan_names_each_thing_a_mainland_stack_fetches_that_no_mirror_serves(capsys, write_stack, stack):
    """nvcr.io and NVIDIA's CUDA repository have no cloud mirror (docs/cloud-facts.md#package-mirrors): a mainland
    stack is told which setting names one; pip and apt come from the cloud's mirror, so nothing is said of them. A
    stack that names both mirrors is told neither."""
    stack_file = ROOT / f"stacks/Pulumi.{stack}.yaml"
    (nvcr,) = _notes(capsys, stack_file, "monitoring needs network.nvcrMirror")
    assert "nvcr.io" in nvcr
    (cuda,) = _notes(capsys, stack_file, "boot needs network.cudaMirror")
    assert "developer.download.nvidia.com" in cuda
    assert _notes(capsys, stack_file, "boot needs network.pipMirror") == []
    assert _notes(capsys, stack_file, "boot needs network.aptMirror") == []
    config = yaml.safe_load(stack_file.read_text())["config"]
    cluster = config.pop("gpufleet:cluster")
    cluster["network"] = {**cluster.get("network", {}), "nvcrMirror": "registry.corp.example/nvcr",
                          "cudaMirror": "http://mirror.corp.example/nvidia-cuda"}
    named = write_stack(cluster, region=None, extra=config)
    assert _notes(capsys, named, "monitoring needs network.nvcrMirror") == []
    assert _notes(capsys, named, "boot needs") == []


def test_the_table_prints_the_monitoring_warning(capsys):
    assert main(["plan", "--stack", "ali-spot"]) == 0
    assert "warning monitoring needs network.registryMirror" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("path", sorted((ROOT / "stacks").glob("Pulumi.*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_stack_plans_clean(path, capsys):
    assert main(["plan", "--stack-file", str(path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["violations"] == [] and document["stack"] == path.stem.removeprefix("Pulumi.")


def test_table_lists_components_and_cost(capsys):
    assert main(["plan", "--stack", "aws-g4dn-dev"]) == 0
    out = capsys.readouterr().out
    assert "aws:autoscaling/group" in out and "Compute" in out and "/h for 2 nodes" in out


def test_a_mainland_alibaba_stack_says_what_the_account_needs(capsys):
    """The program's warning, as `pulumi preview` shows it: where the code bundle is written and what that needs
    (docs/cloud-facts.md#alibaba-oss-public-endpoint)."""
    assert main(["plan", "--stack", "ali-spot"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "warning the code bundle is written through OSS's internal endpoint oss-cn-hangzhou-internal" in out
    assert ("run `pulumi up` on an ECS instance in cn-hangzhou, set storage.endpoint: public if the account "
            "activated OSS before 2025-03-20, or set storage.bundleDomain") in out


def test_invalid_stack_exits_2_with_the_field_and_no_traceback(tmp_path):
    stack = tmp_path / "Pulumi.bad.yaml"
    stack.write_text("config:\n  aws:region: us-east-1\n  gpufleet:cluster:\n    cloud: aws\n"
                     "    zone: us-east-1a\n    instanceType: p5.48xlarge\n    nodes: 2\n"
                     "    market: {spotPercent: 120}\n")
    result = subprocess.run([sys.executable, "-m", "fleet", "plan", "--stack-file", str(stack)], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "gpufleet:cluster.market.spotPercent" in result.stderr and "Traceback" not in result.stderr
    assert str(stack) in result.stderr


def test_missing_stack_exits_2(capsys):
    assert main(["plan", "--stack", "does-not-exist"]) == 2
    assert "Pulumi.does-not-exist.yaml does not exist" in capsys.readouterr().err


def test_a_directory_given_as_the_stack_file_is_named_as_such(capsys, tmp_path):
    assert main(["plan", "--stack-file", str(tmp_path)]) == 2
    assert f"{tmp_path} is a directory, not a stack file" in capsys.readouterr().err


def test_program_raises_a_run_error_for_pulumi_up():
    """Under `pulumi up` the engine prints a RunError's message without a traceback."""
    import pulumi

    from components import program
    from fleet.preview import _Mocks

    pulumi.runtime.set_mocks(_Mocks(), project="gpufleet", stack="bad", preview=True)
    pulumi.runtime.set_all_config({"gpufleet:cluster": json.dumps({"cloud": "aws", "zone": "us-east-1a",
                                                                   "instanceType": "p9.huge", "nodes": 2}),
                                   "aws:region": "us-east-1"})
    with pytest.raises(pulumi.RunError) as caught:
        program.main()
    assert "gpufleet:cluster.instanceType" in str(caught.value) and "p9.huge" in str(caught.value)


def test_schema_is_current():
    assert SCHEMA_PATH.read_text() == schema_text(), "run `fleet schema > schema/cluster.schema.json`"
    schema = json.loads(schema_text())
    assert {"instanceType", "nodes", "market", "network"} <= set(schema["properties"])
