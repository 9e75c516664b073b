"""The AWS fixes of issue 20 on every shipped stack: pinned template versions, a deliberate head replacement, workers
that drain through a lifecycle hook, a GPU metric the nodes publish, the permissions the node scripts use (scoped to
the cluster: tests/clouds/test_node_permissions.py says which) and Session Manager instead of an SSH port nobody
can reach."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from stack_preview import preview_stack

from components.aws.compute import GPU_METRIC
from components.aws.iam import SESSION_MANAGER
from fleet.cli import main
from plan.lifecycle import DRAIN_HOOK, DRAIN_TIMEOUT_S, HEAD_REPLACEMENT

ROOT = Path(__file__).resolve().parents[2]
STACKS = sorted((ROOT / "stacks").glob("Pulumi.aws-*.yaml"))


@pytest.fixture(scope="module", params=STACKS, ids=lambda p: p.stem.removeprefix("Pulumi."))
def stack(request):
    spec, plan, preview = preview_stack(request.param)
    return spec, plan, preview.resources, preview.outputs


def one(resources, token):
    found = [r for r in resources if r["type"] == token]
    assert len(found) == 1, token
    return found[0]


def node_policy(resources):
    return json.loads(one(resources, "aws:iam/rolePolicy:RolePolicy")["inputs"]["policy"])


def test_head_and_workers_use_the_templates_pinned_latest_version(stack):
    _, _, resources, _ = stack
    head = one(resources, "aws:ec2/instance:Instance")["inputs"]["launchTemplate"]
    group = one(resources, "aws:autoscaling/group:Group")["inputs"]
    spec = (group["mixedInstancesPolicy"]["launchTemplate"]["launchTemplateSpecification"]
            if "mixedInstancesPolicy" in group else group["launchTemplate"])
    # The mocks' templates are at version 1: a number, where "$Latest" would start no refresh.
    assert head["version"] == spec["version"] == "1"
    assert group["instanceRefresh"]["strategy"] == "Rolling"


def test_the_head_is_deleted_before_it_is_replaced_and_the_preview_says_so(stack):
    _, plan, resources, outputs = stack
    assert plan.lifecycle.head_replacement == HEAD_REPLACEMENT, "the AWS profile says its head is replaced"
    assert one(resources, "aws:ec2/instance:Instance")["options"]["deleteBeforeReplace"] is True
    assert outputs["headReplacement"] == HEAD_REPLACEMENT
    assert "deleted first" in HEAD_REPLACEMENT and "checkpoint" in HEAD_REPLACEMENT


def test_workers_drain_through_a_termination_hook_the_spot_watcher_completes(stack):
    _, plan, resources, _ = stack
    assert (plan.lifecycle.drain.hook, plan.lifecycle.drain.timeout_s) == (DRAIN_HOOK, DRAIN_TIMEOUT_S)
    group = one(resources, "aws:autoscaling/group:Group")
    hook = one(resources, "aws:autoscaling/lifecycleHook:LifecycleHook")["inputs"]
    assert hook == {"name": DRAIN_HOOK, "autoscalingGroupName": group["name"],
                    "lifecycleTransition": "autoscaling:EC2_INSTANCE_TERMINATING",
                    "heartbeatTimeout": DRAIN_TIMEOUT_S, "defaultResult": "CONTINUE"}
    # Every worker (spot or not) is told the hook and runs the watcher that completes it; the head is no group's.
    assert f"GF_DRAIN_HOOK='{DRAIN_HOOK}'" in plan.worker.user_data and "gpufleet-spot.service" in plan.worker.user_data
    assert "GF_DRAIN_HOOK=''" in plan.head.user_data


def test_gpu_scaling_uses_the_series_the_nodes_publish(stack):
    spec, plan, resources, _ = stack
    policies = [r for r in resources if r["type"] == "aws:autoscaling/policy:Policy"]
    if spec.autoscaling.gpu_util_target is None:
        assert not [s for s in node_policy(resources)["Statement"] if "cloudwatch:PutMetricData" in s["Action"]], (
            "no GPU metric to publish: no permission to publish it")
        return
    metric = policies[0]["inputs"]["targetTrackingConfiguration"]["customizedMetricSpecification"]
    assert metric["metricDimensions"] == [{"name": "Cluster", "value": plan.identity}]
    assert (metric["namespace"], metric["metricName"], metric["unit"]) == (
        f"gpufleet/{plan.identity}", GPU_METRIC["metric_name"], GPU_METRIC["unit"])
    assert metric["namespace"] == plan.head.node.gpu_metric_namespace == plan.worker.node.gpu_metric_namespace
    statement = next(s for s in node_policy(resources)["Statement"] if "cloudwatch:PutMetricData" in s["Action"])
    assert statement["Condition"] == {"StringEquals": {"cloudwatch:namespace": metric["namespace"]}}


def test_every_write_is_scoped_to_the_cluster(stack):
    _, plan, resources, _ = stack
    for statement in node_policy(resources)["Statement"]:
        writes = [a for a in statement["Action"] if not a.split(":")[1].startswith(("Describe", "List"))
                  and a not in SESSION_MANAGER]
        if not writes:
            continue
        scoped = statement["Resource"] != ["*"] or json.dumps(statement.get("Condition", {})) in (
            json.dumps({"StringEquals": {"aws:ResourceTag/gpufleet:cluster": plan.identity}}),
            json.dumps({"StringEquals": {"autoscaling:ResourceTag/gpufleet:cluster": plan.identity}}),
            json.dumps({"StringEquals": {"cloudwatch:namespace": f"gpufleet/{plan.identity}"}}))
        assert scoped, statement


def test_session_manager_is_the_way_in_and_no_port_22(stack):
    _, _, resources, _ = stack
    statement = next(s for s in node_policy(resources)["Statement"] if s["Sid"] == "SessionManager")
    assert statement["Action"] == SESSION_MANAGER
    ingress = [r["inputs"] for r in resources if r["type"].startswith("aws:vpc/securityGroupIngressRule:")]
    assert all("cidrIpv4" not in r for r in ingress), "no network outside the cluster reaches the nodes"
    # The agent dials out: HTTPS to the internet, through the NAT gateway.
    egress = [r["inputs"] for r in resources if r["type"].startswith("aws:vpc/securityGroupEgressRule:")]
    assert any(r.get("fromPort") == 443 and r.get("cidrIpv4") == "0.0.0.0/0" for r in egress)
    assert [r["type"] for r in resources].count("aws:ec2/natGateway:NatGateway") == 1


def test_ssh_cidrs_are_refused_on_aws_with_the_session_manager_way(write_stack, aws_cluster, capsys):
    path = write_stack({**aws_cluster, "network": {"sshCidrs": ["203.0.113.0/24"]}})
    assert main(["plan", "--stack-file", str(path)]) == 2
    error = capsys.readouterr().err
    assert "gpufleet:cluster.network.sshCidrs" in error and "aws ssm start-session" in error
