"""`evaluate` reports each finding as `fleet plan --json` prints it: the rule, the resource (or the place a stack rule
names), the message and the rule's level, for resource and stack rules alike."""

from __future__ import annotations

from policy.clouds import alicloud as ali_t
from policy.rules import RESOURCE_RULES, STACK_RULES, evaluate


def test_each_finding_carries_its_rules_name_place_message_and_level():
    levels = {rule.name: rule.level for rule in (*RESOURCE_RULES, *STACK_RULES)}
    spot_in_set = {"type": ali_t.INSTANCE, "name": "node", "parent": None,
                   "inputs": {"spotStrategy": "SpotAsPriceGo", "deploymentSetId": "ds-1", "httpTokens": "required",
                              "systemDiskEncrypted": True}}
    found = evaluate([spot_in_set, {"type": "gcp:compute/instance:Instance", "name": "vm", "parent": None,
                                    "inputs": {}}])
    assert {(f["policy"], f["resource"], f["level"]) for f in found} == {
        ("spot-outside-deployment-set", "node", levels["spot-outside-deployment-set"]),
        ("known-cloud", "vm", levels["known-cloud"]),
        ("spot-needs-checkpoint-bucket", "node", levels["spot-needs-checkpoint-bucket"])}
    assert {levels["spot-outside-deployment-set"], levels["known-cloud"]} == {"advisory", "mandatory"}
    assert all(set(f) == {"policy", "resource", "message", "level"} and f["message"] for f in found)
