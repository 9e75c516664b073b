"""Issue 30's edges, one test per category, each through the path `fleet plan` takes (stack file -> loader -> spec ->
rules -> plan -> program under mocks): control characters, line breaks, YAML 1.1 numbers, merge keys, config keys,
job values as the job reads them, the clouds' caps, checkpoints on spot, and the cluster's identity and bucket."""

from __future__ import annotations

import json

import pytest
import yaml
from spec_cases import FIVE_LINES, REGION_KEYS, only, plan_of, problems, write

from fleet.cli import main
from fleet.preview import run_program
from spec.stackfile import load_stack_file

LOCAL = "config:\n  gpufleet:cluster:\n    cloud: local\n    instanceType: cpu\n    nodes: 2\n"


def cli(tmp_path, capsys, text: str, name: str = "edge") -> tuple[int, str]:
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(text)
    capsys.readouterr()
    code = main(["plan", "--stack-file", str(path), "--json"])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("char, where", [
    ("\x0c", "# a page\x0cbreak in a comment\n"),
    ("\x1b", "    name: \x1b[31mred\n"),
    ("\x7f", "    zone: local\x7f\n"),
    ("\x85", "# NEL\x85\n"),
])
def test_a_control_character_anywhere_is_refused_with_line_and_column(tmp_path, capsys, char, where):
    code, err = cli(tmp_path, capsys, LOCAL + where)
    line = LOCAL.count("\n") + 1
    assert code == 2 and "Traceback" not in err
    assert f":line {line}, column {where.index(char) + 1}: holds the control character" in err


def test_a_list_for_the_cloud_is_named(tmp_path, capsys):
    code, err = cli(tmp_path, capsys, LOCAL.replace("cloud: local", "cloud: [aws]"))
    assert code == 2 and "gpufleet:cluster.cloud: got ['aws']" in err


@pytest.mark.parametrize("field, value", [
    ("name", "|\n      abc\n"), ("market", "{reservationId: \"cr-0123456789abcdef0\\n\"}"),
    ("network", "{registryMirror: \"https://m.example.com\\n\"}"), ("tags", "{team: \"ml\\n\"}"),
    ("job", "{data: \"/data/a\\x1bb\"}"), ("job", "{sequenceLog: \"log\\x7f\"}"),
])
def test_a_line_break_or_control_character_in_any_value_is_refused(tmp_path, capsys, field, value):
    code, err = cli(tmp_path, capsys, LOCAL + f"    {field}: {value}\n")
    assert code == 2 and f"gpufleet:cluster.{field}" in err
    assert "holds a line break" in err or "holds the control character" in err


@pytest.mark.parametrize("field, written, read", [
    ("nodes", "010", "8"), ("network", "{rendezvousPort: 030000}", "12288"), ("storage", "{rootVolumeGb: 0400}", "256"),
    ("nodes", "0b11", "3"), ("nodes", "1_0", "10"), ("nodes", "1:30", "90"),
])
def test_a_number_yaml_1_1_reads_otherwise_is_refused(tmp_path, capsys, field, written, read):
    assert str(yaml.safe_load(f"a: {written}")["a"]).endswith(read) or field != "nodes"  # what YAML 1.1 made of it
    code, err = cli(tmp_path, capsys, LOCAL.replace("    nodes: 2\n", "") + f"    {field}: {written}\n"
                    + ("    nodes: 2\n" if field != "nodes" else ""))
    assert code == 2 and f"gpufleet:cluster.{field}" in err and "YAML 1.1 reads otherwise" in err


def test_two_merge_keys_in_one_map_are_refused(tmp_path, capsys):
    text = ("config:\n  shared:office: &office {sshCidrs: [203.0.113.0/24]}\n"
            "  shared:open: &open {sshCidrs: [0.0.0.0/0]}\n" + LOCAL.removeprefix("config:\n")
            + "    network:\n      <<: *office\n      <<: *open\n")
    code, err = cli(tmp_path, capsys, text)
    assert code == 2 and "gpufleet:cluster.network.<<: merges more than once" in err


@pytest.mark.parametrize("key, value, said", [
    ("gpufleet:cluster2", "{cloud: aws}", "is in gpufleet's namespace"),
    ("gpufleet:notes", "hello", "is in gpufleet's namespace"),
    ("cluster", "{cloud: aws}", "has no namespace"),
    ("aws:secretKey", "abc", "holds a credential in plain text"),
    ("alicloud:secretKey", "abc", "holds a credential in plain text"),
    ("tencentcloud:secretKey", "abc", "holds a credential in plain text"),
    ("tencentcloud:secretId", "abc", "holds a credential in plain text"),
    ("aws:insecure", "true", "turns off TLS"),
    ("aws:endpoints", "[{s3: 'http://evil'}]", "points the aws provider at other endpoints"),
    ("tencentcloud:protocol", "HTTP", "without TLS"),
])
def test_config_keys_nothing_reads_or_that_publish_a_secret_are_refused(tmp_path, capsys, key, value, said):
    code, err = cli(tmp_path, capsys, LOCAL + f"  {key}: {value}\n")
    assert code == 2 and f"  - {key}: " in err and said in err


def test_an_encrypted_credential_and_a_plain_flag_pass(tmp_path, capsys):
    code, _ = cli(tmp_path, capsys, LOCAL + "  aws:secretKey: {secure: v1:AAAA}\n  aws:insecure: false\n")
    assert code == 0


def test_job_values_reach_the_job_as_written(tmp_path):
    spec, plan = plan_of(tmp_path, "local", {"job": {"data": "/data/shards", "lr": 0.0003}})
    assert "--data=/data/shards" in plan.head.command and "--lr=0.0003" in plan.head.command
    problem = only(tmp_path, "local", {"job": {"data": None}})
    assert problem.path == "gpufleet:cluster.job.data"


def test_a_root_volume_past_the_clouds_largest_system_disk_is_refused(tmp_path):
    problem = only(tmp_path, "alicloud", {"storage": {"rootVolumeGb": 4096}})
    assert problem.path == "gpufleet:cluster.storage.rootVolumeGb" and "2048 GiB system disk" in problem.message
    plan_of(tmp_path, "alicloud", {"storage": {"rootVolumeGb": 2048}})


@pytest.mark.parametrize("cloud, ranges, most", [("alicloud", 197, 196), ("tencentcloud", 100, 99)])
def test_ssh_ranges_past_the_clouds_rules_per_group_are_refused(tmp_path, cloud, ranges, most):
    cidrs = [f"198.{i // 256}.{i % 256}.0/24" for i in range(ranges)]
    problem = only(tmp_path, cloud, {"network": {"sshCidrs": cidrs}})
    assert problem.path == "gpufleet:cluster.network.sshCidrs" and f"list at most {most} ranges" in problem.fix
    plan_of(tmp_path, cloud, {"network": {"sshCidrs": cidrs[:most]}})


def test_a_spot_stack_that_never_checkpoints_is_refused(tmp_path):
    spot = {"nodes": {"min": 2, "desired": 2, "max": 3}, "market": {"spotPercent": 100}}
    never = {**spot, "job": {"checkpointEvery": 0, "checkpointAtEnd": False}}
    found = problems(tmp_path, "alicloud", never)
    assert [p.path for p in found] == ["gpufleet:cluster.job.checkpointEvery"]
    plan_of(tmp_path, "alicloud", {**spot, "job": {"checkpointEvery": 0, "checkpointAtEnd": True}})
    plan_of(tmp_path, "alicloud", {"job": {"checkpointEvery": 0, "checkpointAtEnd": False}})


def _preview(tmp_path, cloud: str, stack: str, changes: dict | None = None) -> tuple[object, list[dict]]:
    directory = tmp_path / stack
    directory.mkdir()
    preview = run_program(load_stack_file(write(directory, cloud, {"name": "shared", **(changes or {})},
                                                 stack=stack)))
    return preview.plan, preview.resources


ROLE_TYPES = {"aws": ("aws:iam/role:Role", None), "alicloud": ("alicloud:ram/role:Role", "roleName"),
              "tencentcloud": ("tencentcloud:Cam/role:Role", "name")}


@pytest.mark.parametrize("cloud", ["aws", "alicloud", "tencentcloud"])
def test_two_stacks_with_the_same_name_share_no_bucket_tag_scope_or_role(tmp_path, cloud):
    """Side by side, `name: shared` in two stacks: each its own bucket, its own gpufleet:cluster tag value (which the
    nodes' permissions are conditioned on), and its own role."""
    # Tencent's COS names carry the account: each stack names its own (the default would name both after the APPID).
    found = [_preview(tmp_path, cloud, stack, {"storage": {"checkpointBucket": f"gf-{stack}-1250000000"}}
                      if cloud == "tencentcloud" else None) for stack in ("team-a", "team-b")]
    (plan_a, resources_a), (plan_b, resources_b) = found
    assert plan_a.name == plan_b.name == "shared"
    assert plan_a.identity != plan_b.identity
    assert plan_a.storage.bucket != plan_b.storage.bucket
    assert plan_a.tag_map["gpufleet:cluster"] != plan_b.tag_map["gpufleet:cluster"]
    role_type, name_key = ROLE_TYPES[cloud]
    roles = [[r for r in resources if r["type"] == role_type] for resources in (resources_a, resources_b)]
    assert all(len(found) == 1 for found in roles)
    if name_key:  # a physical name the stack sets (AWS names the role itself, uniquely)
        assert roles[0][0]["inputs"][name_key] != roles[1][0]["inputs"][name_key]
    for plan, resources in found:
        policy = json.dumps([r["inputs"] for r in resources if "olicy" in r["type"]])
        assert plan.identity in policy and plan.storage.bucket in policy
        other = plan_b if plan is plan_a else plan_a
        assert other.identity not in policy and other.storage.bucket not in policy


@pytest.mark.parametrize("cloud", ["aws", "alicloud", "tencentcloud"])
def test_the_grant_waits_for_the_bucket_and_an_existing_bucket_is_only_read(tmp_path, cloud):
    region, _ = FIVE_LINES[cloud]
    assert REGION_KEYS[cloud]
    made_plan, made = _preview(tmp_path, cloud, "made")
    bucket_types = {r["type"] for r in made if r["name"].endswith("-checkpoints")}
    assert len(bucket_types) == 1
    policies = [r for r in made if "olicy" in r["type"] and made_plan.storage.bucket in json.dumps(r["inputs"])]
    assert policies and all("shared-checkpoints" in r["options"].get("dependsOn", []) for r in policies), policies
    existing = "gf-existing-1250000000" if cloud == "tencentcloud" else "gf-existing-bucket"
    storage = {"storage": {"existingBucket": existing, "checkpointBucket": None}}
    plan, resources = _preview(tmp_path, cloud, "reads", storage)
    assert plan.storage.bucket == existing and plan.storage.existing
    assert not [r for r in resources if r["type"] in bucket_types]  # never created, so never deleted
    assert not [r for r in resources if "ersioning" in r["type"] or "ncryption" in r["type"]]
    assert [r for r in resources if "olicy" in r["type"] and existing in json.dumps(r["inputs"])]
