"""The nodes' role on every shipped cloud stack grants exactly the actions of the calls its nodes make (each
profile's `node_calls`, plan/permissions.py): the calls in code are the table
docs/cloud-facts.md#node-permissions documents with each cloud's source; every cloud API call the node scripts make is
among them, and every one is a call a node script makes or one the table says why it keeps; and the role each stack
renders grants each of those actions on the scope the call gives it, and nothing else. The store calls are held
against what booted nodes asked of the store in tests/boot/test_boot.py, the Alibaba and Tencent API calls against
their stand-in in tests/cloud_init/test_cloud_api.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from node_policies import grants, reader, resources_of

from clouds import profile
from fleet.stacks import resolve, spec_and_plan
from here.boot.cluster import node_settings
from plan import permissions
from plan.permissions import ANY, BUCKET, METRIC, OBJECTS, OWN_GROUPS, OWN_INSTANCES, SESSION

ROOT = Path(__file__).resolve().parents[2]
FACTS = ROOT / "docs" / "cloud-facts.md"
COLUMNS = {"aws": 3, "alicloud": 4, "tencentcloud": 5}  # the documented table's action column of each cloud
STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (ROOT / "stacks").glob("Pulumi.*.yaml")
                if not p.name.startswith("Pulumi.local"))
# How each cloud's adapter calls its API: `aws_cli ec2 create-tags ...`, `api ecs TagResources ...`.
SCRIPT_CALLS = {"aws": re.compile(r"\baws_cli (ec2|autoscaling|cloudwatch|ssm|ssmmessages) ([a-z][a-z-]+)"),
                "alicloud": re.compile(r"\bapi (ecs|ess) ([A-Z]\w+)"),
                "tencentcloud": re.compile(r"\bapi (cvm|as) ([A-Z]\w+)")}


def documented() -> dict[tuple[str, str], dict]:
    """The rows of docs/cloud-facts.md#node-permissions: (api, operation) -> what it says each cloud grants."""
    section = FACTS.read_text().split("\n### Node permissions\n", 1)[1].split("\n### ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        api, operation = cells[0].strip("`").split()
        actions = {cloud: found[1] for cloud, column in COLUMNS.items()
                   if (found := re.match(r"`([^`]+)`", cells[column]))}
        rows[(api, operation)] = {"actions": actions, "documented_only": cells[2] == "documented"}
    return rows


def test_the_calls_in_code_are_the_documented_table():
    table: dict[tuple[str, str], dict] = {}
    for cloud in COLUMNS:
        for c in profile(cloud).node_calls:
            row = table.setdefault((c.api, c.operation), {"actions": {}, "documented_only": c.documented_only})
            row["actions"][cloud] = c.action
            assert row["documented_only"] == c.documented_only, (cloud, c)
    assert table == documented()


def script_calls(cloud: str) -> set[tuple[str, str]]:
    """The cloud API calls in the node scripts and the cloud's adapter, as (api, operation)."""
    scripts = [*sorted((ROOT / "cloud-init/bin").iterdir()), ROOT / f"cloud-init/clouds/{cloud}.sh"]
    found = set()
    for script in scripts:
        for api, operation in SCRIPT_CALLS[cloud].findall(script.read_text()):
            found.add((api, operation if cloud != "aws" else "".join(w.capitalize() for w in operation.split("-"))))
    return found


@pytest.mark.parametrize("cloud", sorted(COLUMNS))
def test_the_table_holds_exactly_the_api_calls_of_the_node_scripts(cloud):
    table = {(c.api, c.operation) for c in profile(cloud).node_calls
             if c.api != permissions.STORE and not c.documented_only}
    made = script_calls(cloud)
    assert made, f"no API call found in the {cloud} scripts: the pattern no longer matches them"
    assert made == table


def _scoped(scope: str, statement: dict, plan, bucket_of) -> bool:
    """The statement grants on `scope` as the identity modules must: the plan's bucket (and only its objects for
    OBJECTS), the cluster's tag or groups, the gpufleet namespace, `*` only where no resource can be named."""
    resources = statement["resource"] if isinstance(statement["resource"], list) else [statement["resource"]]
    condition = json.dumps(statement.get("condition", {}))
    if scope in (BUCKET, OBJECTS):
        return all(bucket_of(r) == plan.storage.bucket and r.endswith("/*") == (scope == OBJECTS)
                   for r in resources)
    if scope in (ANY, SESSION):
        return resources == ["*"] and not statement.get("condition")
    if scope == METRIC:  # the cluster's own namespace
        return f'"gpufleet/{plan.identity}"' in condition
    if scope == OWN_GROUPS and plan.cloud == "alicloud":  # ESS takes no tag condition: the groups by id
        return all(r.startswith("acs:ess:") and not r.endswith("/*") for r in resources)
    assert scope in (OWN_INSTANCES, OWN_GROUPS), scope
    return plan.identity in condition and "gpufleet:cluster" in condition


@pytest.mark.parametrize("stack", STACKS)
def test_the_node_role_grants_the_actions_of_the_calls_its_nodes_make_and_nothing_else(stack):
    _, plan = spec_and_plan(resolve(stack, None))
    resources = resources_of(stack)
    granted = grants(resources)
    in_groups = node_settings(plan.worker.user_data)["GF_IN_SCALING_GROUP"] == "1"
    made = [c for c in profile(plan.cloud).node_calls
            if (in_groups or not c.grouped) and (plan.head.gpu_metric or c.scope != METRIC)]
    assert set(granted) == {c.action for c in made}
    for call in made:
        statements = granted[call.action]
        assert all(_scoped(call.scope, s, plan, reader(resources).bucket_of) for s in statements), (call, statements)
