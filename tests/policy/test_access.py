"""How a permission document is read for wildcard buckets: any case of its keys, one statement or a list, only
allowing statements, each named by its Sid or its place, and a document that is not JSON refused."""

from __future__ import annotations

import json

from policy.clouds import alicloud as ali_t
from policy.clouds import aws as aws_t
from policy.rules import evaluate

RULE = "no-wildcard-bucket-access"
FIX = " Name the cluster's own bucket (storage.checkpointBucket) instead."


def findings(document: object) -> list[str]:
    inputs = {"policyDocument": document if isinstance(document, str) else json.dumps(document)}
    resource = {"type": ali_t.RAM_POLICY, "name": "r", "parent": None, "inputs": inputs, "options": {"custom": True}}
    return [f["message"] for f in evaluate([resource]) if f["policy"] == RULE]


def test_a_statement_is_named_by_its_sid_or_its_place_and_lists_its_actions():
    wild = {"Effect": "Allow", "Action": ["oss:GetObject", "oss:PutObject"], "Resource": "acs:oss:*:*:*"}
    assert findings({"Statement": [{"Effect": "Deny", "Action": "oss:*", "Resource": "*"}, wild]}) == [
        "statement 1 grants oss:getobject, oss:putobject on acs:oss:*:*:*, every bucket that matches." + FIX]
    assert findings({"Statement": wild | {"Sid": "Read"}}) == [
        "Read grants oss:getobject, oss:putobject on acs:oss:*:*:*, every bucket that matches." + FIX]
    assert findings({"Statement": [{"Effect": "Allow", "Resource": "acs:oss:*:*:ckp?"}]}) == [
        "statement 0 grants actions on acs:oss:*:*:ckp?, every bucket that matches." + FIX]


def test_keys_and_effect_are_read_in_any_case_and_a_statement_without_an_effect_grants_nothing():
    lower = {"statement": [{"effect": "ALLOW", "action": "oss:*", "resource": ["acs:oss:*:*:*/k"]}]}
    assert findings(lower) == ["statement 0 grants oss:* on acs:oss:*:*:*/k, every bucket that matches." + FIX]
    assert findings({"Statement": [{"Action": "oss:*", "Resource": "*"}]}) == []
    assert findings({"Statement": ["not a statement"]}) == []
    assert findings(["not a document"]) == []


def test_an_empty_bucket_name_is_every_bucket():
    assert findings({"Statement": [{"Effect": "Allow", "Action": "oss:*", "Resource": "acs:oss:*:*:/k"}]}) == [
        "statement 0 grants oss:* on acs:oss:*:*:/k, every bucket that matches." + FIX]


def test_everything_is_judged_by_its_actions():
    def on_everything(*actions: str) -> list[str]:
        return findings({"Statement": [{"Effect": "Allow", "Action": list(actions), "Resource": "*"}]})

    assert on_everything("*") == ["statement 0 grants * on every resource, every bucket included." + FIX]
    assert on_everything("ecs:DescribeInstances", "oss:ListObjects") == [
        "statement 0 grants ecs:describeinstances, oss:listobjects on every resource, every bucket included." + FIX]
    assert on_everything("ecs:DescribeInstances") == []
    assert on_everything("s3:GetObject") == [], "another cloud's storage action is not this cloud's"


def test_a_named_bucket_passes():
    named = {"Statement": [{"Effect": "Allow", "Action": "oss:*",
                            "Resource": ["acs:oss:*:*:ckpt", "acs:oss:*:*:ckpt/*"]}]}
    assert findings(named) == []


def test_every_document_of_a_role_is_judged_past_one_that_cannot_be():
    wild = json.dumps({"Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::*"}]})
    grant = "statement 0 grants s3:getobject on arn:aws:s3:::*, every bucket that matches." + FIX
    for first, before in (("[unknown]", []), ("{not json", ["the policy document is not JSON, so what it grants "
                                                              "cannot be judged."])):
        role = {"type": aws_t.ROLE, "name": "r", "parent": None, "options": {"custom": True},
                "inputs": {"inlinePolicies": [{"policy": first}, {"policy": wild}]}}
        assert [f["message"] for f in evaluate([role]) if f["policy"] == RULE] == [*before, grant], first


def test_a_document_that_is_not_json_is_refused_and_an_unknown_one_waits():
    assert findings("{not json") == ["the policy document is not JSON, so what it grants cannot be judged."]
    assert findings("[unknown]") == []
    resource = {"type": aws_t.INSTANCE, "name": "r", "parent": None, "inputs": {"policy": "{not json"},
                "options": {"custom": True}}
    assert [f for f in evaluate([resource]) if f["policy"] == RULE] == [], "an instance holds no document"
