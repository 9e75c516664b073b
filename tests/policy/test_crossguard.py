"""The CrossGuard pack wraps the same rules, one policy each, and reads props the way the engine sends them."""

from __future__ import annotations

import ast
from pathlib import Path

from pulumi_policy import (
    EnforcementLevel,
    PolicyProviderResource,
    PolicyResource,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, unknown_checking_proxy

from fleet.preview import run_program
from fleet.stacks import resolve
from policy.clouds import aws as aws_t
from policy.crossguard import plain, policies, stack_resources
from policy.rules import RESOURCE_RULES, STACK_RULES

PACK_MAIN = Path(__file__).resolve().parents[2] / "policy" / "__main__.py"


def _by_name() -> dict:
    return {p.name: p for p in policies()}


def test_policies_map_one_to_one_to_the_rules():
    found = _by_name()
    assert list(found) == [r.name for r in (*RESOURCE_RULES, *STACK_RULES)]
    for rule in RESOURCE_RULES:
        assert isinstance(found[rule.name], ResourceValidationPolicy)
        assert found[rule.name].enforcement_level == EnforcementLevel(rule.level)
    for rule in STACK_RULES:
        assert isinstance(found[rule.name], StackValidationPolicy)
        assert found[rule.name].enforcement_level == EnforcementLevel(rule.level)


def test_pack_main_only_constructs_the_pack():
    tree = ast.parse(PACK_MAIN.read_text(encoding="utf-8"))
    calls = [n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    assert "PolicyPack" in calls and "policies" in calls
    assert (PACK_MAIN.parent / "PulumiPolicy.yaml").is_file()


def test_plain_reads_through_unknowns():
    props = unknown_checking_proxy({"a": {"b": [UNKNOWN_STRING_VALUE, "x"]}, "c": UNKNOWN_STRING_VALUE})
    assert plain(props) == {"a": {"b": ["[unknown]", "x"]}, "c": "[unknown]"}


def _resource_args(kind: str, props: dict) -> ResourceValidationArgs:
    return ResourceValidationArgs(kind, unknown_checking_proxy(props), "urn:x", "node", None, None, {}, {})


def test_resource_policy_reports_on_camel_case_props_and_skips_unknowns():
    policy = _by_name()["imdsv2-required"]
    reports: list[str] = []
    policy.validate(_resource_args(aws_t.LAUNCH_TEMPLATE, {"metadataOptions": {"httpTokens": "optional"}}),
                    lambda message, urn=None: reports.append(message))
    assert reports and "IMDSv2" in reports[0]
    quiet: list[str] = []
    ingress = {"ipProtocol": "-1", "referencedSecurityGroupId": UNKNOWN_STRING_VALUE, "description": "members"}
    _by_name()["no-open-ingress"].validate(_resource_args(aws_t.SG_INGRESS, ingress),
                                           lambda message, urn=None: quiet.append(message))
    assert quiet == []


def test_stack_policy_sees_every_resource():
    def resource(kind: str, name: str, props: dict) -> PolicyResource:
        return PolicyResource(kind, unknown_checking_proxy(props), f"urn:{name}", name, None, None, None, [], {})

    template = resource(aws_t.LAUNCH_TEMPLATE, "lt", {"networkInterfaces": [{"interfaceType": "efa"}]})
    ingress = resource(aws_t.SG_INGRESS, "in", {"ipProtocol": "-1", "referencedSecurityGroupId": UNKNOWN_STRING_VALUE})
    reports: list[str] = []
    _by_name()["fabric-self-both-ways"].validate(StackValidationArgs([template, ingress], {}),
                                                 lambda message, urn=None: reports.append(message))
    assert len(reports) == 1 and "egress" in reports[0]


def test_stack_resources_are_what_fleet_plan_records_of_the_same_stack():
    records = run_program(resolve("ali-spot", None)).resources
    provider = PolicyProviderResource("pulumi:providers:alicloud", unknown_checking_proxy({}), "urn:p", "default")
    by_name: dict[str, PolicyResource] = {}
    made = []
    for record in records:  # parents are registered before their children; the engine gives customs a provider
        made.append(PolicyResource(record["type"], unknown_checking_proxy(record["inputs"]), f"urn:{record['name']}",
                                   record["name"], None, provider if record["options"]["custom"] else None,
                                   by_name.get(record["parent"]), [], {}))
        by_name.setdefault(record["name"], made[-1])
    seen = stack_resources(StackValidationArgs(made, {}))
    assert seen == [{**r, "options": {"custom": r["options"]["custom"]}} for r in records]
    assert {r["options"]["custom"] for r in seen} == {True, False} and any(r["parent"] for r in seen)
